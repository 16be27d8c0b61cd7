"""Numpy memory for a call on several workers: freed blocks kept for reuse (``cercore_fast/
memory.pyx`` says why: with several threads, glibc hands each batch's temporaries back to the
system and faults them in again), where the compiled extension is built and
``CERCORE_PURE_PYTHON`` is not set. What is computed is the same either way.

The blocks are kept from a call's start until ``RELEASE_AFTER`` seconds after the last call
ends (a timer thread then frees them; ``release_memory()`` frees them at once): calls that
follow each other reuse them, as glibc's heap serves one thread's calls again, and the arrays a
call frees as it returns (its batches' parts, once joined) are kept for the next."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

from cercore.runtime.backend import CYTHON_AVAILABLE

__all__ = ["RELEASE_AFTER", "kept_blocks", "release_memory"]

if CYTHON_AVAILABLE:
    from cercore_fast import memory as _memory
else:  # (pure Python: numpy's own allocator)
    _memory = None

RELEASE_AFTER = 5.0  # seconds after the last call on several workers

_timer_lock = threading.Lock()
_timer: threading.Timer | None = None  # (at most one: calls in a row do not start threads)
_last_end = 0.0  # time.monotonic() of the last call's end


@contextlib.contextmanager
def kept_blocks() -> Iterator[None]:
    """Inside: the arrays numpy makes in this thread come from blocks kept for reuse, and the
    blocks freed (by any thread) are kept. Each thread of a call enters on its own (a thread
    starts with numpy's allocator); the call's own thread stays inside for the whole call.
    When the last thread leaves, the blocks are released ``RELEASE_AFTER`` seconds later
    unless a call uses them again."""
    if _memory is None:
        yield
        return
    previous = _memory.use(_memory.HANDLER)
    _memory.open_cache()
    try:
        yield
    finally:
        _memory.use(previous)
        if _memory.close_cache() == 0:
            _release_later()


def release_memory() -> None:
    """Free the numpy blocks kept since the last call on several workers now (unless a call
    is using them), rather than ``RELEASE_AFTER`` seconds after it."""
    if _memory is not None:
        _memory.release()


def _release_later() -> None:
    """Release the blocks ``RELEASE_AFTER`` seconds after this call's end, unless another call
    ends later (the one timer waits on) or uses them then."""
    global _last_end
    with _timer_lock:
        _last_end = time.monotonic()
        if _timer is None:
            _arm(RELEASE_AFTER)


def _arm(delay: float) -> None:
    global _timer
    _timer = threading.Timer(delay, _on_timer)
    _timer.daemon = True  # (never keeps the process from ending)
    _timer.name = "cercore-release-memory"
    _timer.start()


def _on_timer() -> None:
    global _timer
    with _timer_lock:
        wait = _last_end + RELEASE_AFTER - time.monotonic()
        if wait > 0:  # (a call ended since this timer started)
            _arm(wait)
            return
        _timer = None
    _memory.release()  # (nothing when a call runs now: its end starts the timer again)
