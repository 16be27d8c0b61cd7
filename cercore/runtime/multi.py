"""Several queries over one stream in one pass.

The stream is decoded once (one ``EventInput``), its time order is checked once, each distinct
atomic predicate is evaluated once per batch whichever queries use it, and every query's
engine then runs its own letters, partitions and evaluator over the shared batch. Complex
events come out in stream order (by end position; queries in the order given for the same
end), each tagged with the name of its query.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from cercore.errors import ConfigError, EventError
from cercore.input import Batch, EventInput
from cercore.input.order import TimeOrder
from cercore.input.source import checked_watermark
from cercore.runtime.engine import Engine
from cercore.runtime.interface import CompiledPlan
from cercore.runtime.output import ComplexEvent, MatchArrays

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


class MultiEngine:
    """Evaluates several compiled queries over one stream, decoding it once.

    Create it with ``cercore.multi_engine(queries)``: a list (named "q0", "q1", ...) or a
    mapping name -> query, all over the same schema.
    """

    def __init__(self, queries: Mapping[str, CompiledPlan], backend: str = "python",
                 on_error: str = "raise", type_column: str = "event_type",
                 reorder_slack: int | None = None, stream_column: str | None = None) -> None:
        if not queries:
            raise ConfigError("a multi-query engine needs at least one query")
        first = next(iter(queries.values()))
        if any(q.schema != first.schema for q in queries.values()):
            raise ConfigError("queries evaluated together must share one schema")
        self.schema = first.schema
        self.names = list(queries)
        self.engines = [Engine(q, backend, on_error, type_column, stream_column=stream_column)
                        for q in queries.values()]
        self.backend = self.engines[0].backend
        windows = {e.order_attribute for e in self.engines} - {None}
        self.input = EventInput(self.schema, on_error, type_column, stream_column,
                                reorder_slack, next(iter(windows), None)
                                or self.schema.time_attribute)
        # time order is the stream's: checked once per batch on each attribute the engines
        # order by, over the events some query ordered by it reads (their own checks are off)
        self.time_orders: list[tuple[TimeOrder, list[Engine]]] = []
        for attr in sorted(windows):
            users = [e for e in self.engines if e.order_attribute == attr]
            order = self.input.time_order(attr)
            self.time_orders.append((order, users))
            for e in users:
                e.time_order, e.checks_time = order, False

    # ---- public API ---------------------------------------------------------------------
    def process(self, events: Any, stream: str | None = None) -> Iterator[QueryMatch]:
        """Evaluate ``events`` (as ``Engine.process``) for every query; yield
        ``(query name, complex event)`` pairs in stream order."""
        for batch in self.input.batches(events, stream):
            yield from self._run(batch)

    def push(self, event_type: str, attributes: dict[str, Any],
             stream: str | None = None) -> list[QueryMatch]:
        """One event; the complex events it completes, with their queries."""
        return list(self.process([(event_type, attributes)], stream))

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
        return out

    def process_arrays(self, events: Any, stream: str | None = None) -> dict[str, MatchArrays]:
        """``process`` in bulk: query name -> ``MatchArrays``."""
        if self.input.reorder is not None:
            raise ConfigError("process_arrays does not support a reorder slack; use process")
        parts: dict[str, list[MatchArrays]] = {n: [] for n in self.names}
        for batch in self.input.batches(events, stream):
            error, shared = self._check(batch)
            for name, engine in zip(self.names, self.engines):
                parts[name].append(engine._run_arrays(batch, shared, raises=False))
            self.input.consumed(batch, batch.n)
            if error is not None:
                raise error
        return {n: MatchArrays.concat(p) for n, p in parts.items()}

    @property
    def stats(self) -> dict[str, Any]:
        """The input's counters, and each query's (``stats["queries"][name]``)."""
        skips = self.input.skips
        return {"events": self.input.position, "skipped": skips.count,
                "skipped_by_reason": dict(skips.by_reason), "backend": self.backend,
                "queries": {n: e.stats for n, e in zip(self.names, self.engines)}}

    # ---- per batch ----------------------------------------------------------------------
    def _check(self, batch: Batch) -> tuple[EventError | None, dict]:
        """Check time order once for all queries (truncating the batch before a bad event
        in raise mode); the per-batch cache of shared predicate results."""
        error = None
        shared: dict = {}
        for order, users in self.time_orders:
            read = np.zeros(batch.n, dtype=bool)
            for mask in {e.encoder.reads.key: e.encoder.reads for e in users}.values():
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
            found.extend([QueryMatch(name, ce) for ce in engine._run(batch, shared, raises=False)])
            runs += len(found) > n
        self.input.consumed(batch, batch.n)
        if runs > 1:
            # each query's matches are a sorted run; a stable sort merges the runs in C and
            # keeps the queries' order for equal ends
            found.sort(key=_END)
        yield from found
        if error is not None:
            raise error
