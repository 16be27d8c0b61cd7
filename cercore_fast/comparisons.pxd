# cython: language_level=3
"""The comparison operators as the kernels compile them, numbered by
``cercore.predicates.COMPARISON_CODES`` (<, <=, >, >=, =, !=): one definition for the check of
predicates between events (between.pyx) and trend conditions (trends.pyx); and int64
arithmetic that reports overflow (where Python's exact ints would go on).
tests/runtime/test_event_predicates.py pins the numbering. Declarations only: no module is
built from this file."""

from libc.stdint cimport int32_t, int64_t


ctypedef fused number:
    double
    int64_t


cdef inline bint compare(int32_t op, number a, number b) noexcept nogil:
    """``a op b`` over doubles (NaN compares false, but for ``!=``) or over int64."""
    if op == 0:
        return a < b
    if op == 1:
        return a <= b
    if op == 2:
        return a > b
    if op == 3:
        return a >= b
    if op == 4:
        return a == b
    return a != b


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
    """
    # ``*r = a op b``; true when the exact result does not fit int64 (``*r`` then wraps)
    bint add_overflows "cercore_add_ovf"(int64_t a, int64_t b, int64_t *r) nogil
    bint sub_overflows "cercore_sub_ovf"(int64_t a, int64_t b, int64_t *r) nogil
    bint mul_overflows "cercore_mul_ovf"(int64_t a, int64_t b, int64_t *r) nogil
