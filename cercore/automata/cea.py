"""Complex event automata (CEA) compiled from normalised CEL (CORE appendix A.1).

Thompson-style construction with ε-moves, then ε-removal:

- atom a:        i --a/•--> f
- φ1 ; φ2:       f1 --ε--> g, g --TRUE/∘--> g, g --ε--> i2       (g: the gap between them)
- φ1 OR φ2:      i --ε--> i1, i --ε--> i2, f1 --ε--> f, f2 --ε--> f
- φ+:            f --ε--> g, g --TRUE/∘--> g, g --ε--> i
- φ1 : φ2:       f1 --ε--> i2                                     (no gap: the next event)
- φ:+:           f --ε--> i
- NOT(a):        i --(not a)/∘--> f                               (consumed, not marked)

A fresh initial state q0 has no incoming transitions (CORE §3), so a run's first event is the
first event it marks and the complex event's interval starts there. Only atoms' marking moves
enter final states, so every accepting run ends by marking the event that triggers it.
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
    def __init__(self) -> None:
        self.moves: list[list[tuple[int, int, int]]] = []
        self.eps: list[list[int]] = []

    def state(self) -> int:
        self.moves.append([])
        self.eps.append([])
        return len(self.moves) - 1

    def gap(self, src: int, dst: int) -> None:
        g = self.state()
        self.eps[src].append(g)
        self.moves[g].append((TRUE_LABEL, SKIP, g))
        self.eps[g].append(dst)

    def build(self, f: NFormula) -> tuple[int, int]:
        if isinstance(f, NAtom):
            i, j = self.state(), self.state()
            self.moves[i].append((f.id, MARK, j))
            return i, j
        if isinstance(f, NNot):
            i, j = self.state(), self.state()
            self.moves[i].append((f.id, SKIP, j))
            return i, j
        if isinstance(f, (NSeq, NContig)):
            i1, f1 = self.build(f.left)
            i2, f2 = self.build(f.right)
            if isinstance(f, NSeq):
                self.gap(f1, i2)
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


def compile_cea(formula: NFormula) -> CEA:
    """Compile normalised CEL into an ε-free CEA whose initial state has no incoming moves."""
    b = _Builder()
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
