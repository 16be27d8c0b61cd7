"""Build script for the optional Cython extension ``cercore_fast``.

All metadata lives in pyproject.toml; this file only decides which extension modules to build.

Environment switches (read at build time):

* ``CERCORE_DISABLE_EXTENSION=1``: build no extension (a pure-Python install).
* ``CERCORE_REQUIRE_EXTENSION=1``: a failure to cythonize or compile is fatal (CI and wheel
  builds set it, so a broken extension is never shipped silently as a pure-Python wheel).
  With neither set, the extension is optional: if it cannot be built, cercore installs and runs
  on its pure-Python backend.
* ``CERCORE_DEBUG_BUILD=1``: keep Cython's bounds/wraparound/initialisation checks on and emit
  line tracing (for running the test suite against the kernels).

Setting both DISABLE and REQUIRE is an error. Every ``cercore_fast/*.pyx`` becomes the module
``cercore_fast.<name>``; with no ``.pyx`` file present nothing is compiled (even with REQUIRE).
"""

from __future__ import annotations

import glob
import os
import sys

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


DISABLE = _flag("CERCORE_DISABLE_EXTENSION")
REQUIRE = _flag("CERCORE_REQUIRE_EXTENSION")
DEBUG = _flag("CERCORE_DEBUG_BUILD")

if DISABLE and REQUIRE:
    raise SystemExit(
        "cercore: CERCORE_DISABLE_EXTENSION and CERCORE_REQUIRE_EXTENSION are both set; "
        "unset one of them")

RELEASE_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "initializedcheck": False,
    "cdivision": True,
    "embedsignature": True,
}
DEBUG_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": True,
    "wraparound": True,
    "initializedcheck": True,
    "cdivision": False,
    "embedsignature": True,
}


def _note(message: str) -> None:
    print(f"cercore setup: {message}", file=sys.stderr)


def extensions() -> list:
    if DISABLE:
        _note("CERCORE_DISABLE_EXTENSION is set; building the pure-Python package only")
        return []
    sources = sorted(glob.glob(os.path.join("cercore_fast", "*.pyx"), root_dir=HERE))
    if not sources:
        _note("no cercore_fast/*.pyx sources; nothing to compile")
        return []
    try:
        import numpy
        from Cython.Build import cythonize
        from setuptools import Extension

        macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
        if DEBUG:
            macros.append(("CYTHON_TRACE_NOGIL", "1"))
        exts = [
            Extension(
                src[:-len(".pyx")].replace(os.sep, "."),
                [src],
                include_dirs=[numpy.get_include()],
                define_macros=macros,
            )
            for src in sources
        ]
        directives = dict(DEBUG_DIRECTIVES if DEBUG else RELEASE_DIRECTIVES)
        if DEBUG:
            directives["linetrace"] = True
        exts = cythonize(exts, compiler_directives=directives, quiet=True)
    except Exception as exc:  # Cython/numpy missing or a Cython compile error
        if REQUIRE:
            raise
        _note(f"cannot cythonize the extension ({exc!r}); installing the pure-Python backend")
        return []
    # cythonize() returns new Extension objects and drops ``optional``: set it afterwards.
    for e in exts:
        e.optional = not REQUIRE
    return exts


setup(ext_modules=extensions())
