"""Several queries over one stream in one pass.

The stream is decoded once (one ``EventInput``), its time order is checked once, each distinct
atomic predicate is evaluated once per batch whichever queries use it, and every query's
engine then runs its own letters, partitions and evaluator over the shared batch. Complex
events come out in stream order (by end position; queries in the order given for the same
end), each tagged with the name of its query.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from cercore.errors import ConfigError, EventError
from cercore.input import SKIPPED, Batch, EventInput
from cercore.input.options import EngineOptions
from cercore.input.order import TimeOrder
from cercore.input.source import AsyncInput, checked_watermark, in_hand
from cercore.interface.evaluator import CompiledPlan
from cercore.runtime import slices
from cercore.runtime.backend import resolve_backend
from cercore.runtime.engine import Engine
from cercore.runtime.intake import order_attribute
from cercore.runtime.output import ComplexEvent, MatchArrays
from cercore.runtime.pipeline import TABLE_BATCHES
from cercore.runtime.shards import checked_workers

_END = operator.attrgetter("ce.end")


class QueryMatch:
    """A complex event (``ce``) and the name of the query that found it (``query``); reads
    like the complex event itself (``start``, ``end``, ``positions``, ``events``, ...)."""

    __slots__ = ("ce", "query")

    def __init__(self, query: str, ce: ComplexEvent) -> None:
        self.query = query
        self.ce = ce

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ce, name)

    def __iter__(self):  # unpacks as (query, ce)
        return iter((self.query, self.ce))

    def __repr__(self) -> str:
        return f"QueryMatch({self.query!r}, {self.ce!r})"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``query`` and the complex event's fields."""
        return {"query": self.query, **self.ce.to_dict()}


class MultiSlices(slices.SliceHooks):
    """T-CER slices of a multi-query engine (``runtime/slices.py``): every query cut at the
    same points, so all of them must be ordered by one attribute and sliceable; each run
    starts as far back as the query that reaches furthest needs. No key shards: a query's
    partitions are its own, and the engine is one."""

    @staticmethod
    def reach(engine: MultiEngine) -> tuple[int | None, str | None]:
        reach = 0
        for name, e in zip(engine.names, engine.engines):
            k, why_not = e.slicing.reach(e)
            if k is None:
                return None, f"query {name!r}: {why_not}"
            reach = max(reach, k)
        if len({e.order_attribute for e in engine.engines}) > 1:
            return None, "the queries are ordered by different attributes"
        return reach, None

    @staticmethod
    def shards(engine: MultiEngine, workers: int | None) -> tuple[int, str]:
        checked_workers(workers)
        return 1, "one worker (a multi-query engine is cut in time only, not by key)"

    @staticmethod
    def fresh(engine: MultiEngine) -> MultiEngine:
        # (its options: the shared input's reorder slack is off, as slices need)
        return MultiEngine(engine.queries, engine.options)

    @staticmethod
    def timed_reads(engine: MultiEngine, batch: Batch) -> tuple[np.ndarray, np.ndarray]:
        """The events some query reads that carry a valid time (on the one attribute)."""
        order = engine.time_order
        read = np.zeros(batch.n, dtype=bool)
        for e in engine.engines:
            read |= e.encoder.read_mask(batch)
        timed = order.timed(batch, read) & batch.columns.valid[order.attribute]
        return timed, batch.columns.values[order.attribute]

    @staticmethod
    def counts(engine: MultiEngine) -> tuple[int, ...]:
        return tuple(c for e in engine.engines for c in e.slicing.counts(e))

    @staticmethod
    def set_counts(engine: MultiEngine, counts: tuple[int, ...]) -> None:
        for i, e in enumerate(engine.engines):
            n = len(e.slicing.counts(e))
            e.slicing.set_counts(e, counts[i * n:(i + 1) * n])

    @staticmethod
    def become(engine: MultiEngine, run: MultiEngine) -> None:
        engine.__dict__.update(run.__dict__)


