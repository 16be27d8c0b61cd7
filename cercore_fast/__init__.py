"""cercore_fast: the compiled (Cython) backend of cercore.

It holds Cython versions of the runtime kernels (tECS arena, evaluator); ``cercore`` keeps the
pure-Python reference of each. ``cercore.BACKEND`` says which one ``backend="auto"`` uses.
Empty until the kernels are added; the package then ships ``.pxd`` (C API) and ``.pyx`` files.
"""
