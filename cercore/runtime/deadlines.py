"""Absence with a span in time: ``φ ; ABSENT(ψ) WITHIN T`` (a deadline, ``DeadlineQueue``)
and ``ABSENT(ψ) WITHIN T ; φ`` (a look back, ``LookbackIndex``).

A complex event of φ that ends at time t is *pending* until event time passes t + T: it is
reported then (on the first event the query reads whose time is after t + T, or on
``advance(u)`` with u > t + T), unless a ψ event of its partition arrives first (time ≤ t + T).
Since T is fixed and event time never goes back, deadlines come in the order the complex
events were found: one FIFO queue fires them, and a ψ event drops every pending complex event of
its partition (all of them are older than it and not yet due) -- O(1) amortised per event and
per complex event, whatever T. ``flush()`` fires nothing: at the end of a finite input a
deadline after the last event's time is not known to have passed (``advance`` says it has).
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque

from cercore.runtime.output import ComplexEvent, Event


class _Pending:
    """One complex event waiting for its deadline (``alive`` False once fired or dropped)."""

    __slots__ = ("alive", "ce", "deadline", "pid")

    def __init__(self, ce: ComplexEvent, deadline: int, pid: int) -> None:
        self.ce = ce
        self.deadline = deadline
        self.pid = pid
        self.alive = True


class DeadlineQueue:
    """The pending complex events: in deadline order, and per partition (the live ones, also
    in deadline order) for dropping."""

    def __init__(self, span: int) -> None:
        self.span = span
        self.queue: deque[_Pending] = deque()
        self.by_partition: dict[int, deque[_Pending]] = {}  # only partitions with live ones
        self.n_pending = 0
        # a heap by start (dead entries popped lazily), built the first time it is asked for:
        # only Spark's plans ask, the engine alone never pays for it
        self.starts: list[tuple[int, int, _Pending]] | None = None
        self.added = 0  # (a tie-break for the heap)

    def add(self, ce: ComplexEvent, time: int, pid: int) -> None:
        """``ce`` (of partition ``pid``) ends at event time ``time``: due after time + T."""
        entry = _Pending(ce, time + self.span, pid)
        self.queue.append(entry)
        mine = self.by_partition.get(pid)
        if mine is None:
            mine = self.by_partition[pid] = deque()
        mine.append(entry)
        self.n_pending += 1
        if self.starts is not None:
            self.added += 1
            heapq.heappush(self.starts, (ce.start, self.added, entry))

    def add_many(self, ces: list, times: list[int], pids: list[int]) -> None:
        """``add`` for each complex event of a batch, in order (ends' times and partitions)."""
        span, queue, by_partition, starts = self.span, self.queue, self.by_partition, self.starts
        for ce, time, pid in zip(ces, times, pids):
            entry = _Pending(ce, time + span, pid)
            queue.append(entry)
            mine = by_partition.get(pid)
            if mine is None:
                mine = by_partition[pid] = deque()
            mine.append(entry)
            if starts is not None:
                self.added += 1
                heapq.heappush(starts, (ce.start, self.added, entry))
        self.n_pending += len(ces)

    def next_deadline(self) -> int | None:
        """The earliest pending deadline (None: nothing pending): nothing fires before event
        time passes it."""
        queue = self.queue
        while queue and not queue[0].alive:
            queue.popleft()
        return queue[0].deadline if queue else None

    def oldest_start(self) -> int | None:
        """The first position of the oldest pending complex event (None: nothing pending): its
        events must stay available until it is reported or dropped. O(log n) amortised."""
        if self.starts is None:
            self.starts = []
            for entry in self.queue:
                if entry.alive:
                    self.added += 1
                    self.starts.append((entry.ce.start, self.added, entry))
            heapq.heapify(self.starts)
        starts = self.starts
        while starts and not starts[0][2].alive:
            heapq.heappop(starts)
        return starts[0][0] if starts else None

    def fire(self, now: int) -> list[ComplexEvent]:
        """Event time is ``now`` (or a watermark at ``now``): the pending complex events whose
        deadline is before it, in deadline order."""
        queue = self.queue
        out = []
        while queue and queue[0].deadline < now:
            entry = queue.popleft()
            if entry.alive:
                entry.alive = False
                self.n_pending -= 1
                out.append(entry.ce)
                mine = self.by_partition[entry.pid]
                mine.popleft()  # the oldest live one of its partition: this one
                if not mine:
                    del self.by_partition[entry.pid]
        return out

    def waiting(self, pid: int) -> bool:
        """Whether partition ``pid`` has pending complex events (a ψ event matters)."""
        return pid in self.by_partition

    def drop(self, pid: int) -> None:
        """A ψ event of partition ``pid`` arrived (after ``fire`` at its time): every pending
        complex event of that partition is ruled out."""
        for entry in self.by_partition.pop(pid, ()):
            entry.alive = False
            self.n_pending -= 1

    # ---- pickling: complex events as plain data (their store view stays behind) --------------
    def __getstate__(self) -> dict:
        return {"span": self.span,
                "pending": [(_as_data(e.ce), e.deadline, e.pid) for e in self.queue if e.alive]}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["span"])
        for data, deadline, pid in state["pending"]:
            entry = _Pending(_from_data(*data), deadline, pid)
            self.queue.append(entry)
            self.by_partition.setdefault(pid, deque()).append(entry)
            self.n_pending += 1


