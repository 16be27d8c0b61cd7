"""The bulk pipeline of a sharded engine (``process_arrays`` with ``workers``): while the shards
step batch ``i`` in their threads (``ShardedEvaluator.submit``), the caller's thread decodes
batch ``i + 1`` and prepares it (``Intake.prepare``: time order, letters, window times,
partition ids); it stores it (``Intake.commit``) once batch ``i`` is finished, then starts it.
So the intake, which one evaluator runs before each batch, is off the serial path.

The same complex events, positions, order and counts as the batch at a time of
``Engine._run_arrays``: preparing reads nothing that the evaluation of batch ``i`` writes or
reads, and what it changes is what a batch at a time changes next anyway, with one exception,
handled: a partition that nothing holds once batch ``i`` is evaluated would have its key
forgotten (a key that comes back gets a new id), but batch ``i + 1`` already carries its id, so
the partitions of the prepared batch count as held (``Intake.ahead``). Ids are never part of
the output. A batch with an error (raised after its good events) ends the pipeline there, as it
ends the input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import wait
from typing import Any

from cercore.input.tabular import is_tabular
from cercore.runtime.memory import kept_blocks

__all__ = ["TABLE_BATCHES", "pipelined"]

# A table is read in batches this many times the engine's (``EventInput.batch_size``): each
# batch costs the caller's thread and the reading thread a fixed amount of Python, during
# which they hold the GIL that the shards need between their C loops (measured on 2 cores,
# docs/performance.md: 16k-event batches 1.1x one worker on a keyed query without output,
# 64k 1.5x, 128k 1.6x, 256k 1.4x -- the first batch's intake and the last one's evaluation
# are not overlapped)
TABLE_BATCHES = 4


def pipelined(engine: Any, events: Any, stream: str | None) -> list:
    """The complex events of each batch of ``events`` through ``engine`` (an ``Engine`` over
    a ``ShardedEvaluator``, no absence span), each batch's ``ShardedArrays``, the intake of
    the next batch prepared while the shards step one (see the module doc); numpy's blocks
    kept for reuse meanwhile (``runtime/memory.py``)."""
    with kept_blocks():
        return list(_pipelined(engine, events, stream))


def _pipelined(engine: Any, events: Any, stream: str | None) -> Iterator:
    intake, post, evaluator = engine.intake, engine.post, engine.evaluator
    kernel, (limit, consume) = engine.kernels.letters, engine._step[2:]
    pending: tuple[Any, Any, Callable[[], Any]] | None = None  # (batch, error, its results)
    batches = _decoded(engine.input, events, stream, evaluator)
    try:
        for batch in batches:
            args, error, latest = intake.prepare(batch, None, kernel, limit, consume)
            if pending is not None:
                intake.ahead = args.pids  # (the partitions this batch names stay known)
                done, pending = pending, None
                yield _finish(engine, done)
                intake.ahead = None
            engine.input.consumed(batch, batch.n)  # (records: the next batch is numbered so)
            intake.commit(batch, args, latest)
            pending = (batch, error, post.submit(evaluator, args,
                                                 engine.store.view(engine._bindings)))
            if error is not None:
                break
        if pending is not None:
            done, pending = pending, None
            yield _finish(engine, done)
    finally:
        intake.ahead = None
        batches.close()
        if pending is not None:  # (interrupted: the running batch is still finished)
            _finish(engine, pending)


def _decoded(source: Any, events: Any, stream: str | None, evaluator: Any) -> Iterator:
    """``source.batches(events, stream)``, each batch decoded in the evaluator's reading
    thread (``ShardedEvaluator.reader``) while the caller prepares the one before: a table's
    (Arrow's decoding runs without the GIL; records are Python), when decoding changes
    nothing the caller also changes -- raising on a bad event (skipping counts it in the
    skip log, which the time order check writes too)."""
    batches = source.batches(events, stream, source.batch_size * TABLE_BATCHES)
    if source.decoder.on_error != "raise" or not is_tabular(events):
        yield from batches
        return
    reader = evaluator.reader
    ahead = reader.submit(next, batches, None)
    try:
        while (batch := ahead.result()) is not None:
            ahead = None
            if batch.error is None:  # (a batch with an error ends the input)
                ahead = reader.submit(next, batches, None)
            yield batch
    finally:
        if ahead is not None:
            ahead.cancel() or wait([ahead])
        batches.close()


def _finish(engine: Any, pending: tuple) -> Any:
    """A started batch's complex events, once its shards are done; then the batch is
    finished as one at a time finishes it (its error raised)."""
    batch, error, results = pending
    found = results()
    engine._finish(batch, error)
    return found
