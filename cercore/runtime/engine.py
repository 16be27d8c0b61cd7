"""The engine: input batches -> letters, window times and partition ids -> evaluator -> the
post-evaluation chain -> complex events. One engine evaluates one compiled query over one
stream; every way events arrive (a batch, arrays, one event) runs the same pipeline.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from cercore.automata.determinize import LazyDeterminiser
from cercore.errors import ConfigError, EventError
from cercore.input import Batch, EventInput, ReadFilter
from cercore.input.options import EngineOptions
from cercore.input.order import TimeOrder
from cercore.input.source import checked_watermark, in_hand
from cercore.interface.constants import INT64_MIN, NO_PARTITION, NOT_READ, window_start
from cercore.interface.evaluator import CompiledPlan, Evaluator, EvaluatorInput
from cercore.runtime.backend import Backend
from cercore.runtime.bindings import ComplexEventBindings
from cercore.runtime.event_predicates import IncrementalCheck, between_events
from cercore.runtime.intake import Intake
from cercore.runtime.letters import Alphabet, LetterEncoder, inert_letters_skippable
from cercore.runtime.lifecycle import StreamEngine
from cercore.runtime.output import ComplexEvent, MatchArrays
from cercore.runtime.partitions import PartitionIndex
from cercore.runtime.post import PostChain
from cercore.runtime.store import EventStore

__all__ = ["NO_PARTITION", "Engine"]

# CONSUME BY codes (without PARTITION BY, CONSUME BY PARTITION is CONSUME BY ANY: one partition)
_CONSUME = {None: 0, "NONE": 0, "ANY": 1, "PARTITION": 2}


class Engine(StreamEngine):
    """Evaluates a compiled query over a stream, incrementally.

    Create it with ``CompiledQuery.engine()``. Feed events with ``process`` (an iterable, an
    Arrow table or a pandas DataFrame) or ``push`` (one event); both return the complex events
    each event completes, as soon as it arrives.
    """

    def __init__(self, query: CompiledPlan, options: EngineOptions = EngineOptions.DEFAULT
                 ) -> None:
        self.query, self.analysed, self.schema = query, query.analysed, query.schema
        self.options = options
        a = self.analysed
        self.encoder = LetterEncoder(Alphabet.of_query(a))
        self.window = window = a.window
        # NEXT/LAST/MAX under a window, or with predicates between events: the engine selects
        # among the complex events the evaluator reports (cercore.runtime.selection); else the
        # automaton ranks the runs
        selects = query.ranking_strategy \
            if window.kind is not None or a.checked_predicates else None
        self.det = LazyDeterminiser(query.cea, None if a.checked_predicates
                                    else query.ranking_strategy, per_start=selects is not None)
        self.post = PostChain(a, selects, self.encoder)
        self.report_time = self.schema.time_attribute
        # event time never goes backwards: checked on the window's attribute, or without a
        # time window on the schema's time attribute (late events are never accepted silently)
        self.order_attribute = (window.attribute if window.kind in ("time", "attr") else None) \
            or self.report_time
        self.input = EventInput(self.schema, options, self.order_attribute)
        self.partitions = PartitionIndex(self.schema, a.partition_by)
        self.store = EventStore(self.schema, self.report_time, a.attribute_projection,
                                self.input.decoder.time_form)
        self.intake = Intake(window, self.encoder, self.partitions, self.store,
                             self.input.time_order(self.order_attribute)
                             if self.order_attribute is not None else None,
                             inert_letters_skippable(a))
        self.consume = _CONSUME[a.query.consume]
        self._reclaimed_before: int | None = None  # reported by the evaluator, not yet acted on
        backend = Backend(options.backend)
        # predicates between events: checked by the evaluator while it enumerates, over the
        # values of the attributes they read (fed and pruned with the store; typed arrays
        # for the compiled check)
        self.event_check = between_events(query, self.encoder, self.store, backend.compiled)
        self._bindings = ComplexEventBindings(
            query.cea, {x.id: x.variables for x in a.atoms}, self.encoder.atom_masks,
            a.query.projection, NOT_READ, self.event_check)
        self._use(backend)

    def _use(self, backend: Backend, state: Any = None) -> None:
        """Run on ``backend`` from now on (with the evaluator state ``state``, if given): the
        one place the backend is installed."""
        self.kernels = backend
        self.options = dataclasses.replace(self.options, backend=backend.name)
        self.evaluator = backend.evaluator(self.det, self.encoder)
        if state is not None:
            self.evaluator.from_state(state)
        self._attach(self.evaluator)

    def _attach(self, evaluator: Evaluator) -> None:
        """The engine's callbacks (an evaluator pickles none): reclamation reports, and the
        check of predicates between events while it enumerates."""
        evaluator.on_reclaim = self._reclaimed
        check = self.event_check
        if check is not None:
            evaluator.check_between(check.plan, IncrementalCheck(
                check.plan, check.values, lambda start, end, positions: check.holds(
                    self.store.view(self._bindings), start, end, positions)))

    @property
    def backend(self) -> str:
        """The backend that runs this engine ("python" | "cython")."""
        return self.kernels.name

    @property
    def time_order(self) -> TimeOrder | None:
        """The check of event time on ``order_attribute`` (None: no event time)."""
        return self.intake.time_order

    @property
    def skip_inert(self) -> bool:
        """Whether events that satisfy no atom are not stepped (``inert_letters_skippable``;
        set False to step every event)."""
        return self.intake.skip_inert

    @skip_inert.setter
    def skip_inert(self, value: bool) -> None:
        self.intake.skip_inert = value

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
        return self.post.fire(t)

    @property
    def deadlines(self):
        """The complex events waiting for their deadline (a ``DeadlineQueue``; None without
        ``φ ; ABSENT(ψ) WITHIN T``)."""
        return self.post.deadlines

    @property
    def stats(self) -> dict[str, Any]:
        """Counters: events received, read by the query, skipped (with reasons), complex events,
        live partitions, tECS nodes, automaton states and letters, and the evaluator's work
        counts (``work``: transitions, nodes created, union-list operations, enumeration; see
        ``PythonEvaluator.work_counts``)."""
        skips = self.input.skips
        return {"events": self.position, "read": self.intake.tick, "skipped": skips.count,
                "skipped_by_reason": dict(skips.by_reason), "complex_events": self.post.reported,
                "partitions": len(self.evaluator.live_partitions()),
                "tecs_nodes": self.evaluator.memory_nodes(), "dfa_states": self.det.n_states,
                "letters": self.encoder.n_letters, "backend": self.backend,
                "work": self.evaluator.work_counts()}

    # ---- pickling and backend moves ------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """The evaluator pickles itself in the backend-neutral format
        (``cercore.interface.state``). Refused while a batch is half done (see ``_usable``)."""
        self._usable()
        return self.__dict__.copy()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._attach(self.evaluator)

    def to_backend(self, backend: str) -> Engine:
        """A copy of this engine, continuing exactly where it stopped, on ``backend``
        ("auto" | "python" | "cython"). This engine is left unchanged."""
        import pickle

        target = Backend(backend)
        clone = pickle.loads(pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL))
        if target != clone.kernels:
            clone._use(target, clone.evaluator.to_state())
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
        self.intake.time_order, self.intake.checks_time = order, False

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
        """Evaluate one event -- what ``_run`` does for a batch, for one event: validate it,
        check its time, compute its letter and partition, store it, step the evaluator once.
        An EventError in raise mode leaves the event unconsumed, as in a batch."""
        pos = self.input.position
        tid, row = self.input.decoder.decode_one(typ, attrs, stream, pos)
        return self._evaluate_one(tid, row, stream, pos)

    def _evaluate_one(self, tid: int, row: dict | None, stream: int, pos: int) -> list | Iterator:
        """``_record`` after decoding: event ``pos`` of type ``tid`` (SKIPPED: skipped); its
        time is checked here unless a MultiEngine checked it. Its complex events, as a list
        (an iterator only when they overflow the evaluator's output buffer)."""
        intake, post = self.intake, self.post
        now = intake.admit(tid, row, stream, pos)
        self.input.consumed_one(pos)
        if now is None:
            return []
        out = post.before_event(now) if post.spans else []
        letter = intake.letter(tid, row, stream)
        mask = self.encoder.atom_masks[letter]
        pid = None
        if mask & post.spans and post.needs_partition():  # a ψ event of an absence span
            pid = self.partitions.assign_one(tid, row)
            if pid != NO_PARTITION:
                post.psi_event(pid, mask, pos, now)
        stored = intake.store_one(tid, row, pos, letter, now, pid)
        if stored is None:
            return out
        pid, t, opened = stored
        window = self.window
        view = self.store.view(self._bindings)
        found = self.evaluator.run_one(pid, letter, pos, t, window.epsilon or 0,
                                       window.kind is not None, post.evaluator_limit,
                                       self.consume, view)
        if found:
            found = post.event(found, pid, view, now)
            out = out + found if out else found
        self._settle(opened)
        return out

    # ---- per batch ----------------------------------------------------------------------------
    # ``shared``: leaf results cached across the queries of a MultiEngine (None: alone);
    # ``raises``: False when the caller (a MultiEngine) raises the batch's error itself
    def _run(self, batch: Batch, shared: dict | None = None,
             raises: bool = True) -> Iterator[ComplexEvent]:
        args, error = self._prepare(batch, shared)
        view = self.store.view(self._bindings)
        yield from self.post.batch(self.evaluator.run(args, view=view), self.evaluator, batch,
                                   args, view)
        self._finish(batch, error if raises else None)

    def _run_arrays(self, batch: Batch, shared: dict | None = None,
                    raises: bool = True) -> MatchArrays:
        if self.post.spans:  # (a span decides per complex event: what ``_run`` reports)
            return MatchArrays.of(list(self._run(batch, shared, raises)),
                                  self.schema.time_unit)
        args, error = self._prepare(batch, shared)
        out = self.post.arrays(self.evaluator.run_arrays(args),
                               self.store.view(self._bindings))
        self._finish(batch, error if raises else None)
        return out

    def _prepare(self, batch: Batch, shared: dict | None = None
                 ) -> tuple[EvaluatorInput, EventError | None]:
        return self.intake.batch(batch, shared, self.kernels.letters, self.post.evaluator_limit,
                                 self.consume)

    def _finish(self, batch: Batch, error: EventError | None) -> None:
        self.input.consumed(batch, batch.n)
        self._settle(True)
        if error is not None:
            raise error

    # ---- memory -------------------------------------------------------------------------------
    def _reclaimed(self, tau: int) -> None:
        """The evaluator reclaimed the partial matches that start before ``tau`` (acted on
        once the event or batch is done: its complex events may still need their partitions)."""
        self._reclaimed_before = tau

    def _settle(self, window_moved: bool) -> None:
        """After an event or a batch: forget what the evaluator reported it no longer holds --
        the keys of partitions nothing holds any more (no partial match, nothing a look back
        or a deadline needs; a key that comes back gets a new partition id) and the stored
        events before its window start -- and, when the window moved, the stored events it
        has left behind (memory under WITHIN stays flat however events arrive)."""
        tau = self._reclaimed_before
        if tau is not None:
            self._reclaimed_before = None
            self.partitions.forget(self.evaluator.live_partitions() | self.post.holds())
            self.store.prune(tau)
        latest = self.intake.latest_time
        if window_moved and self.window.kind is not None and latest != INT64_MIN:
            self.store.prune(window_start(latest, self.window.epsilon or 0))

    def compact(self) -> None:
        """Under a time or event window: reclaim now every partial match and stored event
        the window has left behind (a run does so when its arena fills), so that a pickled
        engine -- a streaming key's state, saved each micro-batch -- carries only live
        state. Complex events are unchanged."""
        self._usable()
        latest = self.intake.latest_time
        if self.window.kind is None or latest == INT64_MIN:
            return
        self.evaluator.compact(window_start(latest, self.window.epsilon or 0))
        self._settle(False)
