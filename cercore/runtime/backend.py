"""Backend choice: the Cython kernels of ``cercore_fast`` when importable, else pure Python.

``CERCORE_PURE_PYTHON=1`` forces the pure-Python backend (read once, at import).
"""

from __future__ import annotations

import os

PURE_PYTHON = bool(os.environ.get("CERCORE_PURE_PYTHON"))


def _cython_available() -> bool:
    if PURE_PYTHON:
        return False
    try:
        from cercore_fast import evaluator  # noqa: F401
    except ImportError:
        return False
    return True


CYTHON_AVAILABLE = _cython_available()
BACKEND = "cython" if CYTHON_AVAILABLE else "python"


def resolve_backend(requested: str) -> str:
    """Map ``"auto" | "python" | "cython"`` to the backend that will run (every engine:
    CEQL, multi-query and trend). ConfigError for an unknown name, or "cython" when the
    extension is not built or ``CERCORE_PURE_PYTHON`` is set."""
    from cercore.errors import ConfigError

    if requested == "auto":
        return BACKEND
    if requested == "python":
        return "python"
    if requested == "cython":
        if not CYTHON_AVAILABLE:
            reason = ("CERCORE_PURE_PYTHON is set" if PURE_PYTHON
                      else "the cercore_fast extension is not built")
            raise ConfigError(f"backend 'cython' requested but {reason}")
        return "cython"
    raise ConfigError(f"unknown backend {requested!r}; use 'auto', 'python' or 'cython'")
