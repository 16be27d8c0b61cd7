"""T-CER runs in worker processes, for the engine kinds whose evaluation holds the GIL.

A trend query's runner keeps its open windows in Python dicts and builds its rows as Python
objects, so its T-CER runs (``runtime/slices.py``) in threads take turns on the GIL: two
threads measured 0.92-1.14x one. Processes do not share a GIL. So the caller's thread
evaluates the first run while ``k - 1`` worker processes evaluate the others:

* the table, from the second run's prefix on, is written once as an Arrow IPC file in memory
  (``SharedTable``: an anonymous memory file on Linux, kept for the next call), which every
  worker memory-maps (no pickled rows), before the caller's thread starts its run;
* a worker receives its run's fresh engine pickled (under 1 KB: the compiled plan and
  options) and the run's bounds, its prefix searched by the caller, evaluates the run exactly
  as a thread does (``slices._evaluate_run``), and sends back what a thread returns: the
  run's output, its skip log and counts -- and, for the last run, its engine, which the
  caller goes on as;
* the workers are started once, ``python -c`` running ``serve`` (a fresh interpreter: not a
  fork of this process and its threads, and the user's ``__main__`` is not imported again),
  and kept for later calls: about 0.3 s to start and import, paid on the first call only.

A worker that dies (killed, out of memory) ends the call without an answer: the table is then
evaluated by one worker in the caller's thread (``evaluate_in_slices`` returns None), with a
``RuntimeWarning``; the pool starts a new worker next time. An exception raised in a worker
is raised in the caller, with the worker's traceback as a note.

Measured (2026-11-29, the stock trace x40, 995,480 events, a 2-core VM; docs/performance.md):
a trend query with GROUP BY on two workers 1.57-1.76x one with a warm pool (six runs); the
first call, starting the pool, 0.83-0.92 s against 0.50-0.59 s.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

__all__ = ["KEPT_TABLE_BYTES", "RunInProcess", "SharedTable", "WorkerDied", "read_shared",
           "run_elsewhere", "serve", "shared_table", "stop_workers", "workers_cpu_seconds"]

_LENGTH = struct.Struct("<Q")  # a message: its length, then its pickle

# a shared table file this large at most is kept for the next call (``shared_table``); a
# larger one is freed after its call (writing it again into new pages costs little beside
# evaluating that many events)
KEPT_TABLE_BYTES = 256 << 20


class WorkerDied(RuntimeError):
    """A worker process ended without answering (killed, out of memory, a crash)."""


def _send(stream: BinaryIO, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)))
    stream.write(data)
    stream.flush()


def _receive(stream: BinaryIO) -> Any:
    """The next message (EOFError at the end of the stream). A message read whole that does
    not unpickle raises a RuntimeError, and the stream is still at a message's start."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise EOFError
    (size,) = _LENGTH.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    try:
        return pickle.loads(data)
    except Exception as e:
        raise RuntimeError(f"a cercore worker's message does not unpickle here: {e!r}") from e


def serve(requests: BinaryIO | None = None, answers: BinaryIO | None = None) -> None:
    """A worker's loop: each request ``(function, args)`` answered with ``("ok", result)``
    or ``("error", exception, traceback text)``, until the end of ``requests`` (the
    caller's process closed its end, or ended)."""
    requests = requests or sys.stdin.buffer
    answers = answers or sys.stdout.buffer
    if requests is sys.stdin.buffer:  # (a worker process, not a test calling it in place)
        sys.stdout = sys.stderr  # (a print in the work must not corrupt the answers)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # (the caller decides, and kills)
    while True:
        try:
            function, args = _receive(requests)
            answer = ("ok", function(*args))
        except EOFError:
            return
        except BaseException as e:  # noqa: BLE001  (every error goes back to the caller)
            answer = ("error", e, traceback.format_exc())
        try:
            _send(answers, answer)
        except (pickle.PicklingError, TypeError, AttributeError) as e:
            _send(answers, ("error", RuntimeError(f"the worker's answer does not pickle: {e}"),
                            traceback.format_exc()))


