# cython: language_level=3
"""The comparison operators as the kernels compile them, numbered by
``cercore.predicates.COMPARISON_CODES`` (<, <=, >, >=, =, !=): one definition for the check of
predicates between events (between.pyx) and trend conditions (trends.pyx).
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
