"""On-the-fly I/O-determinisation (CORE §4.4): subset construction, one (state, letter) at a time.

A deterministic state is a set of automaton states (of the CEA itself, or of a selection
strategy's automaton, see ``cercore.automata.strategies``). For a letter (the event's type plus
the bit vector of its atomic predicates, which fixes which atom labels it satisfies) the marking
and non-marking successors are computed once, on first use, and cached by the evaluator's table.

Every partition also has a *pre state*: the deterministic state from which a run starting at the
current event begins. Without a selection strategy it is always the initial state; under NEXT,
LAST or MAX without a window it follows the stream (the strategy ranks new runs against every
earlier one), and ``successors`` returns its next value as a third component. With a window the
strategy ranks runs per start (``per_start``) and the pre state stays the initial state.
"""

from __future__ import annotations

from cercore.automata.cea import CEA, MARK
from cercore.automata.strategies import strategy_nfa

NO_STATE = -1


class LazyDeterminiser:
    """Numbers the reachable subsets of the query's automaton and computes their transitions
    on demand."""

    def __init__(self, cea: CEA, strategy: str | None = None, per_start: bool = False) -> None:
        self.cea = cea
        self.nfa = strategy_nfa(cea, strategy, per_start)
        self.subsets: list[frozenset] = []
        self.index: dict[frozenset, int] = {}
        self.final: list[bool] = []
        self.pre: list[bool] = []  # is this det state some partition's pre state?
        self.initial = self.state_id(frozenset({self.nfa.initial}))
        self.pre[self.initial] = True

    def fresh(self) -> LazyDeterminiser:
        """A determiniser of the same automaton with nothing determinised yet (a worker's own
        cache: state ids are numbered by each one as it goes)."""
        out = LazyDeterminiser.__new__(LazyDeterminiser)
        out.cea, out.nfa = self.cea, self.nfa
        out.subsets, out.index, out.final, out.pre = [], {}, [], []
        out.initial = out.state_id(frozenset({out.nfa.initial}))
        out.pre[out.initial] = True
        return out

    def state_id(self, subset: frozenset) -> int:
        sid = self.index.get(subset)
        if sid is None:
            sid = self.index[subset] = len(self.subsets)
            self.subsets.append(subset)
            self.final.append(any(self.nfa.is_final(s) for s in subset))
            self.pre.append(False)
        return sid

    def successors(self, sid: int, atom_mask: int) -> tuple[int, int, int]:
        """(marking successor, non-marking successor, next pre state) of ``sid`` on an event
        satisfying the atom labels in ``atom_mask``; NO_STATE where a successor set is empty
        (and as the third component when ``sid`` is not a pre state)."""
        marked: set = set()
        skipped: set = set()
        nfa = self.nfa
        for s in self.subsets[sid]:
            for mark, t in nfa.moves(s, atom_mask):
                (marked if mark == MARK else skipped).add(t)
        pre_next = NO_STATE
        if self.pre[sid]:
            (s,) = self.subsets[sid]
            pre_next = self.state_id(frozenset({nfa.pre_next(s, atom_mask)}))
            self.pre[pre_next] = True
        return (self.state_id(frozenset(marked)) if marked else NO_STATE,
                self.state_id(frozenset(skipped)) if skipped else NO_STATE, pre_next)

    @property
    def n_states(self) -> int:
        return len(self.subsets)
