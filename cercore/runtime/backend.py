"""The backend: the kernels an engine runs on, chosen once per engine.

``Backend`` is one object that provides everything backend-specific: the evaluator
(``cercore.interface.evaluator.Evaluator``), the letters kernel
(``cercore.interface.letters.LettersKernel``, None: the numpy reference) and the trend kernel
(``cercore_fast.trends``, None: the Python runner). The engines hold it and ask it; nothing else
records which backend runs. ``"cython"`` is the compiled kernels of ``cercore_fast`` (when
built), ``"python"`` the pure-Python reference; both give identical outputs, in the same order.

``CERCORE_PURE_PYTHON=1`` forces the pure-Python backend (read once, at import).
"""

from __future__ import annotations

import os
from typing import Any

from cercore.errors import ConfigError
from cercore.interface.evaluator import Evaluator
from cercore.interface.letters import LettersKernel

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


class Backend:
    """The kernels of one backend (see the module doc). Pickles as its name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = resolve_backend(name)

    def __reduce__(self):
        return (Backend, (self.name,))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Backend) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"Backend({self.name!r})"

    @property
    def compiled(self) -> bool:
        """Whether this is the compiled backend."""
        return self.name == "cython"

    def evaluator(self, det: Any, encoder: Any) -> Evaluator:
        """A new evaluator over the determiniser ``det`` and the letters of ``encoder``."""
        if self.compiled:
            from cercore_fast.evaluator import CythonEvaluator

            return CythonEvaluator(det, encoder)
        from cercore.runtime.evaluator import PythonEvaluator

        return PythonEvaluator(det, encoder)

    @property
    def letters(self) -> LettersKernel | None:
        """The compiled letters passes (None: ``LetterEncoder``'s numpy reference)."""
        if not self.compiled:
            return None
        from cercore_fast import letters

        return letters

    @property
    def trends(self) -> Any:
        """The compiled trend kernel module (``Runner``, ``uncompiled_reason``), or None: the
        Python runner (``cercore.trends.runner``) runs trend queries."""
        if not self.compiled:
            return None
        from cercore_fast import trends

        return trends