class _Worker:
    """One worker process and its two pipes."""

    def __init__(self) -> None:
        if not sys.executable:
            raise OSError("sys.executable does not name this Python")
        env = dict(os.environ)
        # the caller's import path, so the worker imports the same cercore
        env["PYTHONPATH"] = os.pathsep.join(p or os.getcwd() for p in sys.path)
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from cercore.runtime.processes import serve; serve()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
            start_new_session=os.name == "posix")  # (a terminal's Ctrl-C is the caller's)
        self.owner = os.getpid()

    def start(self, function: Callable, args: tuple) -> None:
        _send(self.process.stdin, (function, args))

    def result(self) -> Any:
        try:
            answer = _receive(self.process.stdout)
        except EOFError:
            code = self.process.wait()
            raise WorkerDied(f"a cercore worker process ended (exit code {code})") from None
        if answer[0] == "ok":
            return answer[1]
        error = answer[1]
        error.add_note(f"raised in a cercore worker process:\n{answer[2]}")
        raise error

    def stop(self) -> None:
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


class _Pool:
    """Idle workers kept between calls (each call takes the workers it needs, starting new
    ones when too few are idle, and gives back those that answered)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: list[_Worker] = []
        self.tables: list[SharedTable] = []  # (kept for the next call: ``shared_table``)

    def take(self, n: int) -> list[_Worker]:
        with self.lock:
            mine = [w for w in self.idle if w.owner == os.getpid()]  # (not a forked parent's)
            taken, self.idle = mine[:n], mine[n:]
        return taken + [_Worker() for _ in range(n - len(taken))]

    def give_back(self, workers: list[_Worker]) -> None:
        with self.lock:
            self.idle += workers

    def take_table(self) -> SharedTable | None:
        with self.lock:  # (calls at once each gave one back: the others stay for later)
            mine = [t for t in self.tables if t.owner == os.getpid()]
            if not mine:
                return None
            self.tables.remove(mine[-1])
            return mine[-1]

    def give_back_table(self, table: SharedTable) -> None:
        with self.lock:
            self.tables.append(table)

    def stop(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, []
            tables, self.tables = self.tables, []
        for w in idle:
            if w.owner == os.getpid():
                w.stop()
        for t in tables:
            if t.owner == os.getpid():
                t.close()


_POOL = _Pool()
atexit.register(_POOL.stop)


def stop_workers() -> None:
    """End the idle worker processes (each holds its interpreter, imports and heap: about
    140 MB after a run of a million events) and free the kept shared table (at most
    ``KEPT_TABLE_BYTES``); the next call that needs workers starts new ones. They also end
    with this process."""
    _POOL.stop()


def workers_cpu_seconds() -> float | None:
    """CPU time the idle workers of this process's pool have used since they started
    (user + system, from ``/proc``; None where the system does not tell it): for benchmarks
    that state the CPU time of every process a call used."""
    try:
        tick = os.sysconf("SC_CLK_TCK")
        total = 0
        for w in list(_POOL.idle):
            with open(f"/proc/{w.process.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        return total / tick
    except (OSError, ValueError, AttributeError):
        return None


class RunInProcess:
    """Calls ``function(*args)`` in worker processes, one call per worker, while the caller
    works: ``start`` each, then ``results`` (in the order started)."""

    def __init__(self, n: int) -> None:
        self.workers = _POOL.take(n)

    def start(self, i: int, function: Callable, args: tuple) -> None:
        try:
            self.workers[i].start(function, args)
        except OSError:  # (an idle worker that ended meanwhile: a new one)
            self.workers[i].kill()
            self.workers[i] = _Worker()
            self.workers[i].start(function, args)

    def results(self) -> list:
        """Every worker's result; the workers go back to the pool. An error (raised, or a
        worker that died) is raised once every worker answered or ended: the others go back
        to the pool, a dead one is dropped."""
        out, error, healthy = [], None, []
        for i, w in enumerate(self.workers):
            try:
                out.append(w.result())
                healthy.append(w)
            except WorkerDied as e:
                error = error or e
            except Exception as e:  # (raised below, once the others answered)
                error = error or e
                healthy.append(w)
            except BaseException:  # (an interrupt: the workers still at work are killed)
                for busy in self.workers[i:]:
                    busy.kill()
                _POOL.give_back(healthy)
                self.workers = []
                raise
        _POOL.give_back(healthy)
        self.workers = []
        if error is not None:
            raise error
        return out

    def abandon(self) -> None:
        """The caller stops waiting (an error of its own): the workers are killed, not
        given back with an answer still to come."""
        for w in self.workers:
            w.kill()
        self.workers = []


class SharedTable:
    """An Arrow IPC file in memory that worker processes memory-map by ``path``, rewritten for
    each call (``write``). On Linux an anonymous memory file (``memfd_create``) that the
    workers open through ``/proc``: nothing is left behind when this process is killed, and a
    container's small ``/dev/shm`` does not limit it. Elsewhere a file in the temporary
    directory, removed by ``close``.

    The file is kept between calls (``shared_table``): its pages stay in memory, so writing the
    next table is a copy, not the system handing out and zeroing new pages (measured, 2 cores,
    25 MB: 1.1-1.8 ms against 8-27 ms into a new file). The copy is written by Arrow, in C++,
    not through a Python file: beside a run holding the GIL, writing through Python took
    32-55 ms."""

    def __init__(self) -> None:
        import pyarrow as pa

        self.fd: int | None = None
        self.owner = os.getpid()
        if hasattr(os, "memfd_create") and os.path.isdir(f"/proc/{os.getpid()}/fd"):
            self.fd = os.memfd_create("cercore-table", os.MFD_CLOEXEC)
            self.path = f"/proc/{os.getpid()}/fd/{self.fd}"
            os.ftruncate(self.fd, 1)
        else:
            fd, self.path = tempfile.mkstemp(prefix="cercore-", suffix=".arrow")
            os.ftruncate(fd, 1)
            os.close(fd)
        self.map = pa.memory_map(self.path, "r+")

    @property
    def capacity(self) -> int:
        """Bytes the file holds (the largest table written, kept for the next one)."""
        return self.map.size()

    def write(self, table) -> int:
        """Write ``table`` from the file's start; its length in bytes (``read_shared``)."""
        import pyarrow as pa

        counted = pa.MockOutputStream()  # (the length, without copying the data)
        with pa.ipc.new_file(counted, table.schema) as writer:
            writer.write_table(table)
        length = counted.size()
        if length > self.map.size():
            self.map.resize(length)
        self.map.seek(0)
        with pa.ipc.new_file(self.map, table.schema) as writer:
            writer.write_table(table)
        return length

    def close(self) -> None:
        """Free the file (the workers' maps keep it until they let go)."""
        self.map.close()
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        elif os.path.exists(self.path):
            os.unlink(self.path)


