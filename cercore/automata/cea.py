"""Complex event automata (CEA) compiled from normalised CEL (CORE appendix A.1).

Thompson-style construction with ε-moves, then ε-removal:

- atom a:        i --a/•--> f
- φ1 ; φ2:       f1 --ε--> g, g --TRUE/∘--> g, g --ε--> i2       (g: the gap between them)
- φ1 ; ABSENT(ψ) ; φ2:  the same with g --(not ψ)/∘--> g: a ψ event ends the runs waiting in g
- φ1 OR φ2:      i --ε--> i1, i --ε--> i2, f1 --ε--> f, f2 --ε--> f
- φ+:            f --ε--> g, g --TRUE/∘--> g, g --ε--> i
- φ1 : φ2:       f1 --ε--> i2                                     (no gap: the next event)
- φ:+:           f --ε--> i
- NOT(a):        i --(not a)/∘--> f                               (consumed, not marked)

A fresh initial state q0 has no incoming transitions (CORE §3), so a run's first event starts
the complex event's interval (the first marked event, or a leading NOT's event). Final states are
entered only by the move that reads a match's last event.

Projection (``SELECT x, y`` / ``SELECT NONE``) turns the marking moves of atoms that bind no
projected variable into ∘ moves: the I/O-determinisation then merges runs that differ only in
unprojected positions, so each projected complex event is reported once. ``strict`` applies the
STRICT selection strategy (Foundations App. C.3.1) to the projected automaton.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cercore.ceql.normal import NAtom, NContig, NFormula, NIter, NNot, NOr, NSeq

TRUE_LABEL = -1  # transition label that every event satisfies
MARK, SKIP = 1, 0  # • and ∘


@dataclass
class CEA:
    """A CEA over atom labels. ``transitions[p]`` lists (label, mark, q); label is an atom id or
    TRUE_LABEL."""

    n_states: int
    initial: int
    finals: frozenset[int]
    transitions: list[list[tuple[int, int, int]]] = field(default_factory=list)

    def describe(self, label_text=str) -> str:
        lines = [(f"states: {self.n_states}, initial: q{self.initial}, "
                 f"final: {', '.join(f'q{q}' for q in sorted(self.finals))}")]
        for p, outs in enumerate(self.transitions):
            for label, mark, q in outs:
                lab = "TRUE" if label == TRUE_LABEL else label_text(label)
                lines.append(f"  q{p} --{lab} / {'•' if mark == MARK else '∘'}--> q{q}")
        return "\n".join(lines)


class _Builder:
    def __init__(self, marked: frozenset[int] | None) -> None:
        self.marked = marked
        self.moves: list[list[tuple[int, int, int]]] = []
        self.eps: list[list[int]] = []

    def state(self) -> int:
        self.moves.append([])
        self.eps.append([])
        return len(self.moves) - 1

    def gap(self, src: int, dst: int, label: int = TRUE_LABEL) -> None:
        g = self.state()
        self.eps[src].append(g)
        self.moves[g].append((label, SKIP, g))
        self.eps[g].append(dst)

    def build(self, f: NFormula) -> tuple[int, int]:
        if isinstance(f, NAtom):
            i, j = self.state(), self.state()
            marked = self.marked is None or f.id in self.marked
            self.moves[i].append((f.id, MARK if marked else SKIP, j))
            return i, j
        if isinstance(f, NNot):
            i, j = self.state(), self.state()
            self.moves[i].append((f.id, SKIP, j))
            return i, j
        if isinstance(f, (NSeq, NContig)):
            i1, f1 = self.build(f.left)
            i2, f2 = self.build(f.right)
            if isinstance(f, NSeq):
                self.gap(f1, i2, TRUE_LABEL if f.gap is None else f.gap.id)
            else:
                self.eps[f1].append(i2)
            return i1, f2
        if isinstance(f, NOr):
            i, j = self.state(), self.state()
            for side in (f.left, f.right):
                si, sf = self.build(side)
                self.eps[i].append(si)
                self.eps[sf].append(j)
            return i, j
        if isinstance(f, NIter):
            i, j = self.build(f.body)
            if f.contiguous:
                self.eps[j].append(i)
            else:
                self.gap(j, i)
            return i, j
        raise TypeError(f"unknown formula node {f!r}")


def compile_cea(formula: NFormula, marked: frozenset[int] | None = None) -> CEA:
    """Compile normalised CEL into an ε-free CEA whose initial state has no incoming moves.
    ``marked``: the atom ids whose events are reported (None: every atom)."""
    b = _Builder(marked)
    q0 = b.state()
    i, f = b.build(formula)
    b.eps[q0].append(i)

    def closure(p: int) -> list[int]:
        seen, stack = [p], [p]
        while stack:
            for q in b.eps[stack.pop()]:
                if q not in seen:
                    seen.append(q)
                    stack.append(q)
        return seen

    closures = [closure(p) for p in range(len(b.moves))]
    # Keep q0 and the targets of real moves; everything else only existed for ε-plumbing.
    keep = [q0] + sorted({q for outs in b.moves for _, _, q in outs} - {q0})
    index = {old: new for new, old in enumerate(keep)}
    transitions: list[list[tuple[int, int, int]]] = []
    for p in keep:
        outs: list[tuple[int, int, int]] = []
        for c in closures[p]:
            for label, mark, q in b.moves[c]:
                move = (label, mark, index[q])
                if move not in outs:
                    outs.append(move)
        transitions.append(outs)
    finals = frozenset(index[p] for p in keep if f in closures[p])
    return CEA(len(keep), 0, finals, transitions)


def strict(cea: CEA) -> CEA:
    """STRICT (Foundations App. C.3.1): every event from a run's first marked event to its last
    is marked. Two copies of each state: p (nothing marked yet: every move allowed) and p'
    (something marked: only • moves); finals are the marked copies."""
    n = cea.n_states
    transitions: list[list[tuple[int, int, int]]] = [[] for _ in range(2 * n)]
    for p, outs in enumerate(cea.transitions):
        for label, mark, q in outs:
            if mark == MARK:
                transitions[p].append((label, MARK, q + n))
                transitions[p + n].append((label, MARK, q + n))
            else:
                transitions[p].append((label, SKIP, q))
    finals = frozenset(q + n for q in cea.finals)
    return _trim(CEA(2 * n, cea.initial, finals, transitions))


def _trim(cea: CEA) -> CEA:
    """Drop states unreachable from the initial state or that cannot reach a final state."""
    reach, stack = {cea.initial}, [cea.initial]
    while stack:
        for _, _, q in cea.transitions[stack.pop()]:
            if q not in reach:
                reach.add(q)
                stack.append(q)
    preds: list[set[int]] = [set() for _ in range(cea.n_states)]
    for p, outs in enumerate(cea.transitions):
        for _, _, q in outs:
            preds[q].add(p)
    alive, stack = set(cea.finals), list(cea.finals)
    while stack:
        for p in preds[stack.pop()]:
            if p not in alive:
                alive.add(p)
                stack.append(p)
    keep = [cea.initial] + sorted((reach & alive) - {cea.initial})
    index = {old: new for new, old in enumerate(keep)}
    transitions = [[(lab, m, index[q]) for lab, m, q in cea.transitions[p] if q in index]
                   for p in keep]
    return CEA(len(keep), 0, frozenset(index[q] for q in cea.finals if q in index), transitions)
