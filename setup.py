"""Build script for the optional Cython extension ``cercore_fast``.

All metadata lives in pyproject.toml; this file only decides which extension modules to build.

Environment switches (read at build time):

* ``CERCORE_DISABLE_EXTENSION=1``: build no extension (a pure-Python install).
* ``CERCORE_REQUIRE_EXTENSION=1``: a failure to cythonize or compile is fatal (CI and wheel
  builds set it, so a broken extension is never shipped silently as a pure-Python wheel).
  With neither set, the extension is optional: if it cannot be built, cercore installs and runs
  on its pure-Python backend.
* ``CERCORE_DEBUG_BUILD=1``: keep Cython's bounds/wraparound/initialisation checks on (for
  running the test suite against the kernels; no line tracing, which only slowed the checked
  suites and fed no coverage tool); its C files are generated
  under build/cython-debug, apart from the release build's (``build_ext --force`` regenerates
  the C files of either).

Setting both DISABLE and REQUIRE is an error. Every ``cercore_fast/*.pyx`` becomes the module
``cercore_fast.<name>``, and so does every Python file of ``PURE_MODE`` (Cython's pure-Python
mode: the file runs as it is on the pure-Python backend and is compiled with the declarations of
``cercore_fast/<name>.pxd``); with none of them present nothing is compiled (even with REQUIRE).
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

# module name in cercore_fast -> the Python file compiled into it (with cercore_fast/<name>.pxd)
PURE_MODE = {
    "output": os.path.join("cercore", "interface", "complex_event.py"),
}

# Cython regenerates a C file when its sources are newer, whatever the directives: the checked
# build keeps its C files apart, so switching CERCORE_DEBUG_BUILD on or off never compiles the
# other build's C, and `build_ext --force` regenerates the C as well as recompiling it.
CYTHON_BUILD_DIR = os.path.join("build", "cython-debug") if DEBUG else None
FORCE = "--force" in sys.argv

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


def _modules() -> dict[str, str]:
    """Module name -> source file (relative to the checkout) of every module to compile."""
    modules = {}
    for src in sorted(glob.glob(os.path.join("cercore_fast", "*.pyx"), root_dir=HERE)):
        modules[src[:-len(".pyx")].replace(os.sep, ".")] = src
    for name, src in PURE_MODE.items():
        pxd = os.path.join(HERE, "cercore_fast", name + ".pxd")
        if os.path.exists(pxd) and os.path.exists(os.path.join(HERE, src)):
            modules["cercore_fast." + name] = src
            _regenerate_if_stale(src, pxd)
    return modules


def _regenerate_if_stale(src: str, pxd: str) -> None:
    """Cython looks for the .pxd of a pure-Python-mode file beside the file when it decides what
    to regenerate; ours live in cercore_fast/, so drop the generated C of ``src`` when its .pxd
    is newer (cythonize then regenerates it)."""
    c_file = os.path.join(HERE, CYTHON_BUILD_DIR or "", os.path.splitext(src)[0] + ".c")
    if os.path.exists(c_file) and os.path.getmtime(c_file) < os.path.getmtime(pxd):
        os.remove(c_file)


# Commands that only write metadata or collect sources (PEP 517's sdist and metadata hooks run
# them): cythonizing for them would spend Cython's time and write C files into the source tree
# for nothing. MANIFEST.in ships the .pyx/.pxd; no C file belongs in the sdist.
SOURCE_ONLY_COMMANDS = {"egg_info", "dist_info", "sdist", "check", "--version", "--name"}
BUILD_COMMANDS = {"build", "build_ext", "bdist", "bdist_wheel", "bdist_egg", "install",
                  "develop", "editable_wheel"}


def _source_only() -> bool:
    """True when setup.py runs only commands that need no extension (``setup.py sdist``)."""
    args = set(sys.argv[1:])
    return bool(args & SOURCE_ONLY_COMMANDS) and not args & BUILD_COMMANDS


def extensions() -> list:
    """The extension modules to build (none when disabled, or for a source-only command)."""
    if DISABLE:
        _note("CERCORE_DISABLE_EXTENSION is set; building the pure-Python package only")
        return []
    if _source_only():
        return []
    modules = _modules()
    if not modules:
        _note("no cercore_fast/*.pyx or pure-Python-mode sources; nothing to compile")
        return []
    try:
        import numpy
        from Cython.Build import cythonize
        from setuptools import Extension

        macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
        exts = [
            Extension(name, [src], include_dirs=[numpy.get_include()], define_macros=macros)
            for name, src in modules.items()
        ]
        directives = dict(DEBUG_DIRECTIVES if DEBUG else RELEASE_DIRECTIVES)
        exts = cythonize(exts, compiler_directives=directives, quiet=True,
                         build_dir=CYTHON_BUILD_DIR, force=FORCE)
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
