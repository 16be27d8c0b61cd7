"""A trend query's T-CER runs after the first go to worker processes (``runtime/processes.py``):
the workers' rows are one engine's, the workers are kept for the next call, a worker that dies
leaves the table to one worker (a warning, the same rows), a worker's error is raised in the
caller, and the workers' protocol answers every request."""

from __future__ import annotations

import io
import os

import pytest
import support
from test_trends_slices import GROUPED, long_table
from trends_strategies import SCHEMA

from cercore.runtime import processes, slices
from cercore.trends import compile_trend


@pytest.fixture
def started(monkeypatch):
    """The (function, start, stop, last) of every call sent to a worker process."""
    calls = []
    original = processes.RunInProcess.start

    def spied(self, i, function, args):
        calls.append((function.__name__, args[6], args[7], args[9]))
        return original(self, i, function, args)

    monkeypatch.setattr(processes.RunInProcess, "start", spied)
    return calls


def one_engines(q, backend, data):
    one = q.engine(backend)
    return one.run(data, workers=1), one


@pytest.mark.parametrize("workers", [2, 3])
def test_the_runs_after_the_first_go_to_worker_processes(backend, started, workers):
    q = compile_trend(GROUPED.format("any"), SCHEMA)
    n = workers * slices.MIN_EVENTS_PER_SLICE + 5
    data = long_table(n)
    engine = q.engine(backend)
    assert "worker processes" in slices.workers_plan(engine, workers, data)[2]
    got = engine.run(data, workers=workers)
    want, one = one_engines(q, backend, data)
    bounds = slices.run_bounds(n, workers, in_processes=True)
    assert bounds[1] > n // workers  # (the caller's run is the longest)
    assert started == [("_run_on_shared", bounds[p], bounds[p + 1], p == workers - 1)
                       for p in range(1, workers)]
    assert len(want) > 1000 and got == want
    assert engine.stats == one.stats and engine.events_read == one.events_read
    # the workers are kept: the next call takes the same processes
    kept = {w.process.pid for w in processes._POOL.idle}
    assert len(kept) >= workers - 1
    assert q.engine(backend).run(data, workers=workers) == want
    assert {w.process.pid for w in processes._POOL.idle} == kept


def test_a_worker_that_dies_leaves_the_table_to_one_worker(backend, monkeypatch):
    q = compile_trend(GROUPED.format("next"), SCHEMA)
    data = long_table(2 * slices.MIN_EVENTS_PER_SLICE + 5)
    monkeypatch.setattr(slices, "_run_on_shared", support.exit_at_once)
    engine = q.engine(backend)
    with pytest.warns(RuntimeWarning, match=r"worker process ended \(exit code 3\).*one worker"):
        got = engine.run(data, workers=2)
    want, one = one_engines(q, backend, data)
    assert got == want and engine.stats == one.stats
    assert all(w.process.poll() is None for w in processes._POOL.idle)  # (the dead one dropped)
    monkeypatch.undo()
    assert q.engine(backend).run(data, workers=2) == want  # (a new worker started)


def test_without_a_python_to_start_the_table_goes_to_one_worker(backend, monkeypatch):
    q = compile_trend(GROUPED.format("any"), SCHEMA)
    data = long_table(2 * slices.MIN_EVENTS_PER_SLICE + 5)
    want, _ = one_engines(q, backend, data)
    processes.stop_workers()
    monkeypatch.setattr(processes.sys, "executable", "")
    with pytest.warns(RuntimeWarning, match="cannot start a cercore worker process"):
        assert q.engine(backend).run(data, workers=2) == want


def test_an_idle_worker_that_ended_is_replaced_and_idle_workers_can_be_stopped(backend):
    q = compile_trend(GROUPED.format("any"), SCHEMA)
    data = long_table(2 * slices.MIN_EVENTS_PER_SLICE + 5)
    want, _ = one_engines(q, backend, data)
    assert q.engine(backend).run(data, workers=2) == want
    for w in processes._POOL.idle:
        w.kill()
    assert q.engine(backend).run(data, workers=2) == want
    stopped = list(processes._POOL.idle)
    processes.stop_workers()
    assert not processes._POOL.idle and all(w.process.poll() == 0 for w in stopped)
    assert q.engine(backend).run(data, workers=2) == want


