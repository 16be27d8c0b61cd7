# cython: language_level=3
"""The compile-time twins of ``cercore.interface.constants``: what the kernels need as C constants
(enums the C compiler folds into the hot loops, usable in the inline functions of .pxd files) or
as inline C. Their one definition is the Python one; tests/runtime/test_shared_constants.py
checks every value here against it (and ``window_start`` against ``constants.window_start`` at
the ends of int64). Declarations only: no module is built from this file."""

from libc.stdint cimport INT64_MIN, int64_t

# tECS node kinds, and the id of no node (constants.BOTTOM, OUTPUT, UNION, NIL)
cdef enum:
    BOTTOM = 0
    OUTPUT = 1
    UNION = 2

cdef enum:
    NIL = -1

# the determiniser's "no successor" (cercore.automata.determinize.NO_STATE; a C constant, as
# the module cannot be imported while cercore.runtime picks its backend)
cdef enum:
    NO_STATE = -1


cdef inline int64_t window_start(int64_t time, int64_t epsilon) noexcept nogil:
    """``constants.window_start``: the oldest start time a run may have at ``time`` under a
    window of ``epsilon`` (>= 0, as WITHIN is), ``time - epsilon`` saturated at INT64_MIN."""
    if time < INT64_MIN + epsilon:  # time - epsilon would wrap
        return INT64_MIN
    return time - epsilon
