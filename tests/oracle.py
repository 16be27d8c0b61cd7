"""A brute-force CEQL evaluator written straight from the formal semantics (CORE Figure 2).

It is the independent correctness oracle of the engine: it depends only on the query AST and
the Schema (never on cercore's analysis, automata, predicates or runtime), and it is meant to be
small enough to check by reading. It is exponential and only suited to short streams.

Semantics (the product's decisions, DESIGN.md "Semantics decisions"):

* A position is the 0-based index of an event in the input list; every event counts.
* FROM: with streams listed, only events whose type one of them declares are *visible*; an
  invisible event is never part of a complex event and is not a tick of ``WITHIN n EVENTS``.
  An event may be tagged with its stream, ``(type, attrs, stream)``: a tagged event is visible
  only if its stream is listed (or there is no FROM), and ``S>R`` matches R events tagged S or
  untagged (an untagged event belongs to every stream that declares its type).
* Valuations ``([i, j], mu)`` where ``mu`` maps variables to sets of positions, represented here
  as ``(i, j, frozenset of (variable, position))``:

  - ``R`` (or ``S>R``): ``([i, i], {R: {i}})`` for every visible position i of type R;
  - ``phi AS X``: X additionally collects every position of the valuation;
  - ``phi FILTER X[P]``: keep V iff every event in ``mu(X)`` satisfies P (vacuous when empty);
    ``F1 AND F2`` filters by F1 then F2; ``F1 OR F2`` is the union of both filterings;
  - ``phi1 OR phi2``: union;  ``phi1 ; phi2``: ``V1.end < V2.start``, interval
    ``[V1.start, V2.end]``, ``mu`` the pointwise union;  ``phi+``: least fixpoint of
    ``B ∪ (B ; X)``;  ``phi1 : phi2``: as ``;`` but ``V2.start`` is the substream position
    right after ``V1.end``;  ``phi:+``: least fixpoint of ``B ∪ (B : X)``;
  - ``NOT(psi)`` (psi reads one event): ``([i, i], {consumed: {i}})`` for every substream
    position i at which psi has no valuation; ``consumed`` is no variable: it is never reported,
    never bound by ``AS`` and never filtered.
  - ``phi{n,m}``: the union of ``phi^k`` for n <= k <= m, ``phi^k`` = phi ; ... ; phi (k
    times; ``:`` for ``phi:{n,m}``); ``phi{n,}``: every k >= n.
  - ``phi1 ; ABSENT(psi) ; phi2`` (psi reads one event; ``;`` is associative, ABSENT stands
    between present elements of a chain): ``phi1 ; phi2`` whose valuation also records, as
    *candidates*, each substream position strictly between ``V1.end`` and ``V2.start`` at which
    psi has a valuation, with that valuation's variables. A candidate is no binding: ``AS``
    does not collect it and it is never reported. ``X[P]`` drops the candidates carrying X
    whose event fails P (filters say which events count); a predicate between events that
    names a candidate's variable drops it when it fails with the candidate bound there. A
    valuation is kept at the end only if no candidate is left.

  A valuation's complex event is ``(start, end, every position in mu)``; the output is a set.
* WITHIN: ``m(end) - m(start) <= bound`` with ``m`` the tick (index among visible events), the
  schema's time attribute (bound = seconds * units per second), or the named attribute.
* SELECT: ``*`` reports every bound position, ``x, y`` those bound to x or y (event-type names
  are variables), ``NONE`` none; the interval is kept. STRICT keeps a complex event iff its
  reported positions are exactly the substream's positions from the first of them to ``end``.
  WITHIN applies after projection, before the strategy.
  NEXT / LAST / MAX keep, among the complex events of each end position that fit the window
  (docs/DESIGN.md: strategies select within the window), the lexicographically smallest
  ascending position sequence / the largest descending one (longer wins a tie) / those with no
  strict superset (Foundations §4.2 as the note corrects it).
* CONSUME BY ANY (PARTITION): events are processed in stream order; once an event completes a
  complex event, evaluation starts afresh after it (in its partition; ANY: in all). LIMIT is
  not applied here: the caller checks the engine reports the first n of these candidates.
* PARTITION BY groups: an event's key has one value per group, the value of the group's first
  attribute that the event's type declares; no such attribute, or a None value, puts the event in
  no partition (it still is a tick). Keys compare as values (-0.0 is 0.0, 3 is 3.0); every NaN
  is one key. The formula runs on each partition's substream; positions
  and ticks stay global.
* Predicates on one event: an atomic predicate (comparison, LIKE, IN, IN RANGE, NOT IN) touching
  a missing/None attribute, or dividing by zero, is false; ``NOT`` is plain negation. int op int
  stays int, ``/`` and ``%`` truncate toward zero (C); a double makes it float (``%`` on floats
  is C's ``fmod``). ``==`` compares numbers across int/double and strings exactly; ``<`` on
  strings is lexicographic; LIKE is RE2's search (unanchored; RE2's
  dialect, DESIGN.md "Filters"); ranges are inclusive.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from bisect import bisect_right
from fractions import Fraction

import re2

from cercore.ceql import ast
from cercore.schema import Schema
from cercore.types import TIME_UNITS_PER_SECOND

Valuation = tuple[int, int, frozenset]  # (start, end, frozenset of (variable, position))
CONSUMED = "\0not"  # pseudo-variable of an event consumed by NOT(...)
# pseudo-variable of a candidate of ABSENT(psi): (ABSENT, (psi's variables there, position))
ABSENT = "\0absent"


# ---------------------------------------------------------------------------------------
# Predicates on one event
# ---------------------------------------------------------------------------------------
class _Undefined(Exception):
    """A missing attribute, a None value or a division by zero: the atomic predicate is false."""


def _div_trunc(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def eval_expr(e: ast.Expr, attrs: dict):
    """``attrs``: one event's attributes; for a predicate between events, (variable, next) ->
    the attributes of the event the term reads."""
    if isinstance(e, ast.Literal):
        return e.value
    if isinstance(e, ast.EventAttr):
        v = attrs[e.var, e.next].get(e.attr)
        if v is None:
            raise _Undefined(e.attr)
        return v
    if isinstance(e, ast.AttrRef):
        v = attrs.get(e.name)
        if v is None:
            raise _Undefined(e.name)
        return v
    if isinstance(e, ast.Neg):
        return -eval_expr(e.operand, attrs)
    if isinstance(e, ast.BinOp):
        a, b = eval_expr(e.left, attrs), eval_expr(e.right, attrs)
        if e.op in ("/", "%") and b == 0:
            raise _Undefined("division by zero")
        if isinstance(a, int) and isinstance(b, int):
            if e.op == "/":
                return _div_trunc(a, b)
            if e.op == "%":
                return a - b * _div_trunc(a, b)
        else:
            a, b = float(a), float(b)
            if e.op == "%":  # C's fmod: an infinite dividend gives nan (math.fmod raises)
                return math.nan if math.isinf(a) else math.fmod(a, b)
        return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
                "/": lambda: a / b}[e.op]()
    raise TypeError(f"not an expression: {e!r}")


_COMPARE = {
    "==": lambda a, b: a == b, "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b, "<>": lambda a, b: a != b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


def _atomic(p, attrs: dict) -> bool:
    if isinstance(p, ast.Compare):
        return _COMPARE[p.op](eval_expr(p.left, attrs), eval_expr(p.right, attrs))
    if isinstance(p, ast.Like):
        return re2.search(p.pattern, eval_expr(p.operand, attrs)) is not None
    if isinstance(p, ast.InSet):
        v = eval_expr(p.operand, attrs)
        hit = False
        for item in p.items:  # evaluate every item: an undefined one makes the predicate false
            if isinstance(item, ast.Range):
                lo, hi = eval_expr(item.lo, attrs), eval_expr(item.hi, attrs)
                hit = (lo <= v <= hi) or hit
            else:
                hit = (v == eval_expr(item, attrs)) or hit
        return hit != p.negated
    if isinstance(p, ast.InRange):
        v = eval_expr(p.operand, attrs)
        lo, hi = eval_expr(p.lo, attrs), eval_expr(p.hi, attrs)
        return (lo <= v <= hi) != p.negated
    raise TypeError(f"not a predicate: {p!r}")


def satisfies(p: ast.Pred, attrs: dict) -> bool:
    """Does one event (its attribute dict) satisfy predicate ``p``?"""
    if isinstance(p, ast.PredConst):
        return p.value
    if isinstance(p, ast.PredNot):
        return not satisfies(p.operand, attrs)
    if isinstance(p, ast.PredAnd):
        return satisfies(p.left, attrs) and satisfies(p.right, attrs)
    if isinstance(p, ast.PredOr):
        return satisfies(p.left, attrs) or satisfies(p.right, attrs)
    try:
        return _atomic(p, attrs)
    except _Undefined:
        return False


# ---------------------------------------------------------------------------------------
# Formulas: sets of valuations over one substream
# ---------------------------------------------------------------------------------------
class _Evaluator:
    def __init__(self, events, substream: list[int], fits) -> None:
        self.events = events
        self.substream = substream  # visible positions of this partition, increasing
        self.index = {p: k for k, p in enumerate(substream)}
        self.fits = fits  # (start, end) -> may a valuation with this interval still be kept?
        self.memo: dict[ast.Formula, frozenset[Valuation]] = {}

    def run(self, f: ast.Formula) -> frozenset[Valuation]:
        if f not in self.memo:
            self.memo[f] = frozenset(self._eval(f))
        return self.memo[f]

    def _eval(self, f: ast.Formula) -> set[Valuation]:
        if isinstance(f, ast.EventAtom):
            names = {f.event_type} | ({f"{f.stream}>{f.event_type}"} if f.stream else set())
            return {(i, i, frozenset((x, i) for x in names)) for i in self.substream
                    if self.events[i][0] == f.event_type
                    and (f.stream is None or stream_of(self.events[i]) in (None, f.stream))}
        if isinstance(f, ast.As):
            return {(s, e, mu | {(f.var, p) for x, p in mu if x not in (CONSUMED, ABSENT)})
                    for s, e, mu in self.run(f.formula)}
        if isinstance(f, ast.Not):
            matched = {s for s, e, _ in self.run(f.formula) if s == e}
            return {(i, i, frozenset({(CONSUMED, i)})) for i in self.substream
                    if i not in matched}
        if isinstance(f, ast.Filter):
            return self._filter(set(self.run(f.formula)), f.filter)
        if isinstance(f, ast.Or):
            return set(self.run(f.left)) | self.run(f.right)
        if isinstance(f, ast.Seq) and any(isinstance(e, ast.Absent) for e in _chain(f)):
            return self._chain_with_absence(_chain(f))
        if isinstance(f, (ast.Seq, ast.Contig)):
            return self._seq(self.run(f.left), self.run(f.right), isinstance(f, ast.Contig))
        if isinstance(f, ast.Iter):
            base = self.run(f.formula)
            result, delta = set(base), set(base)
            while delta:  # semi-naive fixpoint of X = B ∪ (B ; X)  (or B : X)
                delta = self._seq(base, delta, f.contiguous) - result
                result |= delta
            return result
        if isinstance(f, ast.Repeat):
            return self._repeat(f)
        raise NotImplementedError(f"the oracle does not evaluate {type(f).__name__}")

    def _repeat(self, f: ast.Repeat) -> set[Valuation]:
        """⟦φ{n,m}⟧ = ⟦φ^n⟧ ∪ ... ∪ ⟦φ^m⟧ with φ^k = φ ; ... ; φ (k times; ':' when
        contiguous); without m, every k >= n (a fixpoint, as for +)."""
        base = self.run(f.formula)
        power, result = set(base), set(base) if f.lo == 1 else set()
        for k in range(2, (f.hi if f.hi is not None else f.lo) + 1):
            power = self._seq(power, base, f.contiguous)
            if k >= f.lo:
                result |= power
        if f.hi is None:
            delta = set(result)
            while delta:
                delta = self._seq(delta, base, f.contiguous) - result
                result |= delta
        return result

    def _chain_with_absence(self, elements: list[ast.Formula]) -> set[Valuation]:
        vals = set(self.run(elements[0]))
        absent: list[ast.Formula] = []
        for e in elements[1:]:
            if isinstance(e, ast.Absent):
                absent.append(e.formula)
                continue
            vals = self._seq_absent(vals, self.run(e), absent)
            absent = []
        return vals

    def _seq_absent(self, left, right, absent: list[ast.Formula]) -> set[Valuation]:
        """``left ; ABSENT(psi...) ; right``: as ``_seq``, recording the candidates between."""
        single = [{s: {x for x, _ in mu} for s, e, mu in self.run(psi) if s == e}
                  for psi in absent]
        out = set()
        for s1, e1, mu1 in left:
            for s2, e2, mu2 in right:
                if s2 <= e1 or not self.fits(s1, e2):
                    continue
                lo, hi = self.index[e1] + 1, self.index[s2]
                found = frozenset((ABSENT, (frozenset(at[p]), p)) for p in self.substream[lo:hi]
                                  for at in single if p in at)
                out.add((s1, e2, mu1 | mu2 | found))
        return out

    def _filter(self, vals: set[Valuation], fe: ast.FilterExpr) -> set[Valuation]:
        if isinstance(fe, ast.AtomicFilter):
            def counts(entry) -> bool:  # a candidate still counts unless X[P] rules it out
                names, p = entry[1]
                return fe.var not in names or satisfies(fe.pred, self.events[p][1])

            return {(s, e, frozenset(x for x in mu if x[0] != ABSENT or counts(x)))
                    for s, e, mu in vals
                    if all(satisfies(fe.pred, self.events[p][1]) for x, p in mu if x == fe.var)}
        if isinstance(fe, ast.FilterAnd):
            return self._filter(self._filter(vals, fe.left), fe.right)
        if isinstance(fe, ast.FilterOr):
            return self._filter(vals, fe.left) | self._filter(vals, fe.right)
        if isinstance(fe, ast.EventPredicate):
            # an ABSENT candidate whose variables it names counts only if it holds with the
            # candidate bound to them (and the rest of the valuation)
            def counts(entry, mu) -> bool:
                names, p = entry[1]
                named = names & _pred_vars(fe.pred)
                return not named or self._between(fe.pred, mu | {(x, p) for x in named})

            return {(s, e, frozenset(x for x in mu if x[0] != ABSENT or counts(x, mu)))
                    for s, e, mu in vals if self._between(fe.pred, mu)}
        raise TypeError(f"not a filter: {fe!r}")

    def _between(self, p: ast.Compare, mu) -> bool:
        """Foundations §3 with CORE's iteration: the predicate holds for every combination of
        events bound to its variables (NEXT(l): every two consecutive events bound to l)."""
        terms = []
        stack = [p]
        while stack:
            e = stack.pop()
            if isinstance(e, ast.EventAttr):
                terms.append(e)
            elif isinstance(e, (ast.Compare, ast.BinOp)):
                stack += [e.left, e.right]
            elif isinstance(e, ast.Neg):
                stack.append(e.operand)
        names = sorted({t.var for t in terms})
        paired = {t.var for t in terms if t.next}
        choices = []
        for x in names:
            bound = sorted(q for y, q in mu if y == x)
            choices.append(list(zip(bound, bound[1:])) if x in paired
                           else [(q, q) for q in bound])
        for combo in itertools.product(*choices):
            ctx = {}
            for x, (now, after) in zip(names, combo):
                ctx[x, False] = self.events[now][1]
                ctx[x, True] = self.events[after][1]
            try:
                if not _COMPARE[p.op](eval_expr(p.left, ctx), eval_expr(p.right, ctx)):
                    return False
            except _Undefined:
                return False
        return True

    def _seq(self, left, right, adjacent: bool = False) -> set[Valuation]:
        right = sorted(right, key=lambda v: v[0])
        starts = [v[0] for v in right]
        out = set()
        for s1, e1, mu1 in left:
            if adjacent:
                k = self.index[e1] + 1
                nxt = self.substream[k] if k < len(self.substream) else None
            for s2, e2, mu2 in right[bisect_right(starts, e1):]:
                if adjacent and s2 != nxt:
                    continue
                if self.fits(s1, e2):
                    out.add((s1, e2, mu1 | mu2))
        return out


# ---------------------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------------------
def stream_of(event) -> str | None:
    """The stream an event is tagged with (``(type, attrs, stream)``), None if untagged."""
    return event[2] if len(event) > 2 else None


def _check_supported(q: ast.Query) -> None:
    if q.strategy in ("NEXT", "LAST", "MAX") and starts_unreported(q):
        raise NotImplementedError("a ranked strategy over a match that starts unreported")


def starts_unreported(q: ast.Query) -> bool:
    """Can a match begin with an event it does not report (leading NOT, unprojected atom)?"""
    wanted = None if q.projection == "*" else set() if q.projection == "NONE" \
        else {i.var for i in q.projection}

    def first(f, names: frozenset) -> bool:  # may f's first event be unreported?
        if isinstance(f, ast.Not):
            return True
        if isinstance(f, ast.EventAtom):
            own = {f.event_type} | ({f"{f.stream}>{f.event_type}"} if f.stream else set())
            return wanted is not None and not (names | own) & wanted
        if isinstance(f, ast.As):
            return first(f.formula, names | {f.var})
        if isinstance(f, (ast.Filter, ast.Iter, ast.Repeat)):
            return first(f.formula, names)
        if isinstance(f, ast.Or):
            return first(f.left, names) or first(f.right, names)
        if isinstance(f, ast.Seq):  # the first present element (a leading ABSENT reads none)
            return first(next(e for e in _chain(f) if not isinstance(e, ast.Absent)), names)
        return first(f.left, names)  # :

    return first(q.formula, frozenset())


def _window(q: ast.Query, schema: Schema, events, tick: dict[int, int]):
    """(measure m(position), bound) or None when there is no WITHIN."""
    w = q.within
    if w is None:
        return None
    if isinstance(w, ast.EventsWindow):
        return tick.__getitem__, w.count
    if isinstance(w, ast.TimeWindow):
        attr = schema.time_attribute
        if attr is None:
            raise ValueError("a time window needs a time attribute")
        bound = Fraction(repr(w.seconds)) * TIME_UNITS_PER_SECOND[schema.time_unit]
    else:
        attr, bound = w.attribute, w.amount

    def measure(i: int):
        v = events[i][1].get(attr)
        if v is None:
            raise ValueError(f"event {i} has no value for window attribute {attr!r}")
        return v

    return measure, bound


def _partitions(q: ast.Query, schema: Schema, events, visible: list[int]) -> list[list[int]]:
    if not q.partition_by:
        return [visible]
    parts: dict[tuple, list[int]] = {}
    for i in visible:
        etype, attrs = events[i][:2]
        declared = schema.event_types[etype]
        key = []
        for group in q.partition_by:
            attr = next((a for a in group if declared.has(a)), None)
            if attr is None or attrs.get(attr) is None:
                break
            key.append(math.nan if attrs[attr] != attrs[attr] else attrs[attr])  # one NaN key
        else:
            parts.setdefault(tuple(key), []).append(i)
    return list(parts.values())


def evaluate(query: ast.Query, schema: Schema,
             events: list[tuple[str, dict]]) -> dict[int, set[tuple[int, tuple[int, ...]]]]:
    """End position -> {(start, sorted positions)} of the complex events ending there."""
    return {end: set(ces) for end, ces in evaluate_with_bindings(query, schema, events).items()}


def evaluate_with_bindings(query: ast.Query, schema: Schema, events: list[tuple[str, dict]],
                           watermark: int | None = None
                           ) -> dict[int, dict[tuple[int, tuple[int, ...]], dict]]:
    """End -> {(start, positions): {variable: reported positions some valuation producing this
    complex event binds to it}}. ``watermark``: event time is known to have reached it (an
    ``advance``), for deadlines."""
    _check_supported(query)
    spans = _spans(query.formula)
    if spans is not None:
        return _with_spans(query, schema, events, watermark, *spans)
    if query.streams:
        visible_types = {t for s in query.streams for t in schema.streams[s].event_types}
    else:
        visible_types = set(schema.event_types)
    visible = [i for i, e in enumerate(events) if e[0] in visible_types
               and (stream_of(e) is None or not query.streams or stream_of(e) in query.streams)]
    tick = {i: n for n, i in enumerate(visible)}

    window = _window(query, schema, events, tick)
    if window is None:
        def keep(s, e):
            return True

        def fits(s, e):
            return True
    else:
        measure, bound = window

        def keep(s, e):
            return measure(e) - measure(s) <= bound

        # Pruning is sound only if widening an interval cannot shrink m(end) - m(start).
        ms = [measure(i) for i in visible]
        monotone = all(a <= b for a, b in zip(ms, ms[1:], strict=False))
        fits = keep if monotone else (lambda s, e: True)

    proj = query.projection
    wanted = None if proj == "*" else set() if proj == "NONE" else {i.var for i in proj}
    ranked = query.strategy in ("NEXT", "LAST", "MAX")

    def reported(mu) -> tuple[int, ...]:
        return tuple(sorted({p for x, p in mu
                             if x != CONSUMED and (wanted is None or x in wanted)}))

    def run(substream: list[int]) -> dict[int, dict]:
        """End -> complex events of the formula over one substream, after SELECT and WITHIN,
        each with its bindings."""
        found: dict[int, dict] = {}
        for start, end, mu in _Evaluator(events, substream, fits).run(query.formula):
            if any(x == ABSENT for x, _ in mu):
                continue  # an event ABSENT(...) rules out occurred
            positions = reported(mu)
            if query.strategy == "STRICT" and not _strict(positions, end, substream):
                continue
            if keep(start, end):
                binds = found.setdefault(end, {}).setdefault((start, positions), {})
                for x, p in mu:
                    if p in positions and (wanted is None or x in wanted):
                        binds.setdefault(x, set()).add(p)
        if ranked:  # among the complex events that fit the window (docs/DESIGN.md)
            found = {end: {c: ces[c] for c in _select(query.strategy, set(ces))}
                     for end, ces in found.items()}
        return {end: ces for end, ces in found.items() if ces}

    partitions = _partitions(query, schema, events, visible)
    if query.consume in (None, "NONE"):
        return {end: ces for sub in partitions for end, ces in run(sub).items()}
    # CONSUME BY: after an event completes a complex event, evaluation of its partition (ANY:
    # of every partition) starts afresh with the next event
    part_of = {p: n for n, sub in enumerate(partitions) for p in sub}
    barrier: dict[int | None, int] = {}
    cache: dict[tuple[int, int], dict[int, set]] = {}
    out = {}
    for end in sorted(part_of):
        k = part_of[end]
        b = barrier.get(None if query.consume == "ANY" else k, -1)
        if (k, b) not in cache:
            cache[k, b] = run([p for p in partitions[k] if p > b])
        ces = cache[k, b].get(end)
        if ces:
            out[end] = ces
            barrier[None if query.consume == "ANY" else k] = end
    return out


def _select(strategy: str, ces: set) -> set:
    """NEXT / LAST / MAX among the complex events of one end position, straight from the
    definitions (Foundations §4.1–4.2 as the note corrects them): C ≤next C' iff C = C' or
    min(C Δ C') ∈ C'; C ≤last C' iff C = C' or max(C Δ C') ∈ C'; MAX keeps the ⊆-maximal.
    (Positions are compared as sets; with a trailing NOT their maxima may differ.)"""
    if strategy == "MAX":
        sets = [(c, set(c[1])) for c in ces]
        return {c for c, s in sets if not any(s < t for _, t in sets)}
    pick = min if strategy == "NEXT" else max

    def beats(c, d) -> bool:  # does c win over d?
        diff = set(c[1]) ^ set(d[1])
        return not diff or pick(diff) in c[1]

    return {c for c in ces if all(beats(c, d) for d in ces)}


def _strict(positions: tuple[int, ...], end: int, substream: list[int]) -> bool:
    if not positions:
        return False
    first = substream.index(positions[0])
    return substream[first:substream.index(end) + 1] == list(positions)


def _chain(f: ast.Formula) -> list[ast.Formula]:
    """The elements of a chain of ``;`` (associative)."""
    if isinstance(f, ast.Seq):
        return _chain(f.left) + _chain(f.right)
    return [f]


# ---------------------------------------------------------------------------------------
# phi ; ABSENT(psi) WITHIN T at the end of the pattern
# ---------------------------------------------------------------------------------------
def _spans(f: ast.Formula):
    """(phi without a leading and a trailing ABSENT(...) WITHIN T, under the same FILTERs;
    the leading one or None; the trailing one or None; the FILTERs) or None when neither."""
    filters = []
    while isinstance(f, ast.Filter):
        filters.append(f.filter)
        f = f.formula
    elements = _chain(f)

    def spanned(e):
        return isinstance(e, ast.Absent) and e.deadline is not None

    lead = elements[0] if spanned(elements[0]) else None
    trail = elements[-1] if spanned(elements[-1]) and len(elements) > 1 else None
    if lead is None and trail is None:
        return None
    rest = elements[1 if lead else 0:len(elements) - 1 if trail else len(elements)]
    phi = rest[0]
    for e in rest[1:]:
        phi = ast.Seq(phi, e)
    for fe in reversed(filters):
        phi = ast.Filter(phi, fe)
    return phi, lead, trail, filters


def _span(schema: Schema, w: ast.Window):
    if isinstance(w, ast.TimeWindow):
        return (schema.time_attribute,
                Fraction(repr(w.seconds)) * TIME_UNITS_PER_SECOND[schema.time_unit])
    return w.attribute, w.amount


def _psi_names(absent: ast.Absent) -> set[str]:
    names = set()
    for g in [absent.formula, *_subformulas_of(absent.formula)]:
        if isinstance(g, ast.EventAtom):
            names |= {g.event_type} | ({f"{g.stream}>{g.event_type}"} if g.stream else set())
        elif isinstance(g, ast.As):
            names.add(g.var)
    return names


def _psi_counts(ev, absent: ast.Absent, filters: list, p: int, bindings: dict) -> bool:
    """Whether psi event ``p`` satisfies the predicates between events that name psi's
    variables, with the complex event's ``bindings`` for the others."""
    names = _psi_names(absent)
    mu = frozenset((x, q) for x, qs in bindings.items() for q in qs)
    for fe in filters:
        for c in _conjuncts(fe):
            if isinstance(c, ast.EventPredicate) and names & _pred_vars(c.pred):
                bound = mu | {(x, p) for x in names & _pred_vars(c.pred)}
                if not ev._between(c.pred, bound):
                    return False
    return True


def _psi(absent: ast.Absent, filters: list) -> ast.Formula:
    """psi with the FILTERs on its variables (joined by AND) applied to it."""
    names = _psi_names(absent)
    psi = absent.formula
    for fe in filters:
        for af in _conjuncts(fe):
            if isinstance(af, ast.AtomicFilter) and af.var in names:
                psi = ast.Filter(psi, af)
    return psi


def _with_spans(query, schema, events, watermark, phi, lead, trail, filters):
    """The complex events of phi (strategy included) such that
    - (leading ABSENT(psi) WITHIN T) no psi event of the partition lies before the start s
      with time >= time(s) - T;
    - (trailing) no psi event of the partition follows the end e with time <= time(e) + T, and
      that deadline has passed: some visible event is later, or the watermark is.
    psi: its own filters and the FILTERs on its variables (which must be joined by AND)."""
    found = evaluate_with_bindings(dataclasses.replace(query, formula=phi), schema, events)
    visible_types = ({t for s in query.streams for t in schema.streams[s].event_types}
                     if query.streams else set(schema.event_types))
    visible = [i for i, e in enumerate(events) if e[0] in visible_types
               and (stream_of(e) is None or not query.streams or stream_of(e) in query.streams)]
    out = {}
    for sub in _partitions(query, schema, events, visible):
        ev = _Evaluator(events, sub, lambda s, e: True)
        for end in sub:
            if end not in found:
                continue
            kept = dict(found[end])
            if lead is not None:
                attr, span = _span(schema, lead.deadline)
                before = sorted(s for s, e, _ in ev.run(_psi(lead, filters)) if s == e)
                kept = {c: b for c, b in kept.items()
                        if not any(p < c[0] and events[p][1][attr] >= events[c[0]][1][attr] - span
                                   and _psi_counts(ev, lead, filters, p, b) for p in before)}
            if trail is not None:
                attr, span = _span(schema, trail.deadline)
                due = events[end][1][attr] + span
                latest = max((events[i][1][attr] for i in visible), default=None)
                after = [s for s, e, _ in ev.run(_psi(trail, filters)) if s == e]
                if not ((latest is not None and latest > due)
                        or (watermark is not None and due < watermark)):
                    kept = {}
                kept = {c: b for c, b in kept.items()
                        if not any(p > end and events[p][1][attr] <= due
                                   and _psi_counts(ev, trail, filters, p, b) for p in after)}
            if kept:
                out[end] = kept
    return out


def _pred_vars(p: ast.Compare) -> set[str]:
    """The variables a predicate between events names."""
    out, stack = set(), [p]
    while stack:
        e = stack.pop()
        if isinstance(e, ast.EventAttr):
            out.add(e.var)
        elif isinstance(e, (ast.Compare, ast.BinOp)):
            stack += [e.left, e.right]
        elif isinstance(e, ast.Neg):
            stack.append(e.operand)
    return out


def _conjuncts(fe: ast.FilterExpr) -> list:
    if isinstance(fe, ast.FilterAnd):
        return _conjuncts(fe.left) + _conjuncts(fe.right)
    if isinstance(fe, ast.FilterOr):
        raise NotImplementedError("a FILTER with OR around an ABSENT with a deadline")
    return [fe]


def _subformulas_of(f: ast.Formula) -> list:
    out, stack = [], [f]
    while stack:
        g = stack.pop()
        out.append(g)
        stack += [getattr(g, n) for n in ("formula", "left", "right") if hasattr(g, n)]
    return out
