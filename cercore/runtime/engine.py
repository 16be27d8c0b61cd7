"""The engine: input batches -> letters, window times and partition ids -> evaluator -> the
post-evaluation chain -> complex events. One engine evaluates one compiled query over one
stream; every way events arrive (a batch, arrays, one event) runs the same pipeline.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from functools import partial
from typing import Any

from cercore.automata.determinize import LazyDeterminiser
from cercore.errors import ConfigError, EventError
from cercore.input import SKIPPED, Batch, EventInput
from cercore.input.options import EngineOptions
from cercore.input.order import TimeOrder
from cercore.input.source import checked_watermark
from cercore.interface.constants import INT64_MIN, NO_PARTITION, NOT_READ
from cercore.interface.evaluator import CompiledPlan, Evaluator
from cercore.runtime import slices
from cercore.runtime.backend import Backend
from cercore.runtime.bindings import ComplexEventBindings
from cercore.runtime.decoded import DecodedInput
from cercore.runtime.event_predicates import IncrementalCheck, between_events
from cercore.runtime.intake import Intake, order_attribute
from cercore.runtime.letters import Alphabet, LetterEncoder
from cercore.runtime.lifecycle import StreamEngine
from cercore.runtime.output import ComplexEvent, MatchArrays
from cercore.runtime.pipeline import pipelined
from cercore.runtime.post import PostChain
from cercore.runtime.shards import ShardedEvaluator

__all__ = ["NO_PARTITION", "Engine"]

# CONSUME BY codes (without PARTITION BY, CONSUME BY PARTITION is CONSUME BY ANY: one partition)
_CONSUME = {None: 0, "NONE": 0, "ANY": 1, "PARTITION": 2}


class Engine(StreamEngine, DecodedInput):
    """Evaluates a compiled query over a stream, incrementally.

    Create it with ``CompiledQuery.engine()``. Feed events with ``process`` (an iterable, an
    Arrow table or a pandas DataFrame) or ``push`` (one event); both return the complex events
    each event completes, as soon as it arrives."""

    slicing = slices.SliceHooks  # (what T-CER slices need from a CEQL engine)

    def __init__(self, query: CompiledPlan, options: EngineOptions = EngineOptions.DEFAULT
                 ) -> None:
        self.query, self.analysed, self.schema, self.options = \
            query, query.analysed, query.schema, options
        a = self.analysed
        self.encoder = LetterEncoder(Alphabet.of_query(a))
        self.window = window = a.window
        # NEXT/LAST/MAX under a window, or with predicates between events: the engine selects
        # among the evaluator's complex events (runtime/selection); else the automaton ranks
        selects = query.ranking_strategy \
            if window.kind is not None or a.checked_predicates else None
        self.det = LazyDeterminiser(query.cea, None if a.checked_predicates
                                    else query.ranking_strategy, per_start=selects is not None)
        self.post = PostChain(a, selects, self.encoder)
        self.order_attribute = order_attribute(a)  # (event time never goes backwards)
        self.input = EventInput(self.schema, options, self.order_attribute)
        self.intake = Intake.of(a, self.encoder, self.input)
        self.partitions, self.store = self.intake.partitions, self.intake.store
        self.consume = _CONSUME[a.query.consume]
        # run_one's fixed arguments: window length, windowed, LIMIT, CONSUME BY
        self._step = (window.epsilon or 0, window.kind is not None, self.post.evaluator_limit,
                      self.consume)
        backend = Backend(options.backend)
        # predicates between events: checked by the evaluator while it enumerates, over the
        # values of the attributes they read (fed and pruned with the store; typed arrays
        # for the compiled check)
        self.event_check = between_events(query, self.encoder, self.store, backend.compiled)
        self._bindings = ComplexEventBindings(
            query.cea, {x.id: x.variables for x in a.atoms}, self.encoder.atom_masks,
            a.query.projection, NOT_READ, self.event_check)
        self._use(backend)

    def _use(self, backend: Backend, state: Any = None, shards: int | None = None) -> None:
        """Run on ``backend`` from now on, on ``shards`` evaluators (default: as many as
        ``state`` has), from the evaluator state ``state`` if given: the one place the backend
        is installed."""
        shards = shards or (len(state) if type(state) is list else 1)
        self.kernels, self.backend = backend, backend.name  # ("python" | "cython")
        self.options = dataclasses.replace(self.options, backend=backend.name)
        if shards == 1:
            self.evaluator = backend.evaluator(self.det, self.encoder)
        else:  # (each shard keeps its own determiniser: its state's table numbers its states)
            dets = getattr(self.evaluator, "dets", None) or [self.det.fresh()
                                                             for _ in range(shards)]
            self.evaluator = ShardedEvaluator(lambda d: backend.evaluator(d, self.encoder), dets)
        if state is not None:
            self.evaluator.from_state(state)
        self._attach(self.evaluator)

    def _attach(self, evaluator: Evaluator) -> None:
        """The engine's callbacks (an evaluator pickles none): reclamation reports, and the
        check of predicates between events while it enumerates."""
        evaluator.on_reclaim = self.intake.reclaimed
        check = self.event_check
        if check is not None:
            evaluator.check_between(check.plan, IncrementalCheck(
                check.plan, check.values, partial(check.holds_in, self.store, self._bindings)))

    @property
    def time_order(self) -> TimeOrder | None:
        """The check of event time on ``order_attribute`` (None: no event time)."""
        return self.intake.time_order

    # ---- public API ---------------------------------------------------------------------------
    def process(self, events: Any, stream: str | None = None, *, workers: int | None = None
                ) -> Iterator[ComplexEvent]:
        """Evaluate ``events`` (iterable of ``(type, attrs)`` / Event, pyarrow Table or
        RecordBatch, pandas DataFrame); yield complex events as each one completes. ``stream``
        tags every event with its stream (tabular input may name each event's stream in
        ``stream_column``); untagged events belong to every stream that declares their type.
        With a reorder slack, events are evaluated once the slack has passed them (``flush()``
        evaluates the rest). A list, a tuple or a table is evaluated in batches (bulk speed);
        any other iterable (a live feed) one event at a time: every complex event is yielded
        before the next event is asked for. ``workers``: as for ``process_arrays``."""
        runs = self._split(events, workers)
        return slices.sliced_feed(self, events, stream, runs) if runs > 1 else self._feed(
            events, stream)

    def process_arrays(self, events: Any, stream: str | None = None, *,
                       workers: int | None = None) -> MatchArrays:
        """``process`` in bulk: every complex event of ``events`` as numpy arrays (see
        ``MatchArrays``; ``.to_arrow()`` gives a pyarrow Table), with no Python object per
        complex event. Not available with a reorder slack. Under ``ABSENT(ψ) WITHIN T`` the
        arrays hold what ``process`` would yield for the same input: complex events of earlier
        input whose deadline it passes, and not yet those whose deadline it does not (they
        come with later input or ``advance``).

        ``workers``: threads evaluating a table in T-CER slices (``runtime/slices.py``), else
        a keyed query's partitions (``runtime/shards.py``); the same output. None: the cores
        for a large table slices can cut, else one. A fresh engine splits on its first call."""
        runs = self._split(events, workers)
        if self.input.reorder is not None:
            raise ConfigError("process_arrays does not support a reorder slack; use process")
        self._usable()
        if runs > 1 and (out := slices.evaluate_in_slices(self, events, stream, runs,
                                                          slices.arrays_of)):
            return MatchArrays.concat([part for run in out for part in run], threads=runs)
        if isinstance(self.evaluator, ShardedEvaluator) and not self.post.spans:
            return MatchArrays.concat(pipelined(self, events, stream))
        return MatchArrays.concat([self._run_arrays(b)
                                   for b in self.input.batches(events, stream)])

    def flush(self) -> list[ComplexEvent]:
        """End of stream: evaluate the events a reorder slack still holds back (no-op
        without one) and return the complex events they complete."""
        self._usable()
        return self._evaluate(self.input.flush())

    def advance(self, t: int) -> list[ComplexEvent]:
        """A watermark: no event earlier than time ``t`` follows. Evaluates the events a
        reorder slack holds up to ``t`` and returns the complex events they complete; from
        now on an event before ``t`` is late (raised, or skipped and counted)."""
        self._usable()
        t = checked_watermark(t, self.time_order)  # (a timestamp: its units)
        return self._evaluate(self._watermark(t)) + self.fire_deadlines(t)

    def fire_deadlines(self, t: int) -> list[ComplexEvent]:
        """Event time has reached ``t``: the complex events of ``φ ; ABSENT(ψ) WITHIN T`` due
        before ``t`` (``advance(t)``'s, without making earlier events late: for a caller that
        knows event time another way, e.g. Spark's watermark)."""
        return self.post.fire(t)

    @property
    def stats(self) -> dict[str, Any]:
        """Counters: events received, read, skipped (by reason), complex events, live
        partitions, tECS nodes, automaton states, letters, the evaluator's ``work`` counts."""
        skips, ev = self.input.skips, self.evaluator
        return {"events": self.position, "read": self.intake.tick, "skipped": skips.count,
                "skipped_by_reason": dict(skips.by_reason), "complex_events": self.post.reported,
                "partitions": len(ev.live_partitions()), "tecs_nodes": ev.memory_nodes(),
                "dfa_states": getattr(ev, "n_states", self.det.n_states),
                "letters": self.encoder.n_letters, "backend": self.backend,
                "work": ev.work_counts()}

    def _split(self, events: Any, workers: int | None) -> int:
        """How many T-CER runs evaluate ``events`` (1: none; key shards installed if any)."""
        runs, k, _ = slices.workers_plan(self, None if self.position else workers, events)
        if k > 1 and not isinstance(self.evaluator, ShardedEvaluator):
            self._use(self.kernels, shards=k)
        return runs

    # ---- pickling and backend moves ------------------------------------------------------------
    # (the evaluator pickles itself in the backend-neutral format, cercore.interface.state)
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

    # ---- one event at a time (the record path) ----------------------------------------------
    def _record(self, typ: Any, attrs: Any, stream: int) -> list | Iterator:
        """Evaluate one event -- what ``_run`` does for a batch, for one event (an EventError in
        raise mode leaves the event unconsumed, as in a batch)."""
        tid, row, pos = self.input.take_one(typ, attrs, stream)
        try:
            return self._evaluate_one(tid, row, stream, pos)
        except EventError:  # (late, in raise mode: not consumed, as in a batch)
            self.input.put_back(pos)
            raise

    def _evaluate_one(self, tid: int, row: dict | None, stream: int, pos: int) -> list | Iterator:
        """``_record`` after decoding: event ``pos`` (consumed) of type ``tid`` (SKIPPED:
        skipped); its time is checked here unless a MultiEngine checked it. Its complex
        events, as a list (an iterator only when they overflow the evaluator's output
        buffer)."""
        intake, post, encoder = self.intake, self.post, self.encoder
        reads, order = encoder.reads, intake.time_order
        if tid == SKIPPED or not reads.type_list[tid] or (
                reads.stream_list is not None and not reads.stream_list[stream + 1]):
            return []  # (not read by the query)
        if order is not None and intake.checks_time and not order.check_one(tid, row, pos):
            return []
        now = INT64_MIN if order is None or order.last is None else order.last
        letter = encoder.record_letter(tid, row, stream)
        pid, out = None, []
        if post.spans:  # an absence span: what is due, and a ψ event's own part
            out = post.before_event(now)
            mask = encoder.atom_masks[letter]
            if mask & post.spans:
                pid = post.psi_event(mask, pos, now, lambda: self.partitions.assign_one(tid, row))
        t = intake.tick if self.window.kind == "events" else now if order is not None else 0
        intake.tick += 1
        if intake.skip_inert and not encoder.relevant[letter]:
            return out  # it can change nothing: not stepped, not stored
        if pid is None:
            pid = self.partitions.assign_one(tid, row)
        if pid == NO_PARTITION:
            return out
        intake.latest_time = t
        opened = self.store.add_record(pos, tid, row, t, letter, pid)
        view = self.store.view(self._bindings)
        epsilon, windowed, limit, consume = self._step  # (a positional call: the fast one)
        found = self.evaluator.run_one(pid, letter, pos, t, epsilon, windowed, limit, consume,
                                       view)
        if found:
            found = post.event(found, pid, view, now)
            out = out + found if out else found
        if opened or intake.reclaimed_before is not None:
            intake.settle(opened, self._held)
        return out

    # ---- per batch ----------------------------------------------------------------------------
    # ``shared``: leaf results cached across the queries of a MultiEngine (None: alone);
    # ``raises``: False when the caller (a MultiEngine) raises the batch's error itself
    def _run(self, batch: Batch, shared: dict | None = None,
             raises: bool = True) -> Iterator[ComplexEvent]:
        args, error = self.intake.batch(batch, shared, self.kernels.letters, *self._step[2:])
        view = self.store.view(self._bindings)
        yield from self.post.batch(self.evaluator.run(args, view=view), self.evaluator, batch,
                                   args, view)
        self._finish(batch, error if raises else None)

    def _run_arrays(self, batch: Batch, shared: dict | None = None,
                    raises: bool = True) -> MatchArrays:
        if self.post.spans:  # (a span decides per complex event: what ``_run`` reports)
            return MatchArrays.of(list(self._run(batch, shared, raises)),
                                  self.schema.time_unit)
        args, error = self.intake.batch(batch, shared, self.kernels.letters, *self._step[2:])
        out = self.post.arrays(self.evaluator, args, self.store.view(self._bindings))
        self._finish(batch, error if raises else None)
        return out

    def _finish(self, batch: Batch, error: EventError | None) -> None:
        self.post.done(self.evaluator)
        self.input.consumed(batch, batch.n)
        self.intake.settle(True, self._held)
        if error is not None:
            raise error

    # ---- memory -------------------------------------------------------------------------------
    def _held(self) -> set[int]:
        """The partitions something still holds: a partial match, a look back, a deadline."""
        return self.evaluator.live_partitions() | self.post.holds()

    def compact(self) -> None:
        """Under a time or event window: reclaim now every partial match and stored event the
        window has left behind (a run does so when its arena fills), so that a pickled engine
        -- a streaming key's state, saved each micro-batch -- carries only live state."""
        self._usable()
        start = self.intake.window_start()
        if start is not None:
            self.evaluator.compact(start)
            self.intake.settle(False, self._held)
