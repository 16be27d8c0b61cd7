"""The engine: input batches -> letters, window times and partition ids -> evaluator ->
complex events. One engine evaluates one compiled query over one stream.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from cercore.automata.determinize import LazyDeterminiser
from cercore.errors import EventError
from cercore.runtime.bindings import BindingSolver
from cercore.runtime.evaluator import (
    CONSUME_ANY,
    CONSUME_NONE,
    CONSUME_PARTITION,
    NO_LIMIT,
)
from cercore.runtime.events import SKIPPED, Batch, EventDecoder
from cercore.runtime.letters import NOT_READ, LetterEncoder
from cercore.runtime.output import ComplexEvent, MatchArrays
from cercore.runtime.reorder import RAW, ReorderBuffer, records_of
from cercore.runtime.store import EventStore
from cercore.schema import did_you_mean

if TYPE_CHECKING:
    from cercore.query import CompiledQuery

BATCH_SIZE = 4096
NO_PARTITION = -1


class Engine:
    """Evaluates a compiled query over a stream, incrementally.

    Create it with ``CompiledQuery.engine()``. Feed events with ``process`` (an iterable, an
    Arrow table or a pandas DataFrame) or ``push`` (one event); both return the complex events
    each event completes, as soon as it arrives.
    """

    def __init__(self, query: CompiledQuery, backend: str = "python", on_error: str = "raise",
                 type_column: str = "event_type", reorder_slack: int | None = None,
                 stream_column: str | None = None) -> None:
        self.query = query
        self.analysed = query.analysed
        self.schema = query.schema
        self.backend = backend
        self.type_column = type_column
        self.stream_column = stream_column  # tabular input: the column naming each event's stream
        self.decoder = EventDecoder(self.schema, on_error)
        self.encoder = LetterEncoder(self.analysed)
        self.det = LazyDeterminiser(query.cea, query.ranking_strategy)
        self.evaluator = self._make_evaluator(backend)
        self.window = self.analysed.window
        self.time_attribute = self.window.attribute if self.window.kind in ("time", "attr") \
            else None
        self.report_time = self.schema.time_attribute
        self.position = 0  # next input position
        self.tick = 0  # query-read events so far (EVENTS windows count these)
        self.last_time: int | None = None
        self.partition_ids: dict[tuple, int] = {}
        self.next_partition = 0
        self.store = EventStore(self.schema, self.report_time,
                                self.analysed.attribute_projection)
        self.n_complex_events = 0
        self._partition_plan = self._plan_partitions()
        self._binder = None  # built on the first ce.bindings
        self.reorder = None
        if reorder_slack is not None:
            attr = self.time_attribute or self.report_time
            if attr is None:
                raise ValueError("reorder_slack needs event time: the schema names no time "
                                 "attribute and the query has no time window")
            self.reorder = ReorderBuffer(attr, int(reorder_slack))
        q = self.analysed.query
        self.limit = NO_LIMIT if q.limit is None else int(q.limit)
        # without PARTITION BY, CONSUME BY PARTITION is CONSUME BY ANY (one partition)
        self.consume = {None: CONSUME_NONE, "NONE": CONSUME_NONE, "ANY": CONSUME_ANY,
                        "PARTITION": CONSUME_PARTITION}[q.consume]

    def _make_evaluator(self, backend: str):
        if backend == "cython":
            from cercore_fast.evaluator import CythonEvaluator

            return CythonEvaluator(self.det, self.encoder)
        from cercore.runtime.evaluator import PythonEvaluator

        return PythonEvaluator(self.det, self.encoder)

    # ---- public API ---------------------------------------------------------------------------
    def process(self, events: Any, stream: str | None = None) -> Iterator[ComplexEvent]:
        """Evaluate ``events`` (iterable of ``(type, attrs)`` / Event, pyarrow Table or
        RecordBatch, pandas DataFrame); yield complex events as each one completes.

        ``stream`` tags every event with the stream it comes from (tabular input may name each
        event's stream in the engine's ``stream_column`` instead); untagged events belong to
        every stream that declares their type. FROM and ``S>E`` atoms read the tags.

        With a reorder slack, events are evaluated once the slack has passed them; call
        ``flush()`` at the end of the stream to evaluate what is still buffered."""
        if stream is not None and stream not in self.schema.streams:
            raise EventError(f"unknown stream {stream!r}"
                             + did_you_mean(stream, self.schema.streams), field="stream")
        if self.reorder is not None:
            records = records_of(events, self.type_column, self.decoder.declared, stream,
                                 self.stream_column)
            yield from self._run_records(self.reorder.add(records, self._late))
            return
        for batch in self._batches(events, stream):
            yield from self._run(batch)

    def process_arrays(self, events: Any, stream: str | None = None) -> MatchArrays:
        """``process`` in bulk: every complex event of ``events`` as numpy arrays (see
        ``MatchArrays``; ``.to_arrow()`` gives a pyarrow Table), with no Python object per
        complex event. Not available with a reorder slack."""
        if self.reorder is not None:
            raise ValueError("process_arrays does not support a reorder slack; use process")
        return MatchArrays.concat([self._run_arrays(b) for b in self._batches(events, stream)])

    def push(self, event_type: str, attributes: dict[str, Any],
             stream: str | None = None) -> list[ComplexEvent]:
        """Evaluate one event (of ``stream``, if given); return the complex events it
        completes (with a reorder slack: the complex events of the buffered events it
        releases)."""
        return list(self.process([(event_type, attributes)], stream))

    def flush(self) -> list[ComplexEvent]:
        """End of stream: evaluate the events a reorder slack still holds back (no-op
        without one) and return the complex events they complete."""
        if self.reorder is None:
            return []
        return list(self._run_records(iter(self.reorder.flush())))

    def _run_records(self, records: Iterator) -> Iterator[ComplexEvent]:
        """Evaluate released ``(type, attrs, stream)`` records."""
        while True:
            chunk = list(itertools.islice(records, BATCH_SIZE))
            if not chunk:
                return
            batch = self.decoder.from_records([t if a is RAW else (t, a) for t, a, _ in chunk],
                                              self.position)
            tags = [s for _, _, s in chunk[:batch.n]]
            if any(s is not None for s in tags):
                self.decoder.tag_streams(batch, tags)
            yield from self._run(batch)

    def _late(self, record, error: EventError) -> None:
        if self.decoder.on_error != "skip":
            raise error
        self.decoder.skips.add(error, "late beyond the reorder slack")

    @property
    def stats(self) -> dict[str, Any]:
        """Counters: events received, read by the query, skipped (with reasons), complex events,
        live partitions, tECS nodes, automaton states and letters."""
        skips = self.decoder.skips
        return {"events": self.position, "read": self.tick, "skipped": skips.count,
                "skipped_by_reason": dict(skips.by_reason), "complex_events": self.n_complex_events,
                "partitions": len(self.evaluator.live_partitions()),
                "tecs_nodes": self.evaluator.memory_nodes(), "dfa_states": self.det.n_states,
                "letters": self.encoder.n_letters, "backend": self.backend}

    @property
    def skipped_examples(self) -> list[str]:
        return list(self.decoder.skips.examples)

    def _bindings(self, view, ce: ComplexEvent) -> dict[str, tuple[int, ...]]:
        if self._binder is None:
            a = self.analysed
            proj = a.query.projection
            wanted = None if proj == "*" else frozenset() if proj == "NONE" \
                else frozenset(item.var for item in proj)
            self._binder = BindingSolver(self.query.cea, {x.id: x.variables for x in a.atoms},
                                         self.encoder.atom_masks, wanted)
        span = view.span(ce.start, ce.end)
        pid = next(p for pos, _, p in span if pos == ce.end)
        return self._binder.solve([(pos, letter) for pos, letter, p in span
                                   if p == pid and letter != NOT_READ], ce.positions)

    # ---- pickling and backend moves ------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """The evaluator pickles itself in the backend-neutral format
        (``cercore.runtime.state``)."""
        return self.__dict__.copy()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def to_backend(self, backend: str) -> Engine:
        """A copy of this engine, continuing exactly where it stopped, on ``backend``
        ("auto" | "python" | "cython"). This engine is left unchanged."""
        import pickle

        from cercore.runtime.backend import resolve_backend

        backend = resolve_backend(backend)
        clone = pickle.loads(pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL))
        if backend != clone.backend:
            state = clone.evaluator.to_state()
            clone.evaluator = clone._make_evaluator(backend)
            clone.evaluator.from_state(state)
            clone.backend = backend
        return clone

    # ---- input --------------------------------------------------------------------------------
    def _batches(self, events: Any, stream: str | None = None) -> Iterator[Batch]:
        mod = type(events).__module__
        if mod.startswith("pandas"):
            import pyarrow as pa

            events = pa.Table.from_pandas(events, preserve_index=False)
            mod = "pyarrow"
        if mod.startswith("pyarrow"):
            col = self.stream_column
            for rb in events.to_batches(max_chunksize=BATCH_SIZE) if hasattr(events, "to_batches") \
                    else [events]:
                tagged = col is not None and col in rb.column_names
                batch = self.decoder.from_arrow(rb, self.position, self.type_column,
                                                (col,) if tagged else ())
                if stream is not None:
                    self.decoder.tag_streams(batch, [stream] * batch.n)
                elif tagged:
                    self.decoder.tag_streams(batch, rb.column(col).to_pylist()[:batch.n])
                yield batch
            return
        it = iter(events)
        while True:
            chunk = list(itertools.islice(it, BATCH_SIZE))
            if not chunk:
                return
            batch = self.decoder.from_records(chunk, self.position)
            if stream is not None:
                self.decoder.tag_streams(batch, [stream] * batch.n)
            yield batch

    # ---- per batch ----------------------------------------------------------------------------
    def _run(self, batch: Batch) -> Iterator[ComplexEvent]:
        args, error, n_ok, n_read = self._prepare(batch)
        evaluator = self.evaluator
        before = evaluator.reported
        try:
            yield from evaluator.run(*args, view=self.store.view(self._bindings))
        finally:
            self.n_complex_events += evaluator.reported - before
        self._finish(batch, error, n_ok, n_read)

    def _run_arrays(self, batch: Batch) -> MatchArrays:
        args, error, n_ok, n_read = self._prepare(batch)
        view = self.store.view(self._bindings)
        start, end, offsets, positions = self.evaluator.run_arrays(*args)
        self.n_complex_events += len(start)
        out = MatchArrays(start, end, offsets, positions, view.times(start), view.times(end))
        self._finish(batch, error, n_ok, n_read)
        return out

    def _prepare(self, batch: Batch):
        """Letters, times and partitions of a batch, stored; the evaluator's arguments."""
        letters = self.encoder.encode(batch)
        read = letters != NOT_READ
        n_ok, error = self._check_times(batch, read)
        if n_ok < batch.n:
            letters = letters[:n_ok]
            read = read[:n_ok]
        times = self._times(batch, read, n_ok)
        pids = self._partitions(batch, read, n_ok)
        self.store.add(batch, times, letters, pids)
        active = np.flatnonzero(read & (pids != NO_PARTITION)).astype(np.int64)
        args = (active, pids, letters, times, batch.first_position, self.window.epsilon,
                self.window.kind is not None, self.limit, self.consume)
        return args, error, n_ok, int(read.sum())

    def _finish(self, batch: Batch, error: EventError | None, n_ok: int, n_read: int) -> None:
        if self.evaluator.reclaimed:
            self.evaluator.reclaimed = False
            self._forget_partitions()
            self.store.prune(self.evaluator.last_tau)
        self.position = batch.first_position + (batch.n if error is None else n_ok)
        self.tick += n_read
        if error is not None:
            raise error

    def _check_times(self, batch: Batch, read: np.ndarray) -> tuple[int, EventError | None]:
        """Validate the window's time attribute on read events: present and non-decreasing.
        Returns (events usable, error to raise after them)."""
        if batch.error is not None and self.time_attribute is None:
            return batch.n, batch.error
        if self.time_attribute is None:
            return batch.n, None
        attr = self.time_attribute
        vals = batch.columns.values[attr]
        ok = batch.columns.valid[attr]
        last = self.last_time
        skip = self.decoder.on_error == "skip"
        idx = np.flatnonzero(read)
        if idx.size:
            tv = vals[idx]
            monotone = (np.all(ok[idx]) and np.all(np.diff(tv) >= 0)
                        and (last is None or tv[0] >= last))
            if monotone:
                self.last_time = int(tv[-1])
                return batch.n, batch.error
        for k in idx.tolist():
            err = None
            if not ok[k]:
                err = EventError(f"time attribute {attr!r} is missing or null",
                                 position=batch.first_position + k, field=attr)
            elif last is not None and vals[k] < last:
                err = EventError(f"time goes backwards: {attr} = {int(vals[k])} after {last}",
                                 position=batch.first_position + k, field=attr)
            if err is None:
                last = int(vals[k])
                continue
            if not skip:
                self.last_time = last
                return k, err
            self.decoder.skips.add(err, "time goes backwards" if ok[k] else "time attribute")
            read[k] = False
            batch.type_ids[k] = SKIPPED
        self.last_time = last
        return batch.n, batch.error

    def _times(self, batch: Batch, read: np.ndarray, n: int) -> np.ndarray:
        if self.window.kind == "events":
            return self.tick + np.cumsum(read, dtype=np.int64) - 1
        if self.time_attribute is not None:
            return batch.columns.values[self.time_attribute][:n].astype(np.int64)
        if self.report_time is not None:
            return batch.columns.values[self.report_time][:n].astype(np.int64)
        return np.zeros(n, dtype=np.int64)

    def _plan_partitions(self):
        """Per event type id: for each PARTITION BY group, the attribute that keys it (or None)."""
        groups = self.analysed.partition_by
        if not groups:
            return None
        plan = []
        for name in self.schema.type_names:
            et = self.schema.event_types[name]
            plan.append(tuple(next((a for a in g if et.has(a)), None) for g in groups))
        return plan

    def _partitions(self, batch: Batch, read: np.ndarray, n: int) -> np.ndarray:
        if self._partition_plan is None:
            return np.zeros(n, dtype=np.int64)
        pids = np.full(n, NO_PARTITION, dtype=np.int64)
        values, valid = batch.columns.values, batch.columns.valid
        ids = self.partition_ids
        for k in np.flatnonzero(read).tolist():
            attrs = self._partition_plan[batch.type_ids[k]]
            key = []
            for a in attrs:
                if a is None or not valid[a][k]:
                    break
                v = values[a][k]
                key.append(v.item() if hasattr(v, "item") else v)
            else:
                tkey = tuple(key)
                pid = ids.get(tkey)
                if pid is None:
                    pid = ids[tkey] = self.next_partition
                    self.next_partition += 1
                pids[k] = pid
        return pids

    def _forget_partitions(self) -> None:
        if self._partition_plan is None:
            return
        live = self.evaluator.live_partitions()
        self.partition_ids = {k: v for k, v in self.partition_ids.items() if v in live}


def run_events(engine: Engine, events: Iterable) -> list[ComplexEvent]:
    return list(engine.process(events))
