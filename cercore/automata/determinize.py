"""On-the-fly I/O-determinisation (CORE §4.4): subset construction, one (state, letter) at a time.

A deterministic state is a set of CEA states. For a letter (the event's type plus the bit
vector of its atomic predicates, which fixes which atom labels it satisfies) the marking and
non-marking successors are computed once, on first use, and cached by the evaluator's table.
"""

from __future__ import annotations

from cercore.automata.cea import CEA, MARK, TRUE_LABEL

NO_STATE = -1


class LazyDeterminiser:
    """Numbers the reachable subsets of ``cea`` and computes their transitions on demand."""

    def __init__(self, cea: CEA) -> None:
        self.cea = cea
        self.subsets: list[frozenset[int]] = []
        self.index: dict[frozenset[int], int] = {}
        self.final: list[bool] = []
        self.initial = self.state_id(frozenset({cea.initial}))

    def state_id(self, subset: frozenset[int]) -> int:
        sid = self.index.get(subset)
        if sid is None:
            sid = self.index[subset] = len(self.subsets)
            self.subsets.append(subset)
            self.final.append(not subset.isdisjoint(self.cea.finals))
        return sid

    def successors(self, sid: int, atom_mask: int) -> tuple[int, int]:
        """(marking successor, non-marking successor) of ``sid`` on an event satisfying the
        atom labels in ``atom_mask``; NO_STATE where the successor set is empty."""
        marked: set[int] = set()
        skipped: set[int] = set()
        for p in self.subsets[sid]:
            for label, mark, q in self.cea.transitions[p]:
                if label == TRUE_LABEL or (atom_mask >> label) & 1:
                    (marked if mark == MARK else skipped).add(q)
        return (self.state_id(frozenset(marked)) if marked else NO_STATE,
                self.state_id(frozenset(skipped)) if skipped else NO_STATE)

    @property
    def n_states(self) -> int:
        return len(self.subsets)
