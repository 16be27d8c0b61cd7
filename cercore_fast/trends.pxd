# cython: language_level=3
"""C API of the compiled trend aggregators (trends.pyx), the twin of ``cercore.trends.reference``.

An aggregate vector is ``[count, field 1, ..., field k]`` (``reference.Vectors``): ``nslots =
1 + k`` slots, each of one ``SlotKind``. In C a slot has three cells: ``ints`` (counts, integer
sums and integer min/max, int64 with checked arithmetic), ``reals`` (double sums and min/max)
and ``has`` (a min/max slot holds a value -- 0 is the identity, the reference's None; a double
sum holds a float -- the reference's sum is the int 0 until then). Vectors are stored in
``VectorArena``s: ``capacity`` vectors one after the other, in three parallel arrays grown by
``vectors_reserve``; a ``Vector`` addresses the slots of one of them (or of a block of them).
Every C array of this module is (re)allocated by ``safe_realloc``.
"""

from libc.stdint cimport int32_t, int64_t, uint64_t

from cercore_fast.arithmetic cimport MAX_STEPS, Step


# what a slot aggregates (slot 0 of a vector is the trend count, SLOT_COUNT)
cdef enum SlotKind:
    SLOT_COUNT = 0
    SLOT_SUM_INT = 1
    SLOT_SUM_REAL = 2
    SLOT_MIN_INT = 3
    SLOT_MIN_REAL = 4
    SLOT_MAX_INT = 5
    SLOT_MAX_REAL = 6

# the event selection semantics of a plan
cdef enum Semantics:
    SEM_ANY = 0
    SEM_NEXT = 1
    SEM_CONTIGUOUS = 2

# a node of a window's arena (event-grained nodes)
cdef enum NodeState:
    DEAD = 0
    LIVE = 1
    TAKEN = 2   # NEXT: consumed by the current group; dead once the group is applied

cdef enum:
    MAX_VARS = 62   # variables are bits of a uint64_t mask


# ---- predicates on adjacent events: f(P) op g(NEXT(S)) --------------------------------------
# one side: numbers and arithmetic over one event's value attributes, as postfix steps
# (cercore_fast/arithmetic.pxd), the q-th STEP_LEAF pushing value attribute ``leaf_attr[q]``
# of the event, or (-1) the number ``leaf_d[q]`` / ``leaf_i[q]``
cdef struct Side:
    int32_t n
    Step steps[MAX_STEPS]
    int32_t nleaves
    int32_t leaf_attr[MAX_STEPS]
    double leaf_d[MAX_STEPS]
    int64_t leaf_i[MAX_STEPS]

cdef struct Clause:
    int pred_var    # P
    int succ_var    # S
    int op          # cercore.predicates.COMPARISON_CODES (cercore_fast/comparisons.pxd)
    Side pred       # f, over P's attributes
    Side succ       # g, over NEXT(S)'s


# ---- one reallocation helper (scikit-learn's safe_realloc): every C array of the module ----
ctypedef fused realloc_ptr:
    (int64_t *)
    (double *)
    (unsigned char *)
    (int *)
    (uint64_t *)
    (char *)
    (Clause *)

cdef int safe_realloc(realloc_ptr *p, size_t nelems) except -1


# ---- aggregate vectors -------------------------------------------------------------------
cdef struct Vector:
    # the slots of one vector (or of consecutive vectors): slot s is ints[s] / reals[s] / has[s]
    int64_t *ints
    double *reals
    unsigned char *has

cdef struct VectorArena:
    # ``capacity`` vectors of ``nslots`` slots; vector r starts at slot r * nslots
    int64_t *ints
    double *reals
    unsigned char *has
    Py_ssize_t nslots
    Py_ssize_t capacity

cdef int vectors_reserve(VectorArena *arena, Py_ssize_t n) except -1
cdef void vectors_free(VectorArena *arena) noexcept


cdef inline Vector vector_at(const VectorArena *arena, Py_ssize_t r) noexcept nogil:
    """Vector r of the arena (and, for a slot count beyond nslots, the vectors after it)."""
    cdef Py_ssize_t o = r * arena.nslots
    cdef Vector v
    v.ints = arena.ints + o
    v.reals = arena.reals + o
    v.has = arena.has + o
    return v


# the same code over int64 and double slots (min / max)
ctypedef fused number:
    int64_t
    double


cdef class _Group
cdef class Runner


# ---- the aggregators -----------------------------------------------------------------------
cdef class Kernel:
    """The compiled aggregators of one plan: constants, and the scratch space of one update."""
    cdef readonly object plan
    cdef object reference_cls          # the reference aggregator class (hand-over)
    cdef int semantics                 # Semantics
    cdef int nvars, nslots, start, end, nclauses, nattrs
    cdef uint64_t event_grained        # mask of the event-grained variables (T_e)
    cdef int *slot_kinds               # nslots: SlotKind of each slot
    cdef uint64_t *slot_vars           # nslots: mask of the variables each slot aggregates
    cdef int *slot_attr                # nslots: index of the value attribute it reads (-1: none)
    cdef int *preds                    # nvars x (nvars + 1): predecessors, -1 terminated,
                                       # in the reference's iteration order
    cdef Clause *clauses               # nclauses (at least one allocated)
    cdef unsigned char *attr_is_int    # nattrs: the value attribute is an INT (else DOUBLE)
    cdef readonly list attrs           # the value attributes (runner.value_attributes)
    # scratch of one update: the vectors of the group's nodes, and which nodes got one
    cdef VectorArena group_vectors
    cdef unsigned char *group_counted  # node j is in some trend (count > 0): vector j is set

    cdef int _reserve(self, Py_ssize_t nnodes) except -1
    # object mode: reference.Vectors' zero / add / extend on Python lists
    cdef list zero_objects(self)
    cdef void add_objects(self, list acc, list vec)
    cdef object extend_objects(self, list pred, int var, bint is_start, _Group g, Py_ssize_t j)


