"""cercore_fast: the compiled (Cython) backend of cercore.

It holds Cython versions of the runtime kernels (tECS arena, evaluator, letters, trend
aggregators); ``cercore`` keeps the pure-Python reference of each. ``cercore.BACKEND`` says which
one ``backend="auto"`` uses. The package ships ``.pxd`` (C API) and ``.pyx`` files; the module
``output`` (the complex event view) has no ``.pyx``: setup.py compiles
``cercore/interface/complex_event.py`` with the declarations of ``output.pxd`` (Cython's
pure-Python mode), so that class has one source for both backends.
"""
