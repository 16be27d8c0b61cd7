"""Selection strategies NEXT, LAST and MAX as automata (Foundations §6.4, App. C.3), built lazily.

The definitions (Foundations §4, as its examples and App. C.3 intend; docs/DESIGN.md) compare
the complex events that end at the same event: NEXT keeps the ≤next-maximum, LAST the
≤last-maximum, MAX the ⊆-maximal ones. Which complex events compete depends on the window:

* **No WITHIN**: every complex event of the (partition's) stream. The constructions simulate the
  base automaton from the start of the stream, so they need the run that has not started yet:
  the *pre-run*, sitting in the initial state q0 with a TRUE/∘ self-loop. Constant time per
  event; the pre-run's state is the partition's ranking history.
* **WITHIN** (``per_start=True``): only complex events whose span fits the window compete, so a
  run that started too early must not silence a later one. The automaton then ranks only the
  runs that started at the same event (no pre-run: each run's history begins at its first
  event), which keeps, for every start, that start's best complex events; the engine picks the
  winners among the starts still inside the window when it enumerates
  (``cercore.runtime.selection``). The global winner of a start is always its start's winner,
  so this is exact.

The evaluator (Algorithm 1) starts a new run at every event, with a fresh bottom node, from its
partition's *pre state*; a strategy automaton therefore exposes

* ``initial``: the pre-run's state at the start of a stream;
* ``moves(s, mask)``: the (mark, state) moves of state s on a letter, *without* the pre-run's own
  self-loop: a move out of the pre state starts a new run at this event;
* ``pre_next(s, mask)``: the pre-run's next state (it skips the event);
* ``is_final(s)``.

The plain CEA (no strategy, or STRICT) fits the same interface with a constant pre state.

Normalisations (the note's §6.6): N1 — one fresh final state, entered by every move that entered
an old final state, with no moves out — so a run is accepting exactly at the event that completes
it. The pre-run decomposition needs every run to start by marking: a leading NOT or a leading
unprojected atom cannot be ranked, and analysis rejects those formulas under NEXT/LAST/MAX.
"""

from __future__ import annotations

from cercore.automata.cea import CEA, MARK, SKIP, TRUE_LABEL

Move = tuple[int, int, int]  # (label, mark, target)


class PlainNFA:
    """The CEA itself: states are ints; the pre state is q0, forever."""

    def __init__(self, cea: CEA) -> None:
        self.cea = cea
        self.initial = cea.initial

    def moves(self, s: int, mask: int) -> list[tuple[int, int]]:
        return [(mark, q) for label, mark, q in self.cea.transitions[s]
                if label == TRUE_LABEL or (mask >> label) & 1]

    def pre_next(self, s: int, mask: int) -> int:
        return s

    def is_final(self, s: int) -> bool:
        return s in self.cea.finals


class _Base:
    """The base CEA with N1 applied and q0's pre-run self-loop, as a move function."""

    def __init__(self, cea: CEA, per_start: bool = False) -> None:
        if any(m == SKIP for _, m, _ in cea.transitions[cea.initial]):
            raise ValueError("selection strategy: every run must start by marking an event")
        n = cea.n_states
        self.final = n  # N1: the single final state, no moves out
        self.q0 = cea.initial
        self.transitions: list[list[Move]] = [list(outs) for outs in cea.transitions] + [[]]
        for outs in self.transitions[:n]:
            outs.extend([(lab, m, self.final) for lab, m, q in list(outs) if q in cea.finals])
        if not per_start:  # the pre-run skips (per start, every run begins at its own event)
            self.transitions[self.q0].append((TRUE_LABEL, SKIP, self.q0))

    def step(self, p: int, mask: int, mark: int) -> list[int]:
        return [q for label, m, q in self.transitions[p]
                if m == mark and (label == TRUE_LABEL or (mask >> label) & 1)]

    def image(self, states, mask: int, mark: int) -> frozenset[int]:
        return frozenset(q for p in states for q in self.step(p, mask, mark))


