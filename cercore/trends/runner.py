"""The pure-Python trend runner (``cercore.interface.trends.TrendRunner``), the readable twin of
``cercore_fast.trends.Runner``: timestamp groups per partition, fixed sliding windows
``[k*slide, k*slide + size)`` and one reference aggregator per (window, partition).

Events are not kept: each timestamp group of a partition updates the aggregators of the
``ceil(size / slide)`` windows that contain it and is dropped. Events with equal timestamps
form one group (COGRA §2.1: events are strictly ordered), so the runner holds the current
timestamp's events until time moves on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cercore.interface.constants import NO_PARTITION
from cercore.interface.trends import IN_STREAM, Closed, TrendInput
from cercore.trends import reference
from cercore.trends.analysis import TrendPlan


def first_window(t: int, size: int, slide: int) -> int:
    """The first window containing time ``t``: the smallest k with k*slide + size > t."""
    return (t - size) // slide + 1


class PythonRunner:
    """Timestamp groups, windows and reference aggregators of one plan (see the module doc)."""

    backend = "python"

    def __init__(self, plan: TrendPlan, aggregators: Any = None) -> None:
        self.plan = plan
        self.aggregators = self.factory = aggregators or reference.Aggregators(plan)
        self.attrs = plan.value_attributes()
        # open windows in increasing k (a new event only opens windows after every open one):
        # k -> {partition id: aggregator}; k = 0 is the whole stream when there is no window
        self.open: dict[int, dict[int, Any]] = {}
        self.pending_time: int | None = None  # the current timestamp group, per partition
        self.pending: dict[int, list] = {}
        self._vars: dict[int, tuple[int, ...]] = {}  # variable mask -> variable ids

    def _var_ids(self, mask: int) -> tuple[int, ...]:
        vs = self._vars.get(mask)
        if vs is None:
            vs = self._vars[mask] = tuple(v for v in range(len(self.plan.vars))
                                          if (mask >> v) & 1)
        return vs

    # ---- TrendRunner --------------------------------------------------------------------------
    def feed(self, batch: TrendInput) -> list[Closed]:
        closed: list[Closed] = []
        state, times, pids = batch.state, batch.times.tolist(), batch.pids.tolist()
        masks = batch.vars.tolist()
        cols = batch.columns
        # one Python value per attribute and event, converted once per batch
        values = [(a, cols.values[a].tolist(), cols.valid[a].tolist()) for a in self.attrs]
        in_stream = (state == IN_STREAM).tolist()
        for k in np.flatnonzero(state).tolist():
            t = times[k]
            if t != self.pending_time:
                closed += self._time_moves(t)
            if in_stream[k]:
                attrs = {a: vals[k] if oks[k] else None for a, vals, oks in values}
                self._join(pids[k], self._var_ids(masks[k]), attrs)
        return closed

    def feed_one(self, t: int, pid: int, vars: int, row: dict | None) -> list[Closed]:
        closed = self._time_moves(t) if t != self.pending_time else []
        if pid != NO_PARTITION:
            self._join(pid, self._var_ids(vars), row)
        return closed

    def time_passes(self, t: int) -> list[Closed]:
        if self.pending_time is not None and t > self.pending_time:
            self._apply_pending()
        return self._close_until(t) if self.plan.window is not None else []

    def finish(self) -> list[Closed]:
        self._apply_pending()
        return self._close_until(None)

    def open_windows(self) -> dict[int, dict[int, Any]]:
        return self.open

    def pending_events(self) -> int:
        return sum(map(len, self.pending.values()))

    def live_partitions(self) -> set[int]:
        return {pid for parts in self.open.values() for pid in parts} | set(self.pending)

    # ---- the sequential part ----------------------------------------------------------------
    def _time_moves(self, t: int) -> list[Closed]:
        """An event at a new time ``t``: the current group is complete, and the windows that
        end by ``t`` close -- whether or not the event is in the stream I."""
        self._apply_pending()
        self.pending_time = t
        return self._close_until(t) if self.plan.window is not None else []

    def _join(self, pid: int, vs: tuple[int, ...], attrs: dict | None) -> None:
        group = self.pending.get(pid)
        if group is None:
            self.pending[pid] = [(vs, attrs)]
        else:
            group.append((vs, attrs))

    def _apply_pending(self) -> None:
        """Update the aggregators of every window holding the current timestamp group."""
        if not self.pending:
            return
        t = self.pending_time
        window = self.plan.window
        ks = range(1) if window is None else range(first_window(t, *window), t // window[1] + 1)
        factory = self.factory
        for pid, group in self.pending.items():
            prepared = factory.prepare(group)
            for k in ks:
                parts = self.open.get(k)
                if parts is None:
                    parts = self.open[k] = {}
                agg = parts.get(pid)
                if agg is None:
                    agg = parts[pid] = factory.new()
                agg.update(prepared)
        self.pending.clear()

    def _close_until(self, t: int | None) -> list[Closed]:
        """Close every window that ends at or before ``t`` (all of them when None)."""
        window = self.plan.window
        closed: list[Closed] = []
        while self.open:
            k = next(iter(self.open))
            if t is not None and (window is None or k * window[1] + window[0] > t):
                break
            closed.append((k, self.open.pop(k)))
        return closed
