# cython: language_level=3
"""C API of the check of predicates between events while the evaluator enumerates
(the Cython twin of ``cercore.runtime.event_predicates.IncrementalCheck``)."""

from libc.stdint cimport int32_t, int64_t, uint8_t
from libcpp.vector cimport vector

from cercore_fast.arithmetic cimport MAX_STEPS, Step


# a term (an attribute of the event, or of the next one, bound to the check's k-th variable)
# or a number
cdef struct Leaf:
    int32_t is_term
    int32_t k        # term: the variable's index in the check (0 or 1)
    int32_t side     # term: 0 the event, 1 the next event bound to the variable
    int32_t slot     # term: the numeric attribute's slot in the typed term values
    int32_t is_double
    double dconst
    int64_t iconst


# one operand of a compiled comparison: a leaf alone (``n`` = 1), or arithmetic over leaves
# as postfix steps (cercore_fast/arithmetic.pxd), the k-th STEP_LEAF pushing ``leaves[k]``
cdef struct Operand:
    int32_t n          # steps
    int32_t is_double  # the operand's value is a double: its last step's
    Step steps[MAX_STEPS]
    Leaf leaves[MAX_STEPS]
    int32_t nleaves


cdef struct CheckSpec:
    int32_t n_vars     # 1 or 2 (a check on more variables runs in Python)
    int32_t var0
    int32_t var1
    uint8_t paired0    # the variable is read as (event, next event) pairs
    uint8_t paired1
    uint8_t compiled   # a numeric comparison the kernel evaluates; else the scalar closure
    int32_t op         # cercore.predicates.COMPARISON_CODES
    Operand left
    Operand right


cdef class BetweenKernel:
    cdef object plan     # BetweenPlan
    cdef object values   # TermValues
    cdef object check    # IncrementalCheck (its whole check, for ambiguous paths)
    cdef object error    # an exception a Python call raised, for the evaluator to raise
    cdef vector[CheckSpec] specs
    cdef vector[vector[int32_t]] var_checks  # variable id -> the checks that read it
    cdef int32_t n_vars
    # the events bound on the current path, per variable: positions (latest first) and depths
    cdef vector[vector[int64_t]] bound_pos
    cdef vector[vector[int64_t]] bound_depth
    cdef int64_t ambiguous_at  # depth of the path's first AMBIGUOUS node, or -1
    # typed term values (refreshed from TermValues before each run)
    cdef int64_t base
    cdef int64_t version  # TermValues.version the pointers were taken at
    cdef vector[const double*] dvals
    cdef vector[const int64_t*] ivals
    cdef vector[const uint8_t*] valid
    cdef vector[uint8_t] slot_double
    cdef list arrays  # keeps the arrays the pointers point into alive

    cdef int refresh(self) except -1
    cdef void cut(self, int64_t depth) noexcept nogil
    cdef int push(self, int64_t pos, int32_t label, int64_t depth) noexcept nogil
    cdef int accepts(self, int64_t start, int64_t end, vector[int64_t]& path) noexcept nogil
    cdef int _first_in(self, int32_t ci, int32_t v, int64_t mask) noexcept with gil
    cdef int _leaf(self, Leaf* o, int64_t a0, int64_t a1, int64_t b0, int64_t b1,
                   double* d, int64_t* i) noexcept nogil
    cdef int _value(self, Operand* o, int64_t a0, int64_t a1, int64_t b0, int64_t b1,
                    double* d, int64_t* i) noexcept nogil
    cdef int _holds(self, CheckSpec* s, int64_t a0, int64_t a1, int64_t b0,
                    int64_t b1) noexcept nogil
    cdef int _compiled(self, CheckSpec* s, int64_t pos, int64_t mask) noexcept nogil
    cdef int _with_old(self, CheckSpec* s, int64_t na, int64_t nb, vector[int64_t]* old,
                       bint paired, bint new_first) noexcept nogil
    cdef int _in_python(self, int32_t ci, int64_t pos, int32_t label) noexcept with gil
    cdef int _whole(self, int64_t start, int64_t end, vector[int64_t]& path) noexcept with gil