def _as_data(ce: ComplexEvent) -> tuple:
    return (ce.start, ce.end, tuple(ce.positions), ce.start_time, ce.end_time,
            [(e.type, e.position, dict(e.attributes)) for e in ce.events], dict(ce.bindings))


class _Stored:
    """Events and bindings of a complex event restored from a pickle."""

    def __init__(self, events: list[tuple], bindings: dict) -> None:
        self.events = {p: Event(t, p, a) for t, p, a in events}
        self.bindings = bindings

    def event(self, position: int) -> Event:
        return self.events[position]

    def bind(self, ce) -> dict:
        return self.bindings


def _from_data(start, end, positions, start_time, end_time, events, bindings) -> ComplexEvent:
    stored = _Stored(events, bindings)
    return ComplexEvent(start, end, positions, start_time, end_time, stored.event, stored.bind)


class LookbackIndex:
    """``ABSENT(ψ) WITHIN T ; φ``: per partition, the positions and times of its recent ψ
    events. A complex event of φ that starts at position s, at time ts, is ruled out when the
    last ψ event of its partition before s has time >= ts - T (times never go back, so the
    last one is the latest). With a window ε, a complex event reported from now on starts at or
    after now - ε, so entries older than now - ε - T go: memory bounded by the window, whatever
    the number of partitions -- ``expire_all`` drops them in every partition, also in those
    that see no ψ event again (``arrivals``: every kept entry's (time, partition), in time
    order, so each goes in O(1) amortised)."""

    def __init__(self, span: int, window: int | None) -> None:
        self.span = span
        self.window = window  # ε in the same units, None: no time window (nothing expires)
        self.positions: dict[int, list[int]] = {}
        self.times: dict[int, list[int]] = {}
        self.heads: dict[int, int] = {}  # per partition, its first entry still kept
        self.arrivals: deque[tuple[int, int]] = deque()

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if "arrivals" not in state:  # pickled before ``arrivals`` existed
            self.arrivals = deque(sorted((t, pid) for pid, times in self.times.items()
                                         for t in times[self.heads[pid]:]))

    def add(self, pid: int, position: int, time: int) -> None:
        """A ψ event of partition ``pid``."""
        if pid not in self.positions:
            self.positions[pid], self.times[pid], self.heads[pid] = [], [], 0
        self.positions[pid].append(position)
        self.times[pid].append(time)
        if self.window is not None:
            self.arrivals.append((time, pid))

    def expire_all(self, now: int) -> None:
        """Event time has reached ``now``: drop, in every partition, the entries no complex
        event reported from then on can look back to."""
        arrivals = self.arrivals
        if not arrivals:
            return
        horizon = now - self.window - self.span
        while arrivals and arrivals[0][0] < horizon:
            self.expire(arrivals.popleft()[1], now)

    def expire(self, pid: int, now: int) -> None:
        """Drop partition ``pid``'s entries no complex event reported from time ``now`` on
        can look back to."""
        if self.window is None or pid not in self.times:
            return
        times, head = self.times[pid], self.heads[pid]
        horizon = now - self.window - self.span
        while head < len(times) and times[head] < horizon:
            head += 1
        if head == len(times):
            del self.positions[pid], self.times[pid], self.heads[pid]
        elif head > 64 and 2 * head > len(times):  # compact now and then: O(1) amortised
            self.positions[pid] = self.positions[pid][head:]
            self.times[pid] = times[head:]
            self.heads[pid] = 0
        else:
            self.heads[pid] = head

    def rules_out(self, pid: int, start: int, start_time: int) -> bool:
        """Whether a ψ event of partition ``pid`` lies before position ``start`` within the
        span before ``start_time``."""
        positions = self.positions.get(pid)
        if positions is None:
            return False
        k = bisect.bisect_left(positions, start, self.heads[pid]) - 1
        return k >= self.heads[pid] and self.times[pid][k] >= start_time - self.span
