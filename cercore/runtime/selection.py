"""Selection strategies under a window: the winners among the starts still inside it.

With WITHIN, NEXT / LAST / MAX rank only the complex events whose span fits the window
(docs/DESIGN.md, "Strategies"). The automaton ranks the runs of each start
(``cercore.automata.strategies``, ``per_start``), so the evaluator enumerates, for the event
that triggers them, every start's best complex events inside the window; this module keeps the
winners among them, straight from the orders of Foundations §4.1–4.2:

* NEXT: C beats D iff C = D or min(C Δ D) ∈ C (the earliest events win);
* LAST: C beats D iff C = D or max(C Δ D) ∈ C (the latest events win);
* MAX: the ⊆-maximal ones.

NEXT and LAST are total orders, so one pass finds the winner; MAX compares each complex event
with the winners found so far, largest first. The cost
per triggering event is the number of starts inside the window that complete there (times
their length; squared for MAX), which ``explain`` states. LIMIT applies after selection.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from cercore.interface.constants import NO_LIMIT

__all__ = ["select_end", "select_stream", "select_arrays"]


def select_end(strategy: str | None, position_sets: Sequence[frozenset[int]]) -> list[int]:
    """Indices (in input order) of the winners among the complex events of one end, given
    their position sets (``strategy`` None: every one)."""
    n = len(position_sets)
    if n <= 1 or strategy is None:
        return list(range(n))
    if strategy == "MAX":
        # largest first: a set is ⊆-maximal iff no maximal one found before strictly holds it
        # (any superset is contained in a maximal one, and is larger), so each set is compared
        # with the winners, not with every other candidate
        winners: list[frozenset[int]] = []
        kept = []
        for i in sorted(range(n), key=lambda i: -len(position_sets[i])):
            c = position_sets[i]
            if not any(c < d for d in winners):
                winners.append(c)
                kept.append(i)
        return sorted(kept)
    pick = min if strategy == "NEXT" else max
    best = position_sets[0]
    for c in position_sets[1:]:
        diff = c ^ best
        if diff and pick(diff) in c:
            best = c
    # equal position sets tie (complex events are sets; distinct starts may share positions
    # only when a leading event is not reported, which analysis refuses under a strategy)
    return [i for i, c in enumerate(position_sets) if c == best]


def select_stream(strategy: str | None, complex_events: Iterable[Any],
                  limit: int = NO_LIMIT) -> Iterator[Any]:
    """The winners of each end among ``complex_events`` (objects with ``end`` and
    ``positions``, grouped by end as the evaluator yields them), at most ``limit`` per end
    (``strategy`` None: the first ``limit`` of each end)."""
    group: list[Any] = []
    for ce in complex_events:
        if group and ce.end != group[0].end:
            yield from _winners(strategy, group, limit)
            group = []
        group.append(ce)
    if group:
        yield from _winners(strategy, group, limit)


def _winners(strategy: str | None, group: list[Any], limit: int) -> list[Any]:
    kept = [group[i] for i in select_end(strategy, [frozenset(ce.positions) for ce in group])]
    return kept if limit == NO_LIMIT else kept[:limit]


def select_arrays(strategy: str | None, start: np.ndarray, end: np.ndarray,
                  offsets: np.ndarray, positions: np.ndarray, limit: int = NO_LIMIT,
                  candidates: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``select_stream`` over the evaluator's bulk arrays (complex event i has positions
    ``positions[offsets[i]:offsets[i + 1]]``; ends non-decreasing), among the ``candidates``
    (a mask; None: all)."""
    n = len(start)
    if n == 0:
        return start, end, offsets, positions
    keep = np.zeros(n, dtype=bool)
    bounds = np.flatnonzero(np.diff(end)) + 1
    for lo, hi in zip(np.concatenate(([0], bounds)), np.concatenate((bounds, [n]))):
        ids = [i for i in range(lo, hi) if candidates is None or candidates[i]]
        sets = [frozenset(positions[offsets[i]:offsets[i + 1]].tolist()) for i in ids]
        chosen = select_end(strategy, sets)
        if limit != NO_LIMIT:
            chosen = chosen[:limit]
        keep[[ids[i] for i in chosen]] = True
    lengths = np.diff(offsets)[keep]
    new_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    mask = np.repeat(keep, np.diff(offsets))
    return start[keep], end[keep], new_offsets, positions[mask]
