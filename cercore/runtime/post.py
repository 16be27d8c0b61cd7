"""After the evaluator: the one road a complex event takes to the caller, whichever way its
events arrived (a batch, a batch as arrays, one event; a ``MultiEngine`` runs each query's
complex events through that query's engine, so through this road too).

The stages, in order (the predicates between events come before them all, inside the
evaluator's enumeration):

1. **selection** (NEXT/LAST/MAX under a window, or with predicates between events): the
   winners among the complex events of one end (``cercore.runtime.selection``), then LIMIT;
2. **look back** (``ABSENT(ψ) WITHIN T ; φ``): a complex event that a ψ event of its partition
   precedes within T is dropped (``LookbackIndex``);
3. **deadline** (``φ ; ABSENT(ψ) WITHIN T``): a complex event waits until event time passes its
   deadline, and is dropped if a ψ event of its partition comes first (``DeadlineQueue``);
4. **count**: what is reported (``reported``, the engine's ``stats["complex_events"]``).

Without a strategy or an absence span, complex events go straight through (the evaluator has
applied LIMIT), counted by the evaluator's own counter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import partial

import numpy as np

from cercore.input import Batch
from cercore.interface.constants import NO_LIMIT, NO_PARTITION, NOT_READ
from cercore.interface.evaluator import Evaluator, EvaluatorInput
from cercore.runtime.deadlines import DeadlineQueue, LookbackIndex
from cercore.runtime.output import MatchArrays
from cercore.runtime.selection import select_arrays, select_stream
from cercore.runtime.shards import ShardedArrays, ShardedEvaluator

__all__ = ["PostChain"]


class PostChain:
    """The stages after the evaluator for one engine (see the module doc)."""

    def __init__(self, analysed, selects: str | None, encoder) -> None:
        q = analysed.query
        self.selects = selects  # the strategy the engine selects with (None: the automaton's)
        self.limit = NO_LIMIT if q.limit is None else int(q.limit)
        self.encoder = encoder  # (which letters satisfy the ψ atoms)
        self.reported = 0
        self._uncounted: int | None = None  # the evaluator's count when a direct batch began
        window = analysed.window
        deadline, lookback = analysed.deadline, analysed.lookback
        self.deadlines = None if deadline is None else DeadlineQueue(deadline.span)
        self.psi_bits = 0 if deadline is None else deadline.psi_bits
        self.deadline_attribute = None if deadline is None else deadline.attribute
        self.lookback = None if lookback is None else LookbackIndex(
            lookback.span, window.epsilon if window.kind in ("time", "attr") else None)
        self.lookback_bits = 0 if lookback is None else lookback.psi_bits
        self.lookback_attribute = None if lookback is None else lookback.attribute
        self.spans = self.psi_bits | self.lookback_bits  # 0: no absence span
        # the LIMIT the evaluator applies (none when selection comes first), and whether no
        # stage but the count applies (complex events go straight through)
        self.evaluator_limit = NO_LIMIT if selects is not None else self.limit
        self.direct = selects is None and not self.spans

    # ---- a batch ---------------------------------------------------------------------------
    def batch(self, found: Iterator, evaluator: Evaluator, batch: Batch, args: EvaluatorInput,
              view) -> Iterator:
        """The complex events of a batch, through every stage, as the evaluator yields them
        (a span decides per batch, so under one they come at the batch's end). Without a
        stage, the evaluator's own iterator (no layer per complex event): ``done`` counts."""
        if self.direct:
            self._uncounted = evaluator.reported
            return found
        return self._staged(found, batch, args, view)

    def done(self, evaluator: Evaluator) -> None:
        """A batch's complex events have all been taken: count those that went straight
        through (the evaluator counts what it yields)."""
        if self._uncounted is not None:
            self.reported += evaluator.reported - self._uncounted
            self._uncounted = None

    def _staged(self, found: Iterator, batch: Batch, args: EvaluatorInput, view) -> Iterator:
        if self.selects is not None:
            found = self._selected(found)
        if self.lookback is not None:
            found = self._lookback_batch(batch, args, found, view)
        if self.deadlines is not None:
            found = self._deadline_batch(batch, args, found)
        for ce in found:
            self.reported += 1
            yield ce

    def arrays(self, evaluator: Evaluator, args: EvaluatorInput, view
               ) -> MatchArrays | ShardedArrays:
        """A batch's complex events as arrays, from ``evaluator`` (no absence span: a span
        decides per complex event, so the engine takes ``batch`` then). Selection and times
        work per end, so a ``ShardedEvaluator`` runs them in each shard's thread."""
        if isinstance(evaluator, ShardedEvaluator):  # (merged by MatchArrays.concat)
            return self.submit(evaluator, args, view)()
        out = self._arrays(evaluator.run_arrays(args), view)
        self.reported += len(out[0])
        return MatchArrays(*out)

    def submit(self, evaluator: ShardedEvaluator, args: EvaluatorInput, view
               ) -> Callable[[], ShardedArrays]:
        """``arrays`` of a sharded evaluator, started (``ShardedEvaluator.submit``): the call
        returned waits for the shards and counts their complex events."""
        running = evaluator.submit(args, partial(self._arrays, view=view))

        def done() -> ShardedArrays:
            found = ShardedArrays(running(), evaluator)
            self.reported += len(found)
            return found

        return done

    def _arrays(self, found: tuple, view) -> tuple[np.ndarray, ...]:
        """Selection, then times: (start, end, offsets, positions, start_time, end_time)."""
        start, end, offsets, positions = found
        if self.selects is not None:
            start, end, offsets, positions = select_arrays(self.selects, start, end, offsets,
                                                           positions, self.limit, None)
        return start, end, offsets, positions, view.times(start), view.times(end)

    def _selected(self, found: Iterable) -> Iterator:
        """Selection: the strategy's winners among the complex events of each end, then
        LIMIT."""
        return select_stream(self.selects, found, self.limit)

    def _not_ruled_out(self, found: Iterable, partition_of: Callable, view) -> list:
        """Look back: the complex events no ψ event of their partition precedes within T."""
        lookback, attr = self.lookback, self.lookback_attribute
        return [ce for ce in found if not lookback.rules_out(
            partition_of(ce), ce.start, view.time_of(ce.start, attr))]

    def _psi_events(self, bits: int, args: EvaluatorInput) -> tuple[np.ndarray, np.ndarray]:
        """Which events of the batch are read, and the offsets of the ψ events (in a
        partition, satisfying an atom of ``bits``)."""
        letters, pids = args.letters, args.pids
        read = letters != NOT_READ
        satisfying = np.append(self.encoder.letters_satisfying(bits), False)
        return read, np.flatnonzero((pids != NO_PARTITION)
                                    & satisfying[np.where(read, letters, -1)])

    def _lookback_batch(self, batch: Batch, args: EvaluatorInput, found: Iterator,
                        view) -> list:
        """A batch under ``ABSENT(ψ) WITHIN T ; φ``: its ψ events recorded (they are looked up
        by position, so all at once), then φ's complex events that none rules out; then every
        partition drops the entries no later complex event needs."""
        lookback, attr = self.lookback, self.lookback_attribute
        first, pids = batch.first_position, args.pids
        times = batch.columns.values[attr]
        read, psi = self._psi_events(self.lookback_bits, args)
        for k, pid, t in zip(psi.tolist(), pids[psi].tolist(), times[psi].tolist()):
            lookback.add(pid, first + k, t)
        out = self._not_ruled_out(found, lambda ce: int(pids[ce.end - first]), view)
        last_read = np.flatnonzero(read)[-1:]
        if len(last_read):
            lookback.expire_all(int(times[last_read[0]]))
        return out

    def _deadline_batch(self, batch: Batch, args: EvaluatorInput, found: Iterator) -> list:
        """A batch under a deadline: what ``event`` does event by event, vectorised.
        Complex events pending from earlier batches meet the first ψ event of their partition
        in the batch (what was due before its time fires first), then what is due before
        the batch's last time fires (their deadlines come before every new one). Each new
        complex event of φ (end e, deadline d) is dropped when the next ψ event of its
        partition after e has time <= d, else reported now when the batch's last time is after
        d, else queued."""
        queue = self.deadlines
        first, pids = batch.first_position, args.pids
        times = batch.columns.values[self.deadline_attribute]
        read, psi = self._psi_events(self.psi_bits, args)
        last_read = np.flatnonzero(read)[-1:]
        last_time = int(times[last_read[0]]) if len(last_read) else None
        ces = list(found)
        ends = np.fromiter((ce.end - first for ce in ces), dtype=np.int64, count=len(ces))
        end_times, end_pids = times[ends], pids[ends]
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

    # ---- one event ---------------------------------------------------------------------------
    def before_event(self, now: int) -> list:
        """Event time reaches ``now`` (an event of that time is read): the complex events
        whose deadline is before it (reported now), and the look back forgets what is older
        than T."""
        if self.lookback is not None:
            self.lookback.expire_all(now)
        queue = self.deadlines
        if queue is None or not queue.queue or queue.queue[0].deadline >= now:
            return []  # (the common case, without a call)
        return self.fire(now)

    def psi_event(self, mask: int, position: int, now: int,
                  partition_of: Callable[[], int]) -> int | None:
        """A ψ event (satisfying the atoms ``mask``) at ``position``: drops its partition's
        complex events waiting for their deadline / is remembered by the look back. Its
        partition id (``partition_of()``), or None when nothing needs it (no look back,
        nothing waiting)."""
        if not self.lookback_bits and not self.deadlines.by_partition:
            return None
        pid = partition_of()
        if pid != NO_PARTITION:
            if mask & self.psi_bits:
                self.deadlines.drop(pid)
            if mask & self.lookback_bits:
                self.lookback.add(pid, position, now)
        return pid

    def event(self, found: list | Iterator, pid: int, view, now: int) -> list | Iterator:
        """One event's complex events (of partition ``pid``, at time ``now``), through every
        stage: a list, or an iterator when the evaluator's output overflowed its buffer."""
        if self.direct:
            if type(found) is list:
                self.reported += len(found)
                return found
            return self._counted(found)
        if self.selects is not None:
            found = list(self._selected(list(found)))
        if self.lookback is not None:
            found = self._not_ruled_out(found, lambda ce: pid, view)
        if self.deadlines is not None:
            for ce in found:
                self.deadlines.add(ce, now, pid)
            return []
        found = list(found)
        self.reported += len(found)
        return found

    def _counted(self, found: Iterator) -> Iterator:
        for ce in found:
            self.reported += 1
            yield ce

    # ---- time and memory -------------------------------------------------------------------
    def fire(self, t: int) -> list:
        """Event time has reached ``t``: the complex events whose deadline is before it."""
        if self.deadlines is None:
            return []
        due = self.deadlines.fire(t)
        self.reported += len(due)
        return due

    def holds(self) -> set[int]:
        """The partitions a stage still needs: recent ψ events of a look back, complex events
        waiting for their deadline."""
        held: set[int] = set()
        if self.lookback is not None:
            held |= set(self.lookback.positions)
        if self.deadlines is not None:
            held |= set(self.deadlines.by_partition)
        return held