class RankedNFA:
    """NEXT / LAST (Foundations App. C.3.2–C.3.3). A state is (blocks, p): ``blocks`` is the
    ordered partition of every base state reachable on the prefix, best run first; p is the
    state of the run this automaton state follows. Only the best run into each base state
    survives (strict orders preserved under equal extension, §6.5)."""

    def __init__(self, cea: CEA, strategy: str, per_start: bool = False) -> None:
        self.base = _Base(cea, per_start)
        self.per_start = per_start
        self.last = strategy == "LAST"
        self.initial = ((frozenset({self.base.q0}),), self.base.q0)
        self._cache: dict = {}

    def _groups(self, blocks, mask: int) -> list[tuple[tuple[int, int], frozenset[int]]]:
        """(block index, mark) groups with their targets, in rank order."""
        b = self.base
        if self.last:  # marking the current event beats skipping it, whatever the history
            order = [(i, m) for m in (MARK, SKIP) for i in range(len(blocks))]
        else:  # the history decides first; then marking beats skipping
            order = [(i, m) for i in range(len(blocks)) for m in (MARK, SKIP)]
        return [((i, m), b.image(blocks[i], mask, m)) for i, m in order]

    def _advance(self, blocks, mask: int):
        """(new blocks, base state -> the (block, mark) group whose run owns it)."""
        key = (blocks, mask)
        hit = self._cache.get(key)
        if hit is None:
            owner: dict[int, tuple[int, int]] = {}
            new_blocks = []
            for group, targets in self._groups(blocks, mask):
                fresh = frozenset(q for q in targets if q not in owner)
                for q in fresh:
                    owner[q] = group
                if fresh:
                    new_blocks.append(fresh)
            hit = self._cache[key] = (tuple(new_blocks), owner)
        return hit

    def _kept(self, blocks, p: int, mask: int) -> list[tuple[int, int]]:
        new_blocks, owner = self._advance(blocks, mask)
        i = next(k for k, block in enumerate(blocks) if p in block)
        out = []
        for mark in (MARK, SKIP):
            for q in self.base.step(p, mask, mark):
                if owner.get(q) != (i, mark):
                    continue
                # tie-break inside the block: the smallest state with this move owns it
                if any(p2 < p and q in self.base.step(p2, mask, mark) for p2 in blocks[i]):
                    continue
                out.append((mark, q))
        return [(m, (new_blocks, q)) for m, q in out]

    def moves(self, s, mask: int):
        blocks, p = s
        return [(m, t) for m, t in self._kept(blocks, p, mask)
                if not (p == self.base.q0 and t[1] == self.base.q0)]

    def pre_next(self, s, mask: int):
        if self.per_start:
            return s  # no history: a new run's ranking starts at its own first event
        blocks, p = s
        return (self._advance(blocks, mask)[0], p)

    def is_final(self, s) -> bool:
        return s[1] == self.base.final


class MaxNFA:
    """MAX (Foundations App. C.3.4): a state (S, T) follows one complex event C; S holds the base
    states of runs whose marks are exactly C, T those of runs whose marks strictly contain C.
    Accepting when a run with C completes and no run with a superset does."""

    def __init__(self, cea: CEA, per_start: bool = False) -> None:
        self.base = _Base(cea, per_start)
        self.per_start = per_start
        self.initial = (frozenset({self.base.q0}), frozenset())

    def _move(self, s, mask: int, mark: int):
        S, T = s
        b = self.base
        if mark == MARK:
            T2 = b.image(T, mask, MARK)
            S2 = b.image(S, mask, MARK) - T2
        else:
            T2 = b.image(T, mask, MARK) | b.image(T, mask, SKIP) | b.image(S, mask, MARK)
            S2 = b.image(S, mask, SKIP) - T2
        return (S2, T2) if S2 else None

    def moves(self, s, mask: int):
        out = []
        for mark in (MARK, SKIP):
            t = self._move(s, mask, mark)
            if t is None:
                continue
            if mark == SKIP and s[0] == frozenset({self.base.q0}):
                continue  # the pre-run skipping: that is pre_next, not a run
            out.append((mark, t))
        return out

    def pre_next(self, s, mask: int):
        if self.per_start:
            return s
        return self._move(s, mask, SKIP)

    def is_final(self, s) -> bool:
        S, T = s
        f = self.base.final
        return f in S and f not in T


def strategy_nfa(cea: CEA, strategy: str | None, per_start: bool = False):
    """The automaton the evaluator determinises for ``strategy`` (STRICT is applied to the CEA
    beforehand, see ``cercore.automata.cea.strict``). ``per_start``: rank only runs that began
    at the same event (windowed queries; the engine selects among starts)."""
    if strategy in ("NEXT", "LAST"):
        return RankedNFA(cea, strategy, per_start)
    if strategy == "MAX":
        return MaxNFA(cea, per_start)
    return PlainNFA(cea)
