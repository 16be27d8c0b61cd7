"""Numpy memory for a call on several workers: freed blocks kept for reuse while the call
runs (``cercore_fast/memory.pyx`` says why: with several threads, glibc hands each batch's
temporaries back to the system and faults them in again), where the compiled extension is
built and ``CERCORE_PURE_PYTHON`` is not set. What is computed is the same either way."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from cercore.runtime.backend import CYTHON_AVAILABLE

__all__ = ["kept_blocks"]

if CYTHON_AVAILABLE:
    from cercore_fast import memory as _memory
else:  # (pure Python: numpy's own allocator)
    _memory = None


@contextlib.contextmanager
def kept_blocks() -> Iterator[None]:
    """Inside: the arrays numpy makes in this thread come from blocks kept for reuse, and the
    blocks freed (by any thread) are kept while some thread is inside; the last one out frees
    them. Each thread of a call enters on its own (a thread starts with numpy's allocator);
    the call's own thread stays inside for the whole call, so that the blocks outlive each
    batch."""
    if _memory is None:
        yield
        return
    previous = _memory.use(_memory.HANDLER)
    _memory.open_cache()
    try:
        yield
    finally:
        _memory.use(previous)
        _memory.close_cache()