def test_a_workers_error_is_raised_in_the_caller(backend, monkeypatch):
    q = compile_trend(GROUPED.format("any"), SCHEMA)
    data = long_table(2 * slices.MIN_EVENTS_PER_SLICE + 5)
    monkeypatch.setattr(slices, "_run_on_shared", support.raise_in_worker)
    with pytest.raises(ValueError, match="fails in its worker") as raised:
        q.engine(backend).run(data, workers=2)
    assert "raised in a cercore worker process" in "".join(raised.value.__notes__)


@pytest.mark.parametrize("anonymous", [True, False])
def test_the_shared_table_reads_back_is_rewritten_in_place_and_is_freed(monkeypatch, anonymous):
    if not anonymous:
        monkeypatch.delattr(os, "memfd_create", raising=False)
    elif not hasattr(os, "memfd_create"):
        pytest.skip("no memfd_create here")
    small, large = long_table(1000), long_table(5000)
    shared = processes.SharedTable()
    assert anonymous == shared.path.startswith("/proc/")
    length = shared.write(large)
    assert processes.read_shared(shared.path, length).equals(large)
    assert shared.capacity == length
    # a smaller table next: written over the larger one, read back by its own length
    length = shared.write(small)
    assert length < shared.capacity and processes.read_shared(shared.path, length).equals(small)
    shared.close()
    assert not os.path.exists(shared.path)


def test_a_calls_shared_table_is_kept_for_the_next_unless_too_large(monkeypatch):
    processes.stop_workers()
    with processes.shared_table() as first:
        first.write(long_table(1000))
    assert processes._POOL.tables == [first]
    with processes.shared_table() as second:
        assert second is first and not processes._POOL.tables
    monkeypatch.setattr(processes, "KEPT_TABLE_BYTES", 100)
    with processes.shared_table() as third:
        assert third is first
    assert not processes._POOL.tables and not os.path.exists(first.path)
    monkeypatch.undo()
    with processes.shared_table() as fourth:
        assert fourth is not first
    processes.stop_workers()
    assert not processes._POOL.tables and not os.path.exists(fourth.path)


def test_the_runs_cover_the_table_in_order_each_of_one_event_at_least():
    for n in range(1, 60):
        for k in range(1, min(n, 9) + 1):
            for in_processes in (False, True):
                b = slices.run_bounds(n, k, in_processes)
                assert b[0] == 0 and b[-1] == n and len(b) == k + 1
                assert all(lo < hi for lo, hi in zip(b, b[1:])), (n, k, b)
    assert slices.run_bounds(100, 4) == [0, 25, 50, 75, 100]


def _echo(x):
    return x


def _unpicklable():
    return lambda: None


def test_the_worker_loop_answers_each_request_until_the_end_of_its_input():
    requests = io.BytesIO()
    for request in [(_echo, (41,)), (int, ("not a number",)), (_unpicklable, ()),
                    _Unloadable(), (_echo, (42,))]:
        processes._send(requests, request)
    requests.seek(0)
    answers = io.BytesIO()
    processes.serve(requests, answers)
    answers.seek(0)
    got = [processes._receive(answers) for _ in range(5)]
    assert got[0] == ("ok", 41)
    assert got[1][0] == "error" and isinstance(got[1][1], ValueError) and "int()" in got[1][2]
    assert got[2][0] == "error" and "does not pickle" in str(got[2][1])
    assert got[3][0] == "error" and "does not unpickle" in str(got[3][1])
    assert got[4] == ("ok", 42)
    with pytest.raises(EOFError):
        processes._receive(answers)


def _refuse():
    raise ValueError("not here")


class _Unloadable:
    def __reduce__(self):
        return _refuse, ()


def test_a_message_that_does_not_unpickle_is_an_error_and_the_next_one_reads():
    stream = io.BytesIO()
    processes._send(stream, _Unloadable())
    processes._send(stream, ("ok", 7))
    stream.seek(0)
    with pytest.raises(RuntimeError, match="does not unpickle"):
        processes._receive(stream)
    assert processes._receive(stream) == ("ok", 7)
