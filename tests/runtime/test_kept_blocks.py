"""numpy memory kept for reuse by calls on several workers (``cercore_fast/memory.pyx``,
``cercore/runtime/memory.py``): arrays made from kept blocks hold what numpy promises (zeros
from ``np.zeros`` however dirty the block, data kept by a resize), blocks freed by any thread
are reused, kept after a call until released (by the timer or at once), never released under
a running call, arrays freed after the release go back to the system, and the blocks kept
stay under their bound."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from cercore.runtime import memory

fast = pytest.importorskip("cercore_fast.memory")
pytestmark = pytest.mark.skipif(memory._memory is None, reason="the compiled backend is off")

SIZE = 300_000  # (int64s: 2.4 MB, a block of 4 MB)


@pytest.fixture(autouse=True)
def released():
    with memory._timer_lock:  # (a timer an earlier call started would wait RELEASE_AFTER)
        if memory._timer is not None:
            memory._timer.cancel()
            memory._timer = None
    memory.release_memory()
    yield
    memory.release_memory()


def handler_name() -> str:
    core = getattr(np, "_core", None) or np.core  # (numpy 1.x: np.core)
    return core.multiarray.get_handler_name()


def test_inside_numpy_allocates_from_the_kept_blocks_and_outside_as_before():
    before = handler_name()
    with memory.kept_blocks():
        assert handler_name() == "cercore_kept_blocks"
    assert handler_name() == before


def test_a_freed_block_is_reused_and_np_zeros_from_a_dirty_block_is_zeros():
    with memory.kept_blocks():
        dirty = np.full(SIZE, 7, dtype=np.int64)
        del dirty
        assert fast.kept_blocks() == (1, 4 << 20)
        clean = np.zeros(SIZE, dtype=np.int64)
        assert fast.kept_blocks() == (0, 0)  # (the block came back out)
        assert not clean.any()
        again = np.empty(SIZE // 2 + 1000, dtype=np.int64)  # (a smaller block's size)
        again[:] = 3
        assert (again == 3).all()
    del clean, again
    # (kept for the next call: both blocks, and the comparison's temporary)
    assert fast.kept_blocks()[1] >= (4 << 20) + (2 << 20)
    memory.release_memory()
    assert fast.kept_blocks() == (0, 0)


def test_a_resize_keeps_the_data_growing_and_shrinking():
    with memory.kept_blocks():
        a = np.arange(SIZE, dtype=np.int64)
        a.resize(3 * SIZE, refcheck=False)  # (a larger block: the data copied)
        assert (a[:SIZE] == np.arange(SIZE)).all() and not a[SIZE:].any()
        a.resize(10, refcheck=False)  # (a small block: malloc'd)
        assert a.tolist() == list(range(10))
        a.resize(SIZE, refcheck=False)
        assert a[:10].tolist() == list(range(10))


def test_blocks_are_kept_after_the_call_until_released_and_then_go_to_the_system():
    with memory.kept_blocks():
        kept = [np.full(SIZE, i, dtype=np.int64) for i in range(3)]
    assert [int(a[-1]) for a in kept] == [0, 1, 2]
    del kept[0]  # (freed just after the call: kept for the next one)
    assert fast.kept_blocks() == (1, 4 << 20)
    memory.release_memory()
    assert fast.kept_blocks() == (0, 0)
    del kept  # (freed after the release: to the system)
    assert fast.kept_blocks() == (0, 0)


def test_the_timer_releases_the_blocks_after_the_last_call_and_never_under_one(monkeypatch):
    monkeypatch.setattr(memory, "RELEASE_AFTER", 0.5)
    with memory.kept_blocks():
        del_me = np.ones(SIZE)
        del del_me
        with memory.kept_blocks():  # (a second thread of the call leaving: no release)
            pass
        assert not fast.release()  # (a call uses them)
        assert fast.kept_blocks() == (1, 4 << 20)
    timer = memory._timer
    with memory.kept_blocks():  # (a second call in a row: the same timer, waiting from its end)
        pass
    assert timer is not None and memory._timer is timer
    deadline = time.monotonic() + 10
    while fast.kept_blocks() != (0, 0) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fast.kept_blocks() == (0, 0)


def test_the_blocks_kept_stay_under_their_bound():
    with memory.kept_blocks():
        blocks = [np.empty(fast.MAX_KEPT_BYTES // 8 // 4, dtype=np.int64) for _ in range(8)]
        del blocks
        count, kept_bytes = fast.kept_blocks()
        assert 0 < kept_bytes <= fast.MAX_KEPT_BYTES and count < 8


def test_threads_allocating_and_freeing_at_once_keep_their_data():
    errors = []

    def work(i: int) -> None:
        with memory.kept_blocks():
            for n in range(200):
                size = 1000 + (i * 7919 + n * 104729) % SIZE
                a = np.full(size, i * 1000 + n, dtype=np.int64)
                b = np.zeros(size // 3, dtype=np.int64)
                if not ((a == i * 1000 + n).all() and not b.any()):
                    errors.append((i, n))

    with memory.kept_blocks():  # (the call: blocks kept between the threads' batches)
        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert fast.kept_blocks()[0] > 0
    assert not errors


def test_without_the_compiled_backend_nothing_changes(monkeypatch):
    monkeypatch.setattr(memory, "_memory", None)
    before = handler_name()
    with memory.kept_blocks():
        assert handler_name() == before
