# cython: language_level=3
"""C API of the compiled complex event view: the module ``cercore_fast.output`` is
``cercore/interface/complex_event.py`` compiled by Cython in pure-Python mode, and these are the
declarations Cython applies to that file (setup.py builds it). The class body, the methods and
``make_view`` are written once, there; this file only says which attributes are C fields, which
method is a C method, and that ``make_view`` is a C function (the compiled evaluator calls it
for every complex event, without running Python code)."""

cimport cython


cdef class ComplexEvent:
    cdef readonly object start
    cdef readonly object end
    cdef readonly tuple positions
    cdef object _source
    cdef object _start_time
    cdef object _end_time
    cdef bint _times_known      # False until start/end times are read from the source
    cdef object _events
    cdef object _bindings
    cdef _load_times(self)


@cython.locals(ce=ComplexEvent)
cpdef ComplexEvent make_view(object start, object end, tuple positions, object source)
