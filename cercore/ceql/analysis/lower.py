"""Lower: the checked formula becomes normalised CEL (``cercore.ceql.normal``), with its
filters pushed down onto the atoms.

Why the push-down needs no case splits here: in CORE's semantics (paper Fig. 2) a variable holds
a *set* of positions and ``FILTER X[P]`` requires every position in it to satisfy P. A position
belongs to X exactly when it comes from an atom named X or from an atom under ``AS X`` inside
the filtered sub-formula, so ``φ FILTER X[P]`` equals φ with P conjoined to each of those atoms.
For the same reason CORE formulas have no "unsafe" variable reuse: ``A AS x ; B AS x`` simply
collects both positions into x. ``FILTER F1 OR F2`` duplicates φ, as the paper defines it.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from cercore.ceql import ast
from cercore.ceql.analysis.context import Context, Stage
from cercore.ceql.analysis.formulas import _sequence, atom_variables
from cercore.ceql.guards import Guard, guard_and, guard_of
from cercore.ceql.normal import NAtom, NContig, NFormula, NIter, NNot, NOr, NSeq, atoms_of

MAX_FILTER_DISJUNCTS = 256


@dataclass
class Lowered:
    """The lowered formula and what lowering it found."""

    formula: NFormula
    atoms: list[NAtom]
    leaves: list[ast.Pred]
    negations: list[NNot]
    # ABSENT(...) between sequence elements: the labels of their gaps
    absences: list[NNot]
    # ψ's atoms of the trailing and the leading ABSENT(ψ) WITHIN T, per lowering of φ
    deadline_atoms: list[tuple[NAtom, ...]]
    lookback_atoms: list[tuple[NAtom, ...]]


class Lowerer(Stage):
    """Lowers the checked formula: one atom per event type it reads (each FILTER alternative
    and each repetition its own copies), the labels of NOT and ABSENT(...) beside them."""

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.leaves: list[ast.Pred] = []
        self.leaf_index: dict[ast.Pred, int] = {}
        self.atoms: list[NAtom] = []
        self.negations: list[NNot] = []
        self.absences: list[NNot] = []
        self.deadline_atoms: list[tuple[NAtom, ...]] = []  # ψ's atoms, per lowering of φ
        self.lookback_atoms: list[tuple[NAtom, ...]] = []
        self.n_labels = 0  # atoms and negations share one label space
        self.enclosing_vars: list[str] = []  # the AS variables around the formula being lowered
        self.enclosing_filters: list[tuple] = []  # the filters those AS took from ``pending``

    def run(self) -> Lowered:
        formula = self.lower(self.q.formula, (), ())
        return Lowered(formula, self.atoms, self.leaves, self.negations, self.absences,
                       self.deadline_atoms, self.lookback_atoms)

    def label(self) -> int:
        self.n_labels += 1
        return self.n_labels - 1

    def guard_of(self, p: ast.Pred) -> Guard:
        return guard_of(p, self.leaves, self.leaf_index)

    def lower(self, f: ast.Formula, pending: tuple, forced: tuple) -> NFormula:
        """``pending``: (variable, guard) filters still looking for their atoms;
        ``forced``: guards every atom below must satisfy (from an enclosing ``AS X``)."""
        if isinstance(f, ast.EventAtom):
            own = atom_variables(f)
            guards = list(forced) + [g for v, g in pending if v in own]
            streams = None if f.stream is None \
                else frozenset({self.schema.stream_ids[f.stream]})
            atom = NAtom(self.label(), frozenset({self.schema.event_types[f.event_type].id}),
                         guard_and(guards), frozenset({*own, *self.enclosing_vars}),
                         streams)
            self.atoms.append(atom)
            return atom
        if isinstance(f, ast.Not):
            # Variables inside NOT bind nothing, so outer filters never reach in.
            branches = tuple(atoms_of(self.lower(f.formula, (), ())))
            neg = NNot(self.label(), branches)
            self.negations.append(neg)
            return neg
        if isinstance(f, ast.As):
            mine = tuple(g for v, g in pending if v == f.var)
            rest = tuple((v, g) for v, g in pending if v != f.var)
            self.enclosing_vars.append(f.var)
            # an ABSENT below that names the same variable is filtered by them too
            self.enclosing_filters.append(tuple((v, g) for v, g in pending if v == f.var))
            try:
                return self.lower(f.formula, rest, forced + mine)
            finally:
                self.enclosing_vars.pop()
                self.enclosing_filters.pop()
        if isinstance(f, ast.Filter):
            count = _dnf_size(f.filter)  # counted before the expansion it limits
            if count > MAX_FILTER_DISJUNCTS:
                shown = str(count) if count < 10**12 else f"about 10^{len(str(count)) - 1}"
                raise self.error(f"this FILTER expands to {shown} alternatives "
                                 f"(more than {MAX_FILTER_DISJUNCTS})", f,
                                 "merge OR-ed conditions on one variable into one bracket: "
                                 "x[a OR b]")
            alternatives = _dnf(f.filter)
            out: NFormula | None = None
            for conj in alternatives:
                extra = tuple((af.var, self.guard_of(af.pred)) for af in conj)
                branch = self.lower(f.formula, pending + extra, forced)
                out = branch if out is None else NOr(out, branch)
            return out
        if isinstance(f, ast.Or):
            return NOr(self.lower(f.left, pending, forced), self.lower(f.right, pending, forced))
        if isinstance(f, ast.Seq):
            out: NFormula | None = None
            gap: list[NAtom] = []
            for e in _sequence(f):
                if isinstance(e, ast.Absent):
                    gap += self.lower_absent(e, pending)
                    continue
                here = self.lower(e, pending, forced)
                if out is None:
                    out = here
                    if gap:  # the leading ABSENT(ψ) WITHIN T: ψ's atoms, for the engine
                        self.lookback_atoms.append(tuple(gap))
                else:
                    label = None
                    if gap:
                        label = NNot(self.label(), tuple(gap))
                        self.absences.append(label)
                    out = NSeq(out, here, label)
                gap = []
            if gap:  # the trailing ABSENT(ψ) WITHIN T: ψ's atoms, for the engine's deadlines
                self.deadline_atoms.append(tuple(gap))
            return out
        if isinstance(f, ast.Contig):
            return NContig(self.lower(f.left, pending, forced),
                           self.lower(f.right, pending, forced))
        if isinstance(f, ast.Iter):
            return NIter(self.lower(f.formula, pending, forced), f.contiguous)
        if isinstance(f, ast.Repeat):
            return self.lower_repeat(f, pending, forced)
        raise self.error(f"{type(f).__name__} is not evaluated by this version", f)

    def lower_repeat(self, f: ast.Repeat, pending: tuple, forced: tuple) -> NFormula:
        """φ{n,m} as copies of φ (each its own atoms): n - 1 copies, then between 1 and
        m - n + 1 more (φ OR φ ; φ OR ...; φ+ when m is unbounded), joined by ';' or ':'."""
        join = NContig if f.contiguous else NSeq

        def copy() -> NFormula:
            return self.lower(f.formula, pending, forced)

        if f.hi is None:
            tail: NFormula = NIter(copy(), f.contiguous)
        else:
            tail = copy()  # one to k copies, built from the last: X1 = φ, Xk = φ OR φ ; Xk-1
            for _ in range(f.hi - f.lo):
                tail = NOr(copy(), join(copy(), tail))
        out = None
        for _ in range(f.lo - 1):
            out = copy() if out is None else join(out, copy())
        return tail if out is None else join(out, tail)

    def lower_absent(self, e: ast.Absent, pending: tuple) -> list[NAtom]:
        """The atoms of ABSENT(ψ): the filters on ψ's own variables reach in (they say which
        events count); an enclosing AS does not (it collects no absent event)."""
        saved = self.enclosing_vars
        self.enclosing_vars = []
        outer = tuple(x for filters in self.enclosing_filters for x in filters)
        try:
            return atoms_of(self.lower(e.formula, pending + outer, ()))
        finally:
            self.enclosing_vars = saved


def _dnf_size(fe: ast.FilterExpr) -> int:
    """How many alternatives ``_dnf`` would build, without building them (iteratively: a
    long chain must not exhaust the recursion limit)."""
    sizes: dict[int, int] = {}
    stack: list[tuple[ast.FilterExpr, bool]] = [(fe, False)]
    while stack:
        node, done = stack.pop()
        if isinstance(node, ast.AtomicFilter | ast.EventPredicate):
            sizes[id(node)] = 1
        elif not done:
            stack += [(node, True), (node.left, False), (node.right, False)]
        else:
            left, right = sizes[id(node.left)], sizes[id(node.right)]
            sizes[id(node)] = left + right if isinstance(node, ast.FilterOr) else left * right
    return sizes[id(fe)]


def _dnf(fe: ast.FilterExpr) -> list[list[ast.AtomicFilter]]:
    """``X[p] AND (Y[q] OR Z[r])`` -> [[X[p], Y[q]], [X[p], Z[r]]]. Predicates between
    events are not lowered (the engine checks them on complex events)."""
    if isinstance(fe, ast.AtomicFilter):
        return [[fe]]
    if isinstance(fe, ast.EventPredicate):
        return [[]]
    if isinstance(fe, ast.FilterOr):
        return _dnf(fe.left) + _dnf(fe.right)
    return [a + b for a, b in product(_dnf(fe.left), _dnf(fe.right))]
