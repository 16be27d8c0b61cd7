"""The contract between the trend engine (``cercore.trends.engine``) and a trend backend: the
pure-Python ``cercore.trends.runner.PythonRunner`` (the reference, over
``cercore.trends.reference``'s aggregators) and ``cercore_fast.trends.Runner`` (compiled).
``tests/trends/test_trends_interface.py`` checks that both satisfy it and that the engine uses
nothing else.

The engine does the columnar work once per batch, as for CEQL queries: validation and time
order (``cercore.input``), each event's pattern variables from the letters of its local
predicates (``cercore.runtime.letters``) and its partition id (``cercore.runtime.partitions``).
A runner does the sequential part: timestamp groups per partition, the sliding windows, and
one online aggregator per (window, partition) -- COGRA's runtime executor.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from cercore.input.columns import Columns

# what an event of a batch is to the runner (``TrendInput.state``)
IGNORED = 0  # not read (another type or stream, skipped, or after the batch's error)
TIME_ONLY = 1  # read and in time order, but in no partition's stream I: it only moves time
IN_STREAM = 2  # in the stream I of partition ``pids[k]``, matching the variables ``vars[k]``


class TrendInput(NamedTuple):
    """One batch, as a runner reads it (arrays indexed by the batch's events)."""

    n: int
    state: np.ndarray  # uint8: IGNORED / TIME_ONLY / IN_STREAM
    times: np.ndarray  # int64: event time (the input position without a time attribute)
    pids: np.ndarray  # int64: partition id (meaningful where IN_STREAM)
    vars: np.ndarray  # uint64 (object beyond 64 variables): bit v = matches variable v
    columns: Columns  # the batch's attributes: what SUM/MIN/MAX/AVG and adjacent
    #                   predicates read (an IN_STREAM event has every value it aggregates)


# A window the runner closed: (k, {partition id: its WindowAggregator}), partitions in the
# order they first received an event in that window (the order their vectors are summed in).
Closed = tuple[int, dict[int, Any]]


@runtime_checkable
class WindowAggregator(Protocol):
    """The online state of one window of one partition."""

    def result(self) -> list:
        """The aggregate vector over every trend ending in the window so far:
        ``[COUNT(*), field 1, ...]`` (``reference.Vectors``)."""

    def stored_events(self) -> int:
        """Events this aggregator holds (the event-grained nodes)."""


@runtime_checkable
class TrendRunner(Protocol):
    """Timestamp groups, windows and aggregators of one plan, one instance per engine."""

    backend: str

    def feed(self, batch: TrendInput) -> list[Closed]:
        """The events of a batch in order: an event whose time differs from the current
        timestamp group's applies that group and closes the windows ending by its time,
        then joins the next group when IN_STREAM. The windows closed, in order."""

    def feed_one(self, t: int, pid: int, vars: int, row: dict | None) -> list[Closed]:
        """``feed`` for one read event (the record path): ``pid`` is NO_PARTITION for an
        event that only moves time; ``row`` its validated attributes."""

    def time_passes(self, t: int) -> list[Closed]:
        """A watermark: no event before ``t`` follows; applies the current group if it is
        before ``t`` and closes the windows ending by ``t``."""

    def finish(self) -> list[Closed]:
        """End of stream: applies the current group and closes every window."""

    def open_windows(self) -> dict[int, dict[int, Any]]:
        """k -> {partition id: WindowAggregator} of the windows still open, in order."""

    def pending_events(self) -> int:
        """Events of the current timestamp group, not yet applied."""

    def live_partitions(self) -> set[int]:
        """Partition ids that are in an open window or in the current group."""