class MultiEngine(AsyncInput):
    """Evaluates several compiled queries over one stream, decoding it once.

    Create it with ``cercore.multi_engine(queries)``: a list (named "q0", "q1", ...) or a
    mapping name -> query, all over the same schema.
    """

    slicing = MultiSlices

    def __init__(self, queries: Mapping[str, CompiledPlan],
                 options: EngineOptions = EngineOptions.DEFAULT) -> None:
        if not queries:
            raise ConfigError("a multi-query engine needs at least one query")
        first = next(iter(queries.values()))
        if any(q.schema != first.schema for q in queries.values()):
            raise ConfigError("queries evaluated together must share one schema")
        self.schema = first.schema
        self.backend = resolve_backend(options.backend)
        # each query's engine reads as the shared input does, but for the reorder slack,
        # which the shared input applies once for all of them
        self.options = dataclasses.replace(options, backend=self.backend, reorder_slack=None)
        self.names: list[str] = []
        self.engines: list[Engine] = []
        self.time_orders: list[tuple[TimeOrder, list[Engine]]] = []
        # the attributes the queries' times are ordered by (as Engine.order_attribute)
        orders = {order_attribute(q.analysed) for q in queries.values()} - {None}
        self.input = EventInput(self.schema, options, next(iter(sorted(orders)), None))
        for name, q in queries.items():
            self._attach(name, q)

    def _attach(self, name: str, query: CompiledPlan) -> None:
        """Run ``query`` from the stream's current position on. Time order is the stream's:
        checked once per event on each attribute the engines order by, over the events some
        query ordered by it reads (their own checks are off)."""
        if query.schema != self.schema:
            raise ConfigError("queries evaluated together must share one schema")
        engine = Engine(query, self.options)
        engine.input.start_at(self.input.position)
        engine.store.time_form = self.input.decoder.time_form  # the shared input decodes
        attr = engine.order_attribute
        if attr is not None:
            shared = next(((o, users) for o, users in self.time_orders
                           if o.attribute == attr), None)
            if shared is None:
                shared = (self.input.time_order(attr), [])
                self.time_orders.append(shared)
                self.time_orders.sort(key=lambda ou: ou[0].attribute)
            shared[1].append(engine)
            engine.share_time_order(shared[0])
        self.names.append(name)
        self.engines.append(engine)

    # ---- public API ---------------------------------------------------------------------
    def add(self, name: str, query: CompiledPlan) -> None:
        """Start evaluating ``query`` (compiled, over this engine's schema) on the running
        stream: it sees the events from the current position on (positions stay the
        stream's); its matches are named ``name``."""
        if name in self.names:
            raise ConfigError(f"a query named {name!r} is already running")
        self._attach(name, query)

    def remove(self, name: str) -> None:
        """Stop evaluating the query named ``name`` (its partial matches are dropped)."""
        if name not in self.names:
            raise ConfigError(f"no query named {name!r} is running")
        if len(self.names) == 1:
            raise ConfigError("a multi-query engine needs at least one query")
        k = self.names.index(name)
        engine = self.engines[k]
        del self.names[k], self.engines[k]
        for _, users in self.time_orders:
            if engine in users:
                users.remove(engine)
        self.time_orders = [(o, users) for o, users in self.time_orders if users]

    @property
    def queries(self) -> dict[str, CompiledPlan]:
        """The running queries, by name."""
        return {n: e.query for n, e in zip(self.names, self.engines)}

    @property
    def position(self) -> int:
        """The next input position (events received so far)."""
        return self.input.position

    @property
    def time_order(self) -> TimeOrder | None:
        """The check of event time when every query is ordered by one attribute, else None."""
        return self.time_orders[0][0] if len(self.time_orders) == 1 else None

    def process(self, events: Any, stream: str | None = None, *, workers: int | None = None
                ) -> Iterator[QueryMatch]:
        """Evaluate ``events`` (as ``Engine.process``: in batches when they are in hand, else
        one at a time) for every query; yield ``(query name, complex event)`` pairs in stream
        order. ``workers``: as for ``process_arrays``."""
        runs = self._split(events, workers)
        if runs > 1:
            return slices.sliced_feed(self, events, stream, runs)
        return self._feed(events, stream)

    def _split(self, events: Any, workers: int | None) -> int:
        """How many T-CER runs evaluate ``events`` (``runtime/slices.py``; 1: none)."""
        return slices.workers_plan(self, workers, events)[0]  # (slices_for refuses a used one)

    def _feed(self, events: Any, stream: str | None) -> Iterator[QueryMatch]:
        if not in_hand(events):
            for typ, attrs, sid in self.input.live(events, stream):
                yield from self._record(typ, attrs, sid)
            return
        for batch in self.input.batches(events, stream):
            yield from self._run(batch)

    def push(self, event_type: str, attributes: dict[str, Any],
             stream: str | None = None) -> list[QueryMatch]:
        """One event; the complex events it completes, with their queries."""
        if self.input.reorder is not None:
            return list(self.process(iter([(event_type, attributes)]), stream))
        return self._record(event_type, attributes, self.input.stream_code(stream))

    def flush(self) -> list[QueryMatch]:
        """End of stream: the events a reorder slack still holds back."""
        return [m for batch in self.input.flush() for m in self._run(batch)]

    def advance(self, t: int) -> list[QueryMatch]:
        """A watermark at time ``t`` for every query (see ``Engine.advance``)."""
        for order, _ in self.time_orders or [(None, None)]:
            t = checked_watermark(t, order)
        out = [m for batch in self.input.advance(t) for m in self._run(batch)]
        for order, _ in self.time_orders:
            order.last = max(t, order.last if order.last is not None else t)
        for name, engine in zip(self.names, self.engines):  # deadlines the watermark passes
            out += [QueryMatch(name, ce) for ce in engine.fire_deadlines(t)]
        return out

    def process_arrays(self, events: Any, stream: str | None = None, *,
                       workers: int | None = None) -> dict[str, MatchArrays]:
        """``process`` in bulk: query name -> ``MatchArrays``. ``workers``: threads
        evaluating a table in T-CER slices when every query is windowed on one ordering
        attribute and can be cut (``runtime/slices.py``); the same output. None: the cores for
        a large table slices can cut, else one."""
        runs = self._split(events, workers)
        if self.input.reorder is not None:
            raise ConfigError("process_arrays does not support a reorder slack; use process")
        if runs > 1 and (out := slices.evaluate_in_slices(self, events, stream, runs,
                                                          _arrays_of)):
            return {n: MatchArrays.concat([p for run in out for p in run[n]], threads=runs)
                    for n in self.names}
        return {n: MatchArrays.concat(p) for n, p in self._array_parts(events, stream).items()}

    def _array_parts(self, events: Any, stream: str | None, batch_size: int | None = None
                     ) -> dict[str, list[MatchArrays]]:
        """Each query's complex events of ``events``, one ``MatchArrays`` per batch."""
        parts: dict[str, list[MatchArrays]] = {n: [] for n in self.names}
        for batch in self.input.batches(events, stream, batch_size):
            error, shared = self._check(batch)
            for name, engine in zip(self.names, self.engines):
                parts[name].append(engine.evaluate_batch_arrays(batch, shared))
            self.input.consumed(batch, batch.n)
            if error is not None:
                raise error
        return parts

    def to_backend(self, backend: str) -> MultiEngine:
        """A copy of this engine (every running query), continuing exactly where it stopped,
        on ``backend`` ("auto" | "python" | "cython"). This engine is left unchanged."""
        import pickle

        clone = pickle.loads(pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL))
        backend = resolve_backend(backend)
        if backend != clone.backend:
            moved = [e.to_backend(backend) for e in clone.engines]
            for order, users in clone.time_orders:  # the copies share the stream's checks
                users[:] = [moved[clone.engines.index(e)] for e in users]
                for e in users:
                    e.share_time_order(order)
            clone.engines = moved
            clone.backend = backend
        return clone

    @property
    def stats(self) -> dict[str, Any]:
        """The input's counters, and each query's (``stats["queries"][name]``)."""
        skips = self.input.skips
        return {"events": self.input.position, "skipped": skips.count,
                "skipped_by_reason": dict(skips.by_reason), "backend": self.backend,
                "queries": {n: e.stats for n, e in zip(self.names, self.engines)}}

    # ---- one event at a time --------------------------------------------------------------
    def _record(self, typ: Any, attrs: Any, stream: int) -> list[QueryMatch]:
        """One event for every query: decoded and time-checked once, then each query's
        letter, partition and evaluator step (``Engine.evaluate_event``)."""
        inp = self.input
        pos = inp.position
        tid, row = inp.decoder.decode_one(typ, attrs, stream, pos)
        if tid != SKIPPED:
            for order, users in self.time_orders:
                if any(e.reads.reads_one(tid, stream) for e in users) \
                        and not order.check_one(tid, row, pos):
                    tid, row = SKIPPED, None
                    break
        found: list[QueryMatch] = []
        for name, engine in zip(self.names, self.engines):
            ces = engine.evaluate_event(tid, row, stream, pos)
            if ces:
                found.extend([QueryMatch(name, ce) for ce in ces])
        inp.consumed_one(pos)
        return found

    # ---- per batch ----------------------------------------------------------------------
    def _check(self, batch: Batch) -> tuple[EventError | None, dict]:
        """Check time order once for all queries (truncating the batch before a bad event
        in raise mode); the per-batch cache of shared predicate results."""
        error = None
        shared: dict = {}
        for order, users in self.time_orders:
            read = np.zeros(batch.n, dtype=bool)
            for mask in {e.reads.key: e.reads for e in users}.values():
                read |= mask.mask(batch)
            n_ok, err = order.check(batch, read)
            if err is not None:
                error = err
                batch.truncate(n_ok, err)
        return error or batch.error, shared

    def _run(self, batch: Batch) -> Iterator[QueryMatch]:
        error, shared = self._check(batch)
        found: list[QueryMatch] = []
        runs = 0  # queries that found something: one run needs no merge
        for name, engine in zip(self.names, self.engines):
            n = len(found)
            found.extend([QueryMatch(name, ce) for ce in engine.evaluate_batch(batch, shared)])
            runs += len(found) > n
        self.input.consumed(batch, batch.n)
        if runs > 1:
            # each query's matches are a sorted run; a stable sort merges the runs in C and
            # keeps the queries' order for equal ends
            found.sort(key=_END)
        yield from found
        if error is not None:
            raise error


def _arrays_of(run: MultiEngine, table, stream: str | None) -> dict[str, list[MatchArrays]]:
    """A T-CER run's complex events as arrays per query, one ``MatchArrays`` per batch (as
    ``slices.arrays_of``: the runs' batches are concatenated once, by the caller)."""
    return run._array_parts(table, stream, run.input.batch_size * TABLE_BATCHES)