cdef class _Group:
    """The nodes (event, variable) of one timestamp group of one partition, laid out for the
    kernel: scratch space that a runner fills once per group (``_fill``)."""
    cdef Kernel k
    cdef bint theta_exact              # every compared value is exact as a double
    cdef Py_ssize_t nnodes, n_events, capacity, events_capacity
    cdef int *node_var                 # nnodes
    cdef int64_t *node_event           # nnodes: the node's event (its index in the group)
    cdef int64_t *value_ints           # nnodes x nslots: the node's aggregated values
    cdef double *value_reals
    cdef double *pred_side             # nnodes x nclauses: values of each clause's f(P)
    cdef double *succ_side             # ... and of its g(NEXT(S))
    cdef unsigned char *pred_known     # the node has that value
    cdef unsigned char *succ_known
    # the group's events, for the reference (``raw``): their variables and value attributes
    cdef uint64_t *event_vars
    cdef int64_t *event_ints           # n_events x nattrs
    cdef double *event_reals
    cdef unsigned char *event_known

    cdef int _fill(self, Runner r, const int64_t *events, Py_ssize_t n) except -1
    cdef list raw(self)


cdef class _Window:
    """The online aggregate state of one window of one partition; one subclass per semantics
    (``_AnyWindow``, ``_NextWindow``, ``_ContiguousWindow``), as the reference's classes."""
    cdef Kernel k
    cdef object reference              # the reference aggregator, once handed over
    cdef bint object_mode              # vectors are Python lists of exact numbers
    # rows: one vector per variable, PRED (accumulator), FINAL, then a backup of those
    cdef VectorArena rows
    cdef list row_objects              # object mode: rows vars..., PRED, FINAL as lists
    # node arena (event-grained nodes): nnodes used, live ones from first_live on
    cdef Py_ssize_t nnodes, capacity, first_live
    cdef VectorArena node_vectors      # int64 mode
    cdef list node_objects             # object mode
    cdef int *node_var
    cdef unsigned char *node_state     # NodeState
    cdef double *node_pred_side        # capacity x nclauses, as _Group.pred_side
    cdef unsigned char *node_pred_known
    # capacity x nattrs: the node's event's value attributes (what the reference reads of a
    # stored node when the window is handed over)
    cdef int64_t *node_ints
    cdef double *node_reals
    cdef unsigned char *node_known

    cdef int _grow(self, Py_ssize_t need) except -1
    cdef void _push(self, _Group g, Py_ssize_t j, Vector vec, object vec_object)
    cdef int _begin(self, _Group g) except -1
    cdef int _sum_into(self, list pred_object, Vector pred, Py_ssize_t x, bint is_row
                       ) except -1
    cdef int _extend_node(self, _Group g, Py_ssize_t j, list pred_object, Vector pred,
                          list group_objects) except -1
    cdef int _add_new(self, _Group g, Py_ssize_t j, Py_ssize_t row, list group_objects
                      ) except -1
    cdef list _zero_pred(self, Vector pred)
    cdef int _new_vectors(self, _Group g, bint next_match, uint64_t *vars_taken,
                          list group_objects) except -1
    cdef int _store_group(self, _Group g, list group_objects) except -1
    cdef int _restore(self, Py_ssize_t n0, Py_ssize_t first_live0) except -1
    cdef int _apply(self, _Group g) except -1
    cdef int _update(self, _Group g) except -1
    cdef void _compact(self)
    cdef object _vector(self, Vector vec)
    cdef object _row(self, Py_ssize_t r)
    cdef object _node(self, Py_ssize_t x)
    cdef object _node_attrs(self, Py_ssize_t x)
    cdef object _node_value(self, Py_ssize_t x, int a)
    cdef void _to_objects(self)
    cdef void _hand_over(self)
    cdef void _import(self, list rows, list nodes) except *


cdef class _AnyWindow(_Window):
    cdef int _update(self, _Group g) except -1


cdef class _NextWindow(_Window):
    cdef int _update(self, _Group g) except -1


cdef class _ContiguousWindow(_Window):
    cdef int _update(self, _Group g) except -1


cdef class Runner:
    """Timestamp groups, windows and window aggregators of one plan (the compiled twin of
    ``cercore.trends.runner.PythonRunner``)."""
    cdef readonly Kernel aggregators
    cdef readonly str backend
    cdef bint windowed
    cdef int64_t size, slide
    cdef dict open                     # k -> {partition id: _Window}, in increasing k
    cdef int64_t first_end             # end of the first open window (INT64_MAX: none)
    cdef int64_t last_window           # the window of the last group, and its partitions
    cdef dict last_parts               # (None: look the window up)
    cdef bint has_time                 # pending_time is set
    cdef int64_t pending_time          # time of the current timestamp group
    # the current timestamp group's events (every partition), in arrival order
    cdef Py_ssize_t npending, pending_capacity
    cdef int64_t *pending_pid
    cdef uint64_t *pending_vars
    cdef int64_t *pending_ints         # npending x nattrs: value attributes
    cdef double *pending_reals
    cdef unsigned char *pending_known
    cdef int64_t *order                # scratch: the pending events of one partition
    cdef _Group group                  # scratch: one partition's group

    cdef int _reserve_pending(self, Py_ssize_t n) except -1
    cdef int _time_moves(self, int64_t t, list closed) except -1
    cdef int _apply_pending(self) except -1
    cdef int _apply_group(self, int64_t pid, Py_ssize_t n, int64_t k0, int64_t k1) except -1
    cdef int _close_until(self, bint everything, int64_t t, list closed) except -1
