"""The engine: input batches -> letters, window times and partition ids -> evaluator ->
complex events. One engine evaluates one compiled query over one stream.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np

from cercore.automata.determinize import LazyDeterminiser
from cercore.errors import ConfigError, EventError
from cercore.input import SKIPPED, Batch, EventInput, ReadFilter, ReadsInput
from cercore.input.options import EngineOptions
from cercore.input.order import TimeOrder
from cercore.input.source import checked_watermark, in_hand
from cercore.runtime.backend import resolve_backend
from cercore.runtime.bindings import BindingSolver
from cercore.runtime.constants import (
    CONSUME_ANY,
    CONSUME_NONE,
    CONSUME_PARTITION,
    INT64_MIN,
    NO_LIMIT,
    NO_PARTITION,
    NOT_READ,
    window_start,
)
from cercore.runtime.deadlines import DeadlineQueue, LookbackIndex
from cercore.runtime.event_predicates import BetweenPlan, EventPredicateCheck, IncrementalCheck
from cercore.runtime.interface import CompiledPlan, Evaluator, EvaluatorInput
from cercore.runtime.letters import LetterEncoder, inert_letters_skippable
from cercore.runtime.output import ComplexEvent, MatchArrays
from cercore.runtime.partitions import PartitionIndex
from cercore.runtime.selection import select_arrays, select_stream
from cercore.runtime.store import EventStore
from cercore.runtime.term_values import TermValues

__all__ = ["NO_PARTITION", "Engine"]


class Engine(ReadsInput):
    """Evaluates a compiled query over a stream, incrementally.

    Create it with ``CompiledQuery.engine()``. Feed events with ``process`` (an iterable, an
    Arrow table or a pandas DataFrame) or ``push`` (one event); both return the complex events
    each event completes, as soon as it arrives.
    """

    def __init__(self, query: CompiledPlan, options: EngineOptions = EngineOptions.DEFAULT
                 ) -> None:
        self.query = query
        self.analysed = query.analysed
        self.schema = query.schema
        self.options = options
        self.backend = backend = resolve_backend(options.backend)
        self.encoder = LetterEncoder(self.analysed, compiled=backend == "cython")
        self.window = self.analysed.window
        # NEXT/LAST/MAX under a window: the automaton ranks each start's runs and the engine
        # keeps the winners among the starts inside the window (cercore.runtime.selection);
        # with predicates between events, the automaton ranks nothing: the engine selects
        # among the complex events that satisfy them
        between = self.analysed.checked_predicates  # (the partition guarantees the rest)
        self.selects = query.ranking_strategy \
            if self.window.kind is not None or between else None
        self.det = LazyDeterminiser(query.cea, None if between else query.ranking_strategy,
                                    per_start=self.selects is not None)
        self.evaluator = self._make_evaluator(backend)
        self.time_attribute = self.window.attribute if self.window.kind in ("time", "attr") \
            else None
        self.report_time = self.schema.time_attribute
        # event time never goes backwards: checked on the window's attribute, or without a
        # time window on the schema's time attribute (late events are never accepted silently)
        self.order_attribute = self.time_attribute or self.report_time
        # stream_column: in tabular input, the column naming each event's stream
        self.input = EventInput(self.schema, options, self.order_attribute)
        self.time_order = (self.input.time_order(self.order_attribute)
                           if self.order_attribute is not None else None)
        self.checks_time = True  # False when a MultiEngine checks the shared time order
        self.tick = 0  # query-read events so far (EVENTS windows count these)
        self.partitions = PartitionIndex(self.schema, self.analysed.partition_by)
        self.store = EventStore(self.schema, self.report_time,
                                self.analysed.attribute_projection, self.input.decoder.time_form)
        self.n_complex_events = 0
        self._binder = None  # built on the first ce.bindings
        # events that satisfy no atom are not stepped where they cannot change anything
        self.skip_inert = inert_letters_skippable(self.analysed)
        q = self.analysed.query
        self.limit = NO_LIMIT if q.limit is None else int(q.limit)
        # predicates between events: checked by the evaluator while it enumerates, over the
        # values of the attributes they read (term_values, fed and pruned with the store)
        self.between_plan = self.term_values = self.event_check = None
        if between:
            variables = {x.id: x.variables for x in self.analysed.atoms}
            types = self.schema.attribute_types()
            self.between_plan = BetweenPlan(between, types, variables)
            self.term_values = self.store.terms = TermValues(
                types, self.between_plan.attributes, typed=backend == "cython")
            self.event_check = EventPredicateCheck(
                self.between_plan, self.term_values,
                BindingSolver(query.cea, variables, self.encoder.atom_masks, None), NOT_READ)
        self._check_between(self.evaluator)
        # what the engine does after the evaluator: strategy selection and then LIMIT (the
        # evaluator then reports every complex event that satisfies the predicates)
        self.post = self.selects is not None
        # without PARTITION BY, CONSUME BY PARTITION is CONSUME BY ANY (one partition)
        self.consume = {None: CONSUME_NONE, "NONE": CONSUME_NONE, "ANY": CONSUME_ANY,
                        "PARTITION": CONSUME_PARTITION}[q.consume]
        self.latest_time = INT64_MIN  # window time of the last read event (store pruning)
        # φ ; ABSENT(ψ) WITHIN T: φ's complex events wait for their deadline (runtime/deadlines)
        deadline = self.analysed.deadline
        self.deadlines = None if deadline is None else DeadlineQueue(deadline.span)
        self.psi_bits = 0 if deadline is None else deadline.psi_bits
        # ABSENT(ψ) WITHIN T ; φ: φ's complex events with a ψ event in the T before them go
        lookback = self.analysed.lookback
        self.lookback = None if lookback is None else LookbackIndex(
            lookback.span, self.window.epsilon if self.window.kind in ("time", "attr") else None)
        self.lookback_bits = 0 if lookback is None else lookback.psi_bits
        self.spans = self.psi_bits | self.lookback_bits  # 0: no absence span (the fast path)
        # run_one's fixed arguments, and whether an event's window time is its read count
        self._one_args = (self.window.epsilon or 0, self.window.kind is not None,
                          NO_LIMIT if self.post else self.limit, self.window.kind == "events")

    def _check_between(self, evaluator: Evaluator) -> None:
        """Have ``evaluator`` check the predicates between events while it enumerates."""
        if self.between_plan is not None:
            evaluator.check_between(self.between_plan, IncrementalCheck(
                self.between_plan, self.term_values, self._whole_check))

    def _whole_check(self, start: int, end: int, positions) -> bool:
        """Every valuation of a complex event being enumerated (for a path the evaluator could
        not check as it walked)."""
        return self.event_check.holds(self.store.view(self._bindings), start, end, positions)

    def _make_evaluator(self, backend: str) -> Evaluator:
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
        ``flush()`` at the end of the stream to evaluate what is still buffered.

        A list, a tuple or a table is evaluated in batches (bulk speed); any other iterable
        (a generator, a live feed) one event at a time: every complex event is yielded before
        the next event is asked for."""
        self._usable()
        if not in_hand(events):
            for typ, attrs, sid in self.input.live(events, stream):
                found = self._record(typ, attrs, sid)
                if found:
                    yield from found if type(found) is list else self._guarded(found)
            return
        for batch in self.input.batches(events, stream):
            yield from self._guarded(self._run(batch))

    def process_arrays(self, events: Any, stream: str | None = None) -> MatchArrays:
        """``process`` in bulk: every complex event of ``events`` as numpy arrays (see
        ``MatchArrays``; ``.to_arrow()`` gives a pyarrow Table), with no Python object per
        complex event. Not available with a reorder slack. Under ``ABSENT(ψ) WITHIN T`` the
        arrays hold what ``process`` would yield for the same input: complex events of earlier
        input whose deadline it passes, and not yet those whose deadline it does not (they
        come with later input or ``advance``)."""
        if self.input.reorder is not None:
            raise ConfigError("process_arrays does not support a reorder slack; use process")
        self._usable()
        return MatchArrays.concat([self._run_arrays(b)
                                   for b in self.input.batches(events, stream)])

    def push(self, event_type: str, attributes: dict[str, Any],
             stream: str | None = None) -> list[ComplexEvent]:
        """Evaluate one event (of ``stream``, if given); return the complex events it
        completes (with a reorder slack: the complex events of the buffered events it
        releases)."""
        self._usable()
        if self.input.reorder is not None:
            return list(self.process(iter([(event_type, attributes)]), stream))
        found = self._record(event_type, attributes, self.input.stream_code(stream))
        return found if type(found) is list else list(found)

    def flush(self) -> list[ComplexEvent]:
        """End of stream: evaluate the events a reorder slack still holds back (no-op
        without one) and return the complex events they complete."""
        self._usable()
        return [ce for batch in self.input.flush() for ce in self._guarded(self._run(batch))]

    def advance(self, t: int) -> list[ComplexEvent]:
        """A watermark: no event earlier than time ``t`` follows. Evaluates the events a
        reorder slack holds up to ``t`` and returns the complex events they complete; from
        now on an event before ``t`` is late (raised, or skipped and counted)."""
        self._usable()
        t = checked_watermark(t, self.time_order)  # (a timestamp: its units)
        out = [ce for batch in self._watermark(t) for ce in self._guarded(self._run(batch))]
        return out + self.fire_deadlines(t)

    def fire_deadlines(self, t: int) -> list[ComplexEvent]:
        """Event time has reached ``t``: the complex events of ``φ ; ABSENT(ψ) WITHIN T``
        whose deadline is before ``t`` (what ``advance(t)`` reports, without making earlier
        events late: for a caller that knows event time another way, e.g. Spark's watermark).
        Empty without a deadline."""
        if self.deadlines is None:
            return []
        due = self.deadlines.fire(t)
        self.n_complex_events += len(due)
        return due

    @property
    def stats(self) -> dict[str, Any]:
        """Counters: events received, read by the query, skipped (with reasons), complex events,
        live partitions, tECS nodes, automaton states and letters, and the evaluator's work
        counts (``work``: transitions, nodes created, union-list operations, enumeration; see
        ``PythonEvaluator.work_counts``)."""
        skips = self.input.skips
        return {"events": self.position, "read": self.tick, "skipped": skips.count,
                "skipped_by_reason": dict(skips.by_reason), "complex_events": self.n_complex_events,
                "partitions": len(self.evaluator.live_partitions()),
                "tecs_nodes": self.evaluator.memory_nodes(), "dfa_states": self.det.n_states,
                "letters": self.encoder.n_letters, "backend": self.backend,
                "work": self.evaluator.work_counts()}

    def _bindings(self, view, ce: ComplexEvent) -> dict[str, tuple[int, ...]]:
        if self.event_check is not None:  # only valuations that satisfy them produce ce
            return self.event_check.bindings(view, ce)
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
        (``cercore.runtime.state``). Refused while a batch is half done (see ``_usable``)."""
        self._usable()
        return self.__dict__.copy()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._check_between(self.evaluator)  # (an evaluator pickles no engine callback)

    def to_backend(self, backend: str) -> Engine:
        """A copy of this engine, continuing exactly where it stopped, on ``backend``
        ("auto" | "python" | "cython"). This engine is left unchanged."""
        import pickle

        backend = resolve_backend(backend)
        clone = pickle.loads(pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL))
        if backend != clone.backend:
            state = clone.evaluator.to_state()
            clone.evaluator = clone._make_evaluator(backend)
            clone.evaluator.from_state(state)
            clone._check_between(clone.evaluator)
            clone.backend = backend
            clone.options = dataclasses.replace(clone.options, backend=backend)
            clone.encoder.compiled = backend == "cython"
        return clone

    # ---- the per-batch contract: what a MultiEngine builds on ------------------------------
    # The caller decodes the stream once (its own EventInput, positions kept in step with
    # this engine's), may check time order once for several engines, and hands each engine
    # the decoded batch or event; a batch's error is the caller's to raise, once every engine
    # has evaluated the batch's good events.
    @property
    def reads(self) -> ReadFilter:
        """Which events the query reads (event types, streams)."""
        return self.encoder.reads

    def share_time_order(self, order: TimeOrder) -> None:
        """From now on ``order`` -- the check of this engine's order attribute -- is run by
        the caller before each batch or event it hands over; the engine trusts it."""
        if order.attribute != self.order_attribute:
            raise ConfigError(f"time order on {order.attribute!r} handed to an engine ordered "
                              f"by {self.order_attribute!r}")
        self.time_order, self.checks_time = order, False

    def evaluate_batch(self, batch: Batch, shared: dict | None = None
                       ) -> Iterator[ComplexEvent]:
        """The complex events of a decoded batch, as ``process`` evaluates it (refused while
        another batch is half done; left unusable if abandoned half way); ``shared``: the
        callers' per-batch cache of predicate results. The batch's error is not raised."""
        return self._guarded(self._run(batch, shared, raises=False))

    def evaluate_batch_arrays(self, batch: Batch, shared: dict | None = None) -> MatchArrays:
        """``evaluate_batch`` in bulk (``process_arrays``)."""
        self._usable()
        return self._run_arrays(batch, shared, raises=False)

    def evaluate_event(self, type_id: int, row: dict | None, stream: int,
                       position: int) -> list | Iterator:
        """The complex events of one decoded event (type id, SKIPPED for a skipped one) at
        ``position``, as ``push`` evaluates it."""
        self._usable()
        return self._evaluate_one(type_id, row, stream, position)

    # ---- one event at a time (the record path) ----------------------------------------------
    def _record(self, typ: Any, attrs: Any, stream: int) -> list | Iterator:
        """Evaluate one event -- what ``_run`` does for a batch, for one event, with no batch:
        validate it, check its time, compute its letter and partition, store it, step the
        evaluator once. Its complex events, as a list (an iterator only when they overflow
        the evaluator's output buffer). An EventError in raise mode leaves the event
        unconsumed, as in a batch."""
        pos = self.input.position
        tid, row = self.input.decoder.decode_one(typ, attrs, stream, pos)
        return self._evaluate_one(tid, row, stream, pos)

    def _evaluate_one(self, tid: int, row: dict | None, stream: int, pos: int) -> list | Iterator:
        """``_record`` after decoding: event ``pos`` of type ``tid`` (SKIPPED: skipped) with
        attributes ``row``; its time is checked here unless a MultiEngine checked it. Only
        the events that can be part of a complex event are stored (``RecordChunk``).

        With an absence span (``self.spans``: ABSENT(ψ) WITHIN T at the end or the start of the
        pattern), ``_span_*`` do the rest: what returns is the complex events due before the
        event's time; a ψ event drops its partition's pending ones (or is remembered for the
        look back), and φ's complex events wait for their deadline (``runtime/deadlines``)."""
        reads = self.encoder.reads
        if tid == SKIPPED or not reads.type_list[tid] or (
                reads.stream_list is not None and not reads.stream_list[stream + 1]):
            self.input.position = pos + 1
            return []
        order = self.time_order
        # (an EventError here, in raise mode, leaves the event unconsumed)
        passed = order is None or not self.checks_time or order.check_one(tid, row, pos)
        self.input.position = pos + 1
        if not passed:
            return []
        spans = self.spans
        out = []
        if spans:
            out = self._span_due(order.last)
            if self.lookback is not None:
                self.lookback.expire_all(order.last)
        epsilon, windowed, limit, by_tick = self._one_args
        if by_tick:
            t = self.tick
        elif order is not None:
            t = order.last if order.last is not None else INT64_MIN
        else:
            t = 0
        self.tick += 1
        encoder = self.encoder
        letter = encoder.record_letter(tid, row, stream)
        pid = self._span_event(tid, row, pos, letter, order.last) \
            if spans and encoder.atom_masks[letter] & spans else None
        if self.skip_inert and not encoder.relevant[letter]:
            return out  # it can change nothing: not stepped, not stored
        if pid is None:
            pid = self.partitions.assign_one(tid, row)
        if pid == NO_PARTITION:
            return out
        self.latest_time = t
        store = self.store
        opened = store.add_record(pos, tid, row, t, letter, pid)
        evaluator = self.evaluator
        view = store.view(self._bindings)
        found = evaluator.run_one(pid, letter, pos, t, epsilon, windowed, limit, self.consume,
                                  view)
        if found:
            if self.post:
                found = self._post_one(found, view)
            if spans:
                self._span_found(found, pid, view, order.last, out)
            elif type(found) is list:
                self.n_complex_events += len(found)
                out = found
            else:
                out = self._counted(found)
        if evaluator.pop_reclaimed():
            self._forget_partitions()
            store.prune(evaluator.last_tau)
        if opened:
            self._prune_window()
        return out

    # ---- absence spans on the record path ---------------------------------------------------
    def _span_due(self, now: int) -> list:
        """The complex events whose deadline is before ``now`` (counted: reported now)."""
        queue = self.deadlines
        if queue is None or not queue.queue or queue.queue[0].deadline >= now:
            return []  # (the common case, without a call)
        out = queue.fire(now)
        self.n_complex_events += len(out)
        return out

    def _span_event(self, tid: int, row: dict, pos: int, letter: int, now: int) -> int | None:
        """A ψ event (of a deadline, a look back, or both): drops its partition's pending
        complex events (after ``_span_due`` fired what was due before it) / is remembered.
        Its partition id (None when nothing can need it: no look back, nothing pending)."""
        if not self.lookback_bits and not self.deadlines.by_partition:
            return None
        pid = self.partitions.assign_one(tid, row)
        if pid != NO_PARTITION:
            mask = self.encoder.atom_masks[letter]
            if mask & self.psi_bits:
                self.deadlines.drop(pid)
            if mask & self.lookback_bits:
                self.lookback.add(pid, pos, now)
        return pid

    def _span_found(self, found, pid: int, view, now: int, out: list) -> None:
        """φ's complex events of this event: the look back drops those a ψ event precedes;
        under a deadline they wait, else they go to ``out`` (counted)."""
        if self.lookback is not None:
            found = self._looked_back(found, pid, view)
        if self.deadlines is not None:
            for ce in found:
                self.deadlines.add(ce, now, pid)
        else:
            found = list(found)
            self.n_complex_events += len(found)
            out += found

    def _looked_back(self, found, pid: int, view) -> list:
        """The complex events (of partition ``pid``) that no ψ event precedes within T."""
        lookback, attr = self.lookback, self.analysed.lookback.attribute
        return [ce for ce in found
                if not lookback.rules_out(pid, ce.start, view.time_of(ce.start, attr))]

    def _post_one(self, found: list | Iterator, view) -> list:
        """One event's complex events after the evaluator: predicates between events, then
        strategy selection and LIMIT."""
        if type(found) is not list:
            found = list(found)
        return list(select_stream(self.selects, found, self.limit))

    def _counted(self, found: Iterator) -> Iterator:
        for ce in found:
            self.n_complex_events += 1
            yield ce

    def _forget_partitions(self) -> None:
        """After a reclamation: forget the keys of partitions nothing holds any more -- no
        partial match, no recent ψ event a look back needs, no complex event waiting for its
        deadline (a key that comes back gets a new partition id)."""
        live = self.evaluator.live_partitions()
        if self.lookback is not None:
            live |= set(self.lookback.positions)
        if self.deadlines is not None:
            live |= set(self.deadlines.by_partition)
        self.partitions.forget(live)

    def compact(self) -> None:
        """Under a time or event window: reclaim now every partial match and stored event
        the window has left behind (a run does so when its arena fills), so that a pickled
        engine -- a streaming key's state, saved each micro-batch -- carries only live
        state. Complex events are unchanged."""
        self._usable()
        if self.window.kind is None or self.latest_time == INT64_MIN:
            return
        self.evaluator.compact(window_start(self.latest_time, self.window.epsilon or 0))
        if self.evaluator.pop_reclaimed():
            self._forget_partitions()
            self.store.prune(self.evaluator.last_tau)

    def _prune_window(self) -> None:
        """Drop the stored events the window has left behind (none can be in a later complex
        event): memory under WITHIN stays flat however events arrive."""
        if self.window.kind is not None and self.latest_time != INT64_MIN:
            self.store.prune(window_start(self.latest_time, self.window.epsilon or 0))

    # ---- per batch ----------------------------------------------------------------------------
    # ``shared``: leaf results cached across the queries of a MultiEngine (None: alone);
    # ``raises``: False when the caller (a MultiEngine) raises the batch's error itself
    def _run(self, batch: Batch, shared: dict | None = None,
             raises: bool = True) -> Iterator[ComplexEvent]:
        args, error, n_read = self._prepare(batch, shared)
        evaluator = self.evaluator
        view = self.store.view(self._bindings)
        found = evaluator.run(args, view=view)
        if self.deadlines is not None or self.lookback is not None:
            if self.selects is not None:
                found = select_stream(self.selects, found, self.limit)
            if self.lookback is not None:
                found = self._lookback_batch(batch, args, found, view)
            if self.deadlines is not None:
                found = self._deadline_batch(batch, args, found)
            for ce in found:
                self.n_complex_events += 1
                yield ce
        elif not self.post:
            before = evaluator.reported
            try:
                yield from found
            finally:
                self.n_complex_events += evaluator.reported - before
        else:
            for ce in select_stream(self.selects, found, self.limit):
                self.n_complex_events += 1
                yield ce
        self._finish(batch, error if raises else None, n_read)

    def _lookback_batch(self, batch: Batch, args: EvaluatorInput, found: Iterator,
                        view) -> list:
        """A batch under ``ABSENT(ψ) WITHIN T ; φ``: its ψ events recorded (they are looked up
        by position, so all at once), then φ's complex events that none rules out; then every
        partition drops the entries no later complex event needs."""
        lookback = self.lookback
        first = batch.first_position
        times = batch.columns.values[self.analysed.lookback.attribute]
        letters, pids = args.letters, args.pids
        read = letters != NOT_READ
        satisfying = np.append(self.encoder.letters_satisfying(self.lookback_bits), False)
        psi = np.flatnonzero((pids != NO_PARTITION) & satisfying[np.where(read, letters, -1)])
        for k, pid, t in zip(psi.tolist(), pids[psi].tolist(), times[psi].tolist()):
            lookback.add(pid, first + k, t)
        attr = self.analysed.lookback.attribute
        out = [ce for ce in found if not lookback.rules_out(
            int(pids[ce.end - first]), ce.start, view.time_of(ce.start, attr))]
        last_read = np.flatnonzero(read)[-1:]
        if len(last_read):
            lookback.expire_all(int(times[last_read[0]]))
        return out

    def _deadline_batch(self, batch: Batch, args: EvaluatorInput, found: Iterator) -> list:
        """A batch under a deadline: what ``_evaluate_one`` does event by event, vectorised.
        Complex events pending from earlier batches meet the first ψ event of their partition
        in the batch (what was due before its time fires first), then what is due before
        the batch's last time fires (their deadlines come before every new one). Each new
        complex event of φ (end e, deadline d) is dropped when the next ψ event of its
        partition after e has time <= d, else reported now when the batch's last time is after
        d, else queued."""
        queue = self.deadlines
        first = batch.first_position
        times = batch.columns.values[self.analysed.deadline.attribute]
        letters, pids = args.letters, args.pids
        read = letters != NOT_READ
        last_read = np.flatnonzero(read)[-1:]
        last_time = int(times[last_read[0]]) if len(last_read) else None
        ces = list(found)
        ends = np.fromiter((ce.end - first for ce in ces), dtype=np.int64, count=len(ces))
        end_times, end_pids = times[ends], pids[ends]
        satisfying = np.append(self.encoder.letters_satisfying(self.psi_bits), False)
        psi = np.flatnonzero((pids != NO_PARTITION) & satisfying[np.where(read, letters, -1)])
        next_time = np.full(len(ces), np.iinfo(np.int64).max, dtype=np.int64)
        out: list = []
        if len(psi):
            # ψ events keyed (partition, position): for each end, the next one of its partition
            stride = batch.n + 1
            keys = pids[psi] * stride + psi
            order = np.argsort(keys, kind="stable")
            keys, psi = keys[order], psi[order]
            at = np.searchsorted(keys, end_pids * stride + ends, side="right")
            hit = at < len(keys)
            hit[hit] = keys[at[hit]] // stride == end_pids[hit]
            next_time[hit] = times[psi[at[hit]]]
            waiting = np.fromiter(queue.by_partition, np.int64)
            if len(waiting):  # the first ψ event of each partition waiting since before
                at = np.searchsorted(keys, waiting * stride - 1, side="right")
                ok = at < len(keys)
                at, waiting = at[ok], waiting[ok]
                firsts = np.sort(psi[at[keys[at] // stride == waiting]])
                for pid, t in zip(pids[firsts].tolist(), times[firsts].tolist()):
                    out += queue.fire(t)
                    queue.drop(pid)
        if last_time is not None:
            out += queue.fire(last_time)
        deadlines = end_times + queue.span
        alive = next_time > deadlines
        due = alive & (deadlines < last_time) if last_time is not None else alive & False
        out += [ces[i] for i in np.flatnonzero(due).tolist()]
        wait = np.flatnonzero(alive & ~due)
        queue.add_many([ces[i] for i in wait.tolist()], end_times[wait].tolist(),
                       end_pids[wait].tolist())
        return out

    def _run_arrays(self, batch: Batch, shared: dict | None = None,
                    raises: bool = True) -> MatchArrays:
        if self.spans:
            # ABSENT(ψ) WITHIN T: what ``_run`` reports for the batch -- the complex events
            # whose deadline the batch passes (found in earlier batches too), those no ψ event
            # precedes -- as arrays (a span decides per complex event anyway)
            return MatchArrays.of(list(self._run(batch, shared, raises)),
                                  self.schema.time_unit)
        args, error, n_read = self._prepare(batch, shared)
        view = self.store.view(self._bindings)
        start, end, offsets, positions = self.evaluator.run_arrays(args)
        if self.post:
            start, end, offsets, positions = select_arrays(self.selects, start, end, offsets,
                                                           positions, self.limit, None)
        self.n_complex_events += len(start)
        out = MatchArrays(start, end, offsets, positions, view.times(start), view.times(end))
        self._finish(batch, error if raises else None, n_read)
        return out

    def _prepare(self, batch: Batch, shared: dict | None = None
                 ) -> tuple[EvaluatorInput, EventError | None, int]:
        """Letters, times and partitions of a batch, stored: the evaluator's input, the
        batch's error (raised after its good events) and how many events the query reads."""
        read = self.encoder.read_mask(batch, shared)
        n_ok, error = (batch.n, None) if self.time_order is None or not self.checks_time \
            else self.time_order.check(batch, read)  # unmarks (and skips) late events
        error = error or batch.error
        if n_ok < batch.n:
            batch.truncate(n_ok, error)
            read = read[:n_ok]
        letters = self.encoder.encode(batch, shared, read)
        times = self._times(batch, read)
        last_read = np.flatnonzero(read)[-1:]
        if len(last_read):
            self.latest_time = int(times[last_read[0]])
        pids = self.partitions.assign(batch.type_ids, batch.columns, read)
        self.store.add(batch, times, letters, pids)
        active = self.encoder.active(read, letters,
                                     pids if self.partitions.partitioned else None,
                                     self.skip_inert)
        args = EvaluatorInput(active, pids, letters, times, batch.first_position,
                              self.window.epsilon or 0, self.window.kind is not None,
                              NO_LIMIT if self.post else self.limit, self.consume)
        return args, error, int(np.count_nonzero(read))

    def _finish(self, batch: Batch, error: EventError | None, n_read: int) -> None:
        if self.evaluator.pop_reclaimed():
            self._forget_partitions()
            self.store.prune(self.evaluator.last_tau)
        self.input.consumed(batch, batch.n)
        self.tick += n_read
        self._prune_window()
        if error is not None:
            raise error

    def _times(self, batch: Batch, read: np.ndarray) -> np.ndarray:
        if self.window.kind == "events":
            return self.tick + np.cumsum(read, dtype=np.int64) - 1
        if self.time_order is not None:
            return self.time_order.times(batch, read)
        return np.zeros(batch.n, dtype=np.int64)