@contextlib.contextmanager
def shared_table() -> Iterator[SharedTable]:
    """A ``SharedTable`` for one call: the one the last call used when there is one, kept for
    the next call afterwards unless it holds more than ``KEPT_TABLE_BYTES``."""
    table = _POOL.take_table() or SharedTable()
    try:
        yield table
    finally:
        if table.capacity <= KEPT_TABLE_BYTES:
            _POOL.give_back_table(table)
        else:
            table.close()


def read_shared(path: str, length: int):
    """The table a ``SharedTable`` wrote (``length`` bytes), memory-mapped (no copy)."""
    import pyarrow as pa

    # (``read_buffer`` is a view of the map; ``read_at`` would copy the table: 11 ms for 25 MB)
    return pa.ipc.open_file(pa.memory_map(path).read_buffer(length)).read_all()


def run_elsewhere(function: Callable, calls: list[tuple], here: Callable[[], Any]
                  ) -> list | None:
    """``function(*args)`` for each argument tuple of ``calls``, each in a worker process,
    while ``here()`` runs in the caller's thread: [here's result, then theirs]. None when a
    worker died (with a ``RuntimeWarning``: the caller does the work another way), or none
    could be started (an interpreter embedded where ``sys.executable`` is no Python, a
    process limit)."""
    running = None
    try:
        running = RunInProcess(len(calls))
        for i, args in enumerate(calls):
            running.start(i, function, args)
    except OSError as e:
        if running is not None:
            running.abandon()
        warnings.warn(f"cannot start a cercore worker process ({e}): the table is evaluated "
                      "by one worker", RuntimeWarning, stacklevel=3)
        return None
    try:
        first = here()
    except BaseException:
        running.abandon()
        raise
    try:
        return [first] + running.results()
    except WorkerDied as e:
        warnings.warn(f"{e}: the table is evaluated by one worker", RuntimeWarning,
                      stacklevel=3)
        return None
