# cython: language_level=3
"""C API of the compiled complex event view (see output.pyx)."""


cdef class ComplexEvent:
    cdef readonly object start
    cdef readonly object end
    cdef readonly tuple positions
    cdef object _source
    cdef object _start_time
    cdef object _end_time
    cdef bint _times_known
    cdef object _events
    cdef object _bindings
    cdef _load_times(self)


cdef ComplexEvent make_view(object start, object end, tuple positions, object source)
