"""The contract between the engine and an evaluator backend (``PythonEvaluator``, the reference,
and ``cercore_fast.evaluator.CythonEvaluator``): what the engine hands over per batch and what
it may call. ``tests/runtime/test_evaluator_interface.py`` checks both backends satisfy it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np


class EvaluatorInput(NamedTuple):
    """One batch, as the evaluator reads it."""

    active: np.ndarray  # int64: offsets of the events to step, in order
    pids: np.ndarray  # int64, per event of the batch: partition id
    letters: np.ndarray  # int32, per event: letter (cercore.runtime.letters)
    times: np.ndarray  # int64, per event: window time (event time, or tick for EVENTS windows)
    first_position: int  # stream position of the batch's first event
    epsilon: int  # window length, in the units of ``times``
    windowed: bool  # False: no WITHIN, no run ever expires
    limit: int  # LIMIT per event, or constants.NO_LIMIT
    consume: int  # constants.CONSUME_NONE / CONSUME_ANY / CONSUME_PARTITION


class CompiledPlan(Protocol):
    """What an engine needs of a compiled query (``cercore.CompiledQuery`` is one)."""

    analysed: Any
    cea: Any
    schema: Any
    ranking_strategy: Any


@runtime_checkable
class Evaluator(Protocol):
    """Algorithm 1 + 2 over letters, one instance per engine."""

    backend: str
    reported: int  # complex events yielded so far
    # told, at the end of a run (batch, event or compact) in which the evaluator reclaimed
    # partial matches, the window start ``tau`` of that reclamation: the engine then forgets
    # the partitions and stored events the evaluator no longer holds
    on_reclaim: Any  # Callable[[int], None] | None

    def run(self, batch: EvaluatorInput, view: Any = None) -> Iterator:
        """Step ``batch.active`` in order; yield each complex event as soon as its last event
        is read: ``(start, end, positions)``, or a ComplexEvent view over ``view``."""

    def run_one(self, pid: int, letter: int, pos: int, time: int, epsilon: int,
                windowed: bool, limit: int, consume: int, view: Any = None) -> list | Iterator:
        """One event (the record path): what ``run`` does for it, its complex events as a
        list (an iterator when they overflow the output buffer)."""

    def check_between(self, plan: Any, check: Any) -> None:
        """Check predicates between events while enumerating (``plan``: a ``BetweenPlan``,
        ``check``: an ``IncrementalCheck``; cercore.runtime.event_predicates)."""

    def run_arrays(self, batch: EvaluatorInput
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``run`` in bulk: (start, end, offsets, positions) int64 arrays."""

    def compact(self, tau: int) -> None:
        """Reclaim now the nodes of partial matches that start before window start ``tau``
        (what a run does when the arena fills)."""

    def live_partitions(self) -> set[int]:
        """Partition ids that still hold a partial match or a pre state."""

    def memory_nodes(self) -> int:
        """tECS nodes in the arena."""

    def work_counts(self) -> dict[str, int]:
        """Operations done so far (see ``PythonEvaluator.work_counts``)."""

    def reset_work_counts(self, counts: dict[str, int] | None = None) -> None:
        """Set the work counters to 0, or to ``counts``."""

    def to_state(self) -> Any:
        """A backend-neutral ``cercore.interface.state.EvaluatorState``."""

    def from_state(self, state: Any) -> None:
        """Load a backend-neutral state."""
