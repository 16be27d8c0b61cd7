# cython: language_level=3
"""CEQL arithmetic as the kernels compute it, one definition for the check of predicates
between events (between.pyx) and the overflow checks of trend aggregates (trends.pyx): an
operand compiled to postfix steps (``cercore.runtime.event_predicates.compiled_operand``)
over leaf values the caller loads, computed as
the predicate layer computes it -- int64 exactly (an overflow is reported: Python's exact ints
would go on), ints divided truncating toward zero with the dividend's remainder sign, a
division by zero null, doubles one operation at a time (no fused multiply-add), an int beside a
double read as a double. Declarations and inline functions only: no module is built from this
file."""

from libc.math cimport NAN, fmod, isinf
from libc.stdint cimport INT64_MIN, int32_t, int64_t, uint8_t


cdef extern from *:
    """
    static inline int cercore_add_ovf(int64_t a, int64_t b, int64_t *r) {
        return __builtin_add_overflow(a, b, r);
    }
    static inline int cercore_sub_ovf(int64_t a, int64_t b, int64_t *r) {
        return __builtin_sub_overflow(a, b, r);
    }
    static inline int cercore_mul_ovf(int64_t a, int64_t b, int64_t *r) {
        return __builtin_mul_overflow(a, b, r);
    }
    /* C's integer division and remainder (truncated toward zero, the remainder with the
       dividend's sign, as CEQL's), whatever the build's cdivision directive */
    static inline int64_t cercore_trunc_div(int64_t a, int64_t b) { return a / b; }
    static inline int64_t cercore_trunc_mod(int64_t a, int64_t b) { return a % b; }
    """
    # ``*r = a op b``; true when the exact result does not fit int64 (``*r`` then wraps)
    bint add_overflows "cercore_add_ovf"(int64_t a, int64_t b, int64_t *r) nogil
    bint sub_overflows "cercore_sub_ovf"(int64_t a, int64_t b, int64_t *r) nogil
    bint mul_overflows "cercore_mul_ovf"(int64_t a, int64_t b, int64_t *r) nogil
    # ``a / b`` and ``a % b`` in C (``b`` not 0, not INT64_MIN / -1)
    int64_t trunc_div "cercore_trunc_div"(int64_t a, int64_t b) nogil
    int64_t trunc_mod "cercore_trunc_mod"(int64_t a, int64_t b) nogil


cdef enum:
    STEP_LEAF = 0      # push the next leaf value
    STEP_ADD = 1
    STEP_SUB = 2
    STEP_MUL = 3
    STEP_DIV = 4
    STEP_MOD = 5
    STEP_NEG = 6
    MAX_STEPS = 8      # cercore.runtime.event_predicates.MAX_STEPS (a test pins them equal)

# what ``compute`` returns
cdef enum:
    VALUE_NULL = 0
    VALUE_OK = 1
    VALUE_OVERFLOW = 2


cdef struct Step:
    int32_t op         # STEP_*
    int32_t is_double  # its value is a double (a leaf's own type; else one of its operands is)


cdef inline list load_steps(Step* steps, int32_t* n, object form):
    """``steps[:n]`` from a compiled operand (``compiled_operand``: a leaf, or ``("expr",
    steps, is_double)``); returns its leaves' forms, in the order its STEP_LEAFs push them
    (the caller loads their values)."""
    cdef int32_t j
    seq = form[1] if form[0] == "expr" else (("leaf", form),)
    if len(seq) > MAX_STEPS:  # (event_predicates.MAX_STEPS must not exceed the kernel's)
        raise ValueError(f"an operand of {len(seq)} steps: the kernel computes {MAX_STEPS}")
    leaves = []
    for j, step in enumerate(seq):
        if step[0] == "leaf":
            steps[j].op = STEP_LEAF
            steps[j].is_double = step[1][2]
            leaves.append(step[1])
        else:
            steps[j].op = {"+": STEP_ADD, "-": STEP_SUB, "*": STEP_MUL, "/": STEP_DIV,
                           "%": STEP_MOD, "neg": STEP_NEG}[step[0]]
            steps[j].is_double = step[1]
    n[0] = len(seq)
    return leaves


cdef inline int compute(const Step* steps, int32_t n, const double* leaf_d,
                        const int64_t* leaf_i, double* d, int64_t* i) noexcept nogil:
    """The value of ``steps[:n]`` (into ``d`` when the last step's is a double, else ``i``),
    the k-th STEP_LEAF pushing ``leaf_d[k]`` (a double leaf) or ``leaf_i[k]``, none null:
    VALUE_OK, VALUE_NULL (a division by zero) or VALUE_OVERFLOW."""
    cdef double ds[MAX_STEPS]
    cdef int64_t ns[MAX_STEPS]
    cdef uint8_t dbl[MAX_STEPS]
    cdef int32_t j, top = 0, k = 0, l
    cdef double x, y
    cdef int64_t m, q
    for j in range(n):
        if steps[j].op == STEP_LEAF:
            dbl[top] = steps[j].is_double
            ds[top] = leaf_d[k]
            ns[top] = leaf_i[k]
            top += 1
            k += 1
            continue
        if steps[j].op == STEP_NEG:
            if steps[j].is_double:
                ds[top - 1] = -ds[top - 1]
            elif ns[top - 1] == INT64_MIN:
                return VALUE_OVERFLOW
            else:
                ns[top - 1] = -ns[top - 1]
            continue
        top -= 1
        l = top - 1
        if steps[j].is_double:
            x = ds[l] if dbl[l] else <double>ns[l]
            y = ds[top] if dbl[top] else <double>ns[top]
            dbl[l] = 1
            if steps[j].op == STEP_ADD:
                ds[l] = x + y
            elif steps[j].op == STEP_SUB:
                ds[l] = x - y
            elif steps[j].op == STEP_MUL:
                ds[l] = x * y
            elif y == 0:
                return VALUE_NULL
            elif steps[j].op == STEP_DIV:
                ds[l] = x / y
            else:
                ds[l] = NAN if isinf(x) else fmod(x, y)
            continue
        m, q = ns[l], ns[top]
        if steps[j].op == STEP_ADD:
            if add_overflows(m, q, &ns[l]):
                return VALUE_OVERFLOW
        elif steps[j].op == STEP_SUB:
            if sub_overflows(m, q, &ns[l]):
                return VALUE_OVERFLOW
        elif steps[j].op == STEP_MUL:
            if mul_overflows(m, q, &ns[l]):
                return VALUE_OVERFLOW
        elif q == 0:
            return VALUE_NULL
        elif m == INT64_MIN and q == -1:
            return VALUE_OVERFLOW
        elif steps[j].op == STEP_DIV:
            ns[l] = trunc_div(m, q)
        else:
            ns[l] = trunc_mod(m, q)
    d[0] = ds[0]
    i[0] = ns[0]
    return VALUE_OK
