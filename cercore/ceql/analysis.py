"""Semantic analysis: resolve names against the schema, type-check predicates, and lower the
formula to normalised CEL (filters pushed down onto atoms).

Why the push-down needs no case splits here: in CORE's semantics (paper Fig. 2) a variable holds
a *set* of positions and ``FILTER X[P]`` requires every position in it to satisfy P. A position
belongs to X exactly when it comes from an atom named X or from an atom under ``AS X`` inside
the filtered sub-formula, so ``φ FILTER X[P]`` equals φ with P conjoined to each of those atoms.
For the same reason CORE formulas have no "unsafe" variable reuse: ``A AS x ; B AS x`` simply
collects both positions into x. ``FILTER F1 OR F2`` duplicates φ, as the paper defines it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from itertools import product

from cercore.ceql import ast
from cercore.ceql.guards import Guard, guard_and, guard_of
from cercore.ceql.normal import NAtom, NContig, NFormula, NIter, NNot, NOr, NSeq, atoms_of
from cercore.ceql.regex import regex_problem
from cercore.ceql.terms import event_terms
from cercore.errors import CEQLSemanticError
from cercore.schema import Schema, did_you_mean
from cercore.types import INT64_MAX, AttrType, window_length

MAX_FILTER_DISJUNCTS = 256
MAX_REPEAT = 100  # A{n,m}: the automaton holds up to about 2m copies of A


@dataclass(frozen=True)
class WindowSpec:
    """The WITHIN clause, resolved. ``epsilon`` is inclusive: end − start ≤ epsilon, measured in
    query-read events (``kind="events"``) or in the integer values of ``attribute``."""

    kind: str | None = None  # None | "events" | "time" | "attr"
    epsilon: int = 0
    attribute: str | None = None


@dataclass(frozen=True)
class Deadline:
    """``φ ; ABSENT(ψ) WITHIN T``: T in units of ``attribute`` (the attribute event time is
    ordered by) and the atoms of ψ (events satisfying one of them rule a pending complex event
    out). See ``cercore.runtime.deadlines``."""

    span: int
    attribute: str
    psi_atoms: tuple[int, ...]

    @property
    def psi_bits(self) -> int:
        return sum(1 << a for a in self.psi_atoms)


@dataclass
class AnalysedQuery:
    """Everything later stages need, with no reference to variables."""

    query: ast.Query
    schema: Schema
    text: str | None
    formula: NFormula
    atoms: list[NAtom]
    leaves: list[ast.Pred]
    visible_types: frozenset[int]
    window: WindowSpec
    partition_by: tuple[tuple[str, ...], ...]
    warnings: list[str] = field(default_factory=list)
    negations: list[NNot] = field(default_factory=list)
    # projection: ids of the atoms whose events are reported (None: SELECT *)
    # FROM: ids of the streams whose tagged events the query reads (None: no FROM, all)
    from_streams: frozenset[int] | None = None
    marked: frozenset[int] | None = None
    strategy: str | None = None  # STRICT | NEXT | LAST | MAX; None for ALL/ANY/no keyword
    # predicates between events (b.price > s.price), checked on each complex event
    event_predicates: tuple[ast.Compare, ...] = ()
    # the PARTITION BY group those predicates' equalities imply (also in partition_by), or None
    implied_partition: tuple[str, ...] | None = None
    # ABSENT(...) between sequence elements: the labels of their gaps (NNot over the absent
    # atoms); unlike NOT, they consume nothing, so events that satisfy no atom stay skippable
    absences: list[NNot] = field(default_factory=list)
    # φ ; ABSENT(ψ) WITHIN T at the end of the pattern (the formula above is φ), or None
    deadline: Deadline | None = None
    # ABSENT(ψ) WITHIN T ; φ at its start: no ψ event in the T before φ's first event
    lookback: Deadline | None = None
    # the predicates between events the engine checks: those the partition does not already
    # guarantee (an equality x.a = y.b between the attributes that key every type x and y
    # can bind holds on every complex event, since each partition is evaluated apart)
    checked_predicates: tuple[ast.Compare, ...] = ()

    @property
    def attribute_projection(self) -> dict[str, tuple[str, ...] | None] | None:
        """``SELECT x[a, b], y``: variable -> the attributes its events report (None: all);
        None when no SELECT item restricts attributes."""
        proj = self.query.projection
        if not isinstance(proj, tuple) or all(i.attributes is None for i in proj):
            return None
        out: dict[str, tuple[str, ...] | None] = {}
        for item in proj:
            if item.attributes is None or out.get(item.var, ()) is None:
                out[item.var] = None
            else:
                out[item.var] = tuple(dict.fromkeys(out.get(item.var, ()) + item.attributes))
        return out


@dataclass(frozen=True)
class Spot:
    """A place in the query text (1-based), for errors about names the AST keeps no place of."""

    line: int | None
    column: int | None


class _Analyser:
    def __init__(self, query: ast.Query, schema: Schema, text: str | None) -> None:
        self.q = query
        self.schema = schema
        self.text = text
        self.attr_types = schema.attribute_types()
        self.leaves: list[ast.Pred] = []
        self.leaf_index: dict[ast.Pred, int] = {}
        self.atoms: list[NAtom] = []
        self.negations: list[NNot] = []
        self.absences: list[NNot] = []
        self.trailing = _trailing_absence(query.formula)  # ABSENT(ψ) WITHIN T ending it
        self.deadline_atoms: list[tuple[NAtom, ...]] = []  # ψ's atoms, per lowering of φ
        self.leading = _leading_absence(query.formula)  # ABSENT(ψ) WITHIN T starting it
        self.lookback_atoms: list[tuple[NAtom, ...]] = []
        self.n_labels = 0  # atoms and negations share one label space
        self.enclosing_vars: list[str] = []  # the AS variables around the formula being lowered
        self.enclosing_filters: list[tuple] = []  # the filters those AS took from ``pending``
        self.warnings: list[str] = []
        self.event_bindable: dict[str, set[str]] = {}  # variables an event predicate may name
        self.absent_predicates: list[ast.Compare] = []  # those naming an ABSENT's variables

    def error(self, msg: str, node=None, hint: str | None = None) -> CEQLSemanticError:
        return CEQLSemanticError(msg, line=getattr(node, "line", None),
                                 column=getattr(node, "column", None), text=self.text, hint=hint)

    def spot(self, clause: str, name: str | None) -> Spot:
        """Where ``name`` (or, when None, the value) follows the clause matching the regex
        ``clause`` in the query text: the names of FROM, PARTITION BY and LIMIT keep no
        position in the AST. Falls back to the query's own position."""
        m = re.search(clause, self.text or "", re.IGNORECASE)
        if m is not None:
            target = r"\S" if name is None else rf"(?<![\w.]){re.escape(name)}(?![\w])"
            hit = re.compile(target).search(self.text, m.end())
            if hit is not None:
                before = self.text[:hit.start()]
                return Spot(before.count("\n") + 1, hit.start() - before.rfind("\n"))
        return Spot(self.q.line, self.q.column)

    # ---- clauses ----------------------------------------------------------------------
    def run(self) -> AnalysedQuery:
        self.check_clauses()
        visible = self.resolve_streams()
        self.visible = visible
        self.check_formula(self.q.formula)
        event_predicates = self.resolve_event_predicates()
        formula = self.lower(self.q.formula, (), ())
        window = self.resolve_window()
        partition = self.resolve_partition()
        implied = self.implied_partition(event_predicates)
        if implied is not None:
            partition += (implied,)
        # the implied partition decides which absent events count exactly as its tying
        # equalities do; any other predicate naming a variable an ABSENT reads would have to
        # be checked on each event in the gap, which the automaton has already ruled out
        unexact = [c for c in self.absent_predicates if implied is None or not _ties(c)]
        if unexact:
            c = unexact[0]
            named = sorted({e.var for e in event_terms(c)} & _absent_read(self.q.formula))
            only = _absent_only(self.q.formula)
            x = next((v for v in named if v in only), named[0])
            reads = "which only an ABSENT(...) reads" if x in only else \
                "which an ABSENT(...) also reads (it says which of the absent events count)"
            hint = "add the missing equalities, or scope the absence with PARTITION BY " \
                "[attribute]"
            if x not in only:
                hint = (f"name the present {x} events with AS and compare those: the "
                        f"predicate then does not read the absent ones; or " + hint)
            raise self.error(f"a predicate between events names {x!r}, {reads}: it is "
                             "supported only as equalities (x.a = y.b) that tie every event of "
                             "the pattern, the absent ones included, to one key", c, hint)
        if window.kind is None and (self.trailing is not None or self.leading is not None):
            self.warnings.append(
                "no WITHIN clause after the pattern: the ABSENT(...) WITHIN span bounds only "
                "the wait beside the pattern, not the pattern itself, so the events it reads "
                "are kept for the whole stream (memory grows with it); add a WITHIN for the "
                "pattern (e.g. ... WITHIN 5 MINUTES at the end) to bound it")
        elif window.kind is None:
            self.warnings.append("no WITHIN clause: memory grows with the stream "
                                 "(nothing can be reclaimed)")
        return AnalysedQuery(self.q, self.schema, self.text, formula, self.atoms, self.leaves,
                             frozenset(self.schema.event_types[t].id for t in visible),
                             window, partition, self.warnings, self.negations,
                             None if not self.q.streams else
                             frozenset(self.schema.stream_ids[n] for n in self.q.streams),
                             self.resolve_projection(),
                             self.q.strategy if self.q.strategy not in ("ALL", "ANY") else None,
                             event_predicates, implied, self.absences,
                             self.resolve_deadline(window), self.resolve_lookback(window),
                             checked_predicates=tuple(
                                 c for c in event_predicates if not partition_guarantees(
                                     c, partition, self.schema, _bindable(self.q.formula))))

    def check_clauses(self) -> None:
        q = self.q
        if q.limit is not None and q.limit < 0:
            raise self.error("LIMIT needs a non-negative number of complex events",
                             self.spot(r"\bLIMIT\b", None))
        if q.limit is not None and q.limit > INT64_MAX:
            raise self.error(f"LIMIT is too large: at most {INT64_MAX}",
                             self.spot(r"\bLIMIT\b", None),
                             "leave LIMIT out to report every complex event")

    def resolve_projection(self) -> frozenset[int] | None:
        """SELECT x, y: the atoms binding a projected variable (event-type names are variables
        too); SELECT NONE: no atom; SELECT *: None (every atom)."""
        proj = self.q.projection
        if proj == "*":
            return None
        if proj == "NONE":
            return frozenset()
        bindable = _bindable(self.q.formula)
        absent = _absent_only(self.q.formula)
        for item in proj:
            if item.var in absent:
                raise self.error(f"SELECT names {item.var!r}, which only an ABSENT(...) reads: "
                                 "it binds no event", item)
            if item.var not in bindable:
                raise self.error(f"SELECT names {item.var!r}, which the WHERE clause does not "
                                 "bind" + did_you_mean(item.var, bindable), item,
                                 _unbound_hint(item.var))
            known = {a for t in bindable[item.var]
                     for a, _ in self.schema.event_types[t].attributes}
            for attr in item.attributes or ():
                if attr not in known:
                    raise self.error(f"SELECT {item.var}[{attr}]: no event {item.var!r} can bind "
                                     f"has an attribute {attr!r}" + did_you_mean(attr, known),
                                     item)
        wanted = {item.var for item in proj}
        return frozenset(a.id for a in self.atoms if a.variables & wanted)

    def resolve_streams(self) -> set[str]:
        if not self.q.streams:
            return set(self.schema.event_types)
        visible: set[str] = set()
        for s in self.q.streams:
            if s not in self.schema.streams:
                raise self.error(f"unknown stream {s!r}" + did_you_mean(s, self.schema.streams),
                                 self.spot(r"\bFROM\b", s))
            visible.update(self.schema.streams[s].event_types)
        return visible

    def resolve_window(self) -> WindowSpec:
        return self.window_spec(self.q.within)

    def window_spec(self, w: ast.Window | None) -> WindowSpec:
        """A WITHIN span (the query's window, or an ABSENT's deadline) in event-time units."""
        if w is None:
            return WindowSpec()
        if isinstance(w, ast.EventsWindow):
            if w.count < 0:
                raise self.error("WITHIN needs a non-negative number of events", w)
            return WindowSpec("events", self.within_int64(w.count, "events", w))
        if isinstance(w, ast.TimeWindow):
            attr = self.schema.time_attribute
            if attr is None:
                raise self.error(
                    "a time window needs event time, but the schema names no time attribute", w,
                    "mark one attribute primary_time in the declaration, or pass "
                    "time_attribute=... (CLI: --time-attribute)")
            if not self.schema.time_unit_stated:
                told = unstated_unit_warning(attr)
                if told not in self.warnings:
                    self.warnings.append(told)
            units = window_length(w.seconds, self.schema.time_unit)
            return WindowSpec("time", self.within_int64(
                INT64_MAX + 1 if units is None else units, self.schema.time_unit, w), attr)
        attr = w.attribute
        t = self.attr_types.get(attr)
        if t is None:
            raise self.error(f"unknown attribute {attr!r} in WITHIN"
                             + did_you_mean(attr, self.attr_types), w)
        if t is not AttrType.INT:
            raise self.error(f"WITHIN [{attr}] needs an int attribute, not {t.value}", w)
        used = {self.schema.type_names[t] for a in self.atoms for t in a.types}
        lacking = sorted(n for n in used if not self.schema.event_types[n].has(attr))
        if lacking:
            raise self.error(f"WITHIN [{attr}]: event type(s) {', '.join(lacking)} have no "
                             f"attribute {attr!r}", w)
        amount = w.amount
        if isinstance(amount, float) and math.isfinite(amount):
            amount = math.floor(amount)
        return WindowSpec("attr", self.within_int64(amount, f"of {attr}", w), attr)

    def within_int64(self, amount: int | float, unit: str, w) -> int:
        """A window length checked against int64 (times are int64: a longer window could
        not be told from no window, and the kernels' arithmetic would overflow)."""
        if isinstance(amount, float) or not 0 <= amount <= INT64_MAX:
            raise self.error(f"WITHIN is too large: at most {INT64_MAX} {unit} (event times and "
                             "window lengths are int64)", w,
                             "leave WITHIN out for an unbounded window")
        return int(amount)

    def resolve_partition(self) -> tuple[tuple[str, ...], ...]:
        declared = {a for n in self.visible for a, _ in self.schema.event_types[n].attributes}
        for group in self.q.partition_by:
            for a in group:
                if a not in declared:
                    raise self.error(f"unknown attribute {a!r} in PARTITION BY"
                                     + did_you_mean(a, declared),
                                     self.spot(r"\bPARTITION\s+BY\b", a))
        used = {self.schema.type_names[t] for a in self.atoms for t in a.types}
        for group in self.q.partition_by:
            for name in sorted(used):
                have = [a for a in group if self.schema.event_types[name].has(a)]
                if len(have) > 1:
                    raise self.error(
                        f"event type {name} has {len(have)} of the attributes of PARTITION BY "
                        f"[{', '.join(group)}] ({', '.join(have)}): inside one bracket each "
                        "event type has exactly one of them (one key that types name "
                        "differently, e.g. [plug, household])",
                        self.spot(r"\bPARTITION\s+BY\b", group[0]),
                        "for the pair as a composite key, write PARTITION BY "
                        + ", ".join(f"[{a}]" for a in group))
        for group in self.q.partition_by:
            lacking = sorted(n for n in used
                             if not any(self.schema.event_types[n].has(a) for a in group))
            if lacking:
                self.warnings.append(
                    f"event type(s) {', '.join(lacking)} have none of PARTITION BY "
                    f"[{', '.join(group)}]: their events belong to no partition and never match")
        return tuple(tuple(g) for g in self.q.partition_by)

    # ---- names and types ----------------------------------------------------------------
    def check_formula(self, f: ast.Formula) -> None:
        if isinstance(f, ast.EventAtom):
            self.check_atom(f)
        elif isinstance(f, ast.Seq):
            elements = _sequence(f)
            for k, e in enumerate(elements):
                if isinstance(e, ast.Absent):
                    self.check_absent(e, elements, k)
                else:
                    self.check_formula(e)
        elif isinstance(f, ast.Absent):
            raise self.error("ABSENT(...) stands between two elements of a ';' sequence", f,
                             "write A ; ABSENT(B) ; C: no B between the A and the C")
        elif isinstance(f, ast.Repeat):
            if f.lo < 1 or (f.hi is not None and f.hi < f.lo):
                raise self.error(f"a repetition count needs 1 <= n <= m, not {{{f.lo}"
                                 + ("" if f.hi == f.lo else f",{'' if f.hi is None else f.hi}")
                                 + "}", f, "A{2} is two A, A{2,4} two to four, A{2,} two or "
                                 "more")
            if max(f.lo, f.hi or 0) > MAX_REPEAT:
                raise self.error(f"a repetition count is at most {MAX_REPEAT}", f,
                                 "the automaton holds one copy of the pattern per count; for "
                                 "'n or more' write A{n,}")
            self.check_formula(f.formula)
        elif isinstance(f, ast.Not):
            if not _single_event(f.formula):
                raise self.error("NOT(...) takes one event: an event type, optionally with AS, "
                                 "FILTER or OR", f)
            self.check_formula(f.formula)
        elif isinstance(f, ast.As) and ">" in f.var:
            raise self.error(f"variable name {f.var!r} contains '>'", f,
                             "'>' qualifies an event type by its stream (S>R); choose "
                             "another name")
        elif isinstance(f, ast.Filter):
            self.check_formula(f.formula)
            bindable = _bindable(f.formula)
            for af in _atomic_filters(f.filter):
                self.check_filter(af, bindable)
            self.event_bindable = bindable
            for ep in _event_predicates(f.filter):
                self.check_pred(ep.pred, "", [])
        else:
            for child in _children(f):
                self.check_formula(child)

    def check_absent(self, e: ast.Absent, elements: list[ast.Formula], k: int) -> None:
        """ABSENT(ψ) at ``elements[k]`` of a sequence: ψ is one event, with present elements
        on both sides in the same sequence."""
        if not _single_event(e.formula):
            raise self.error("ABSENT(...) takes one event: an event type, optionally with AS, "
                             "FILTER or OR", e)
        before = any(not isinstance(x, ast.Absent) for x in elements[:k])
        after = any(not isinstance(x, ast.Absent) for x in elements[k + 1:])
        if e.deadline is not None and e is not self.trailing and e is not self.leading:
            hint = "between two elements, write A ; ABSENT(B) ; C (no span)"
            if _has_looser_operator(self.q.formula):
                hint = ("':' and OR bind looser than ';': A : B ; ABSENT(C) WITHIN 30 SECONDS "
                        "reads as A : (B ; ABSENT(C) WITHIN 30 SECONDS); write (A : B) ; "
                        "ABSENT(C) WITHIN 30 SECONDS. Or, " + hint)
            raise self.error("a span (ABSENT(...) WITHIN ...) ends or starts the whole pattern: "
                             "A ; ABSENT(B) WITHIN 5 MINUTES, ABSENT(B) WITHIN 5 MINUTES ; A",
                             e, hint)
        if not before and e is not self.leading:
            raise self.error("ABSENT(...) at the start of a pattern needs a span: "
                             "ABSENT(B) WITHIN 5 MINUTES ; A", e,
                             "or put it between two elements: A ; ABSENT(B) ; C")
        if not after and e is not self.trailing:
            raise self.error("ABSENT(...) at the end of a pattern needs a deadline: "
                             "A ; ABSENT(B) WITHIN 5 MINUTES", e,
                             "or put it between two elements: A ; ABSENT(B) ; C")
        self.check_formula(e.formula)

    def check_atom(self, a: ast.EventAtom) -> None:
        if a.event_type not in self.schema.event_types:
            raise self.error(f"unknown event type {a.event_type!r}"
                             + did_you_mean(a.event_type, self.schema.event_types), a)
        if a.stream is not None:
            if a.stream not in self.schema.streams:
                raise self.error(f"unknown stream {a.stream!r}"
                                 + did_you_mean(a.stream, self.schema.streams), a)
            if a.event_type not in self.schema.streams[a.stream].event_types:
                raise self.error(f"stream {a.stream} has no event type {a.event_type}", a)
            if self.q.streams and a.stream not in self.q.streams:
                raise self.error(f"stream {a.stream} is not in the FROM clause", a)
        if a.event_type not in self.visible:
            raise self.error(f"event type {a.event_type} is not in the FROM stream(s) "
                             f"{', '.join(self.q.streams)}", a)

    def check_filter(self, af: ast.AtomicFilter, bindable: dict[str, set[str]]) -> None:
        if af.var not in bindable:
            everywhere = _bindable(self.q.formula)
            if af.var in everywhere:
                raise self.error(f"variable {af.var!r} is not bound inside the formula this "
                                 "FILTER applies to", af,
                                 "put the FILTER where the variable is defined, or widen the "
                                 "parentheses")
            raise self.error(f"unknown variable {af.var!r}"
                             + did_you_mean(af.var, everywhere), af, _unbound_hint(af.var))
        types = sorted(bindable[af.var])
        self.check_pred(af.pred, af.var, types)

    def check_pred(self, p: ast.Pred, var: str, types: list[str]) -> None:
        if isinstance(p, (ast.PredAnd, ast.PredOr)):
            self.check_pred(p.left, var, types)
            self.check_pred(p.right, var, types)
        elif isinstance(p, ast.PredNot):
            self.check_pred(p.operand, var, types)
        elif isinstance(p, ast.Compare):
            lt = self.expr_type(p.left, var, types)
            rt = self.expr_type(p.right, var, types)
            if _kind(lt) != _kind(rt):
                raise self.error(f"cannot compare {lt} with {rt}", p)
            if lt == "bool" and p.op not in ("==", "!="):
                raise self.error(f"booleans support only = and !=, not {p.op}", p)
        elif isinstance(p, ast.Like):
            t = self.expr_type(p.operand, var, types)
            if t != "string":
                raise self.error(f"LIKE needs a string, not {t}", p)
            problem = regex_problem(p.pattern)
            if problem is not None:
                raise self.error(problem, p)
        elif isinstance(p, ast.InSet):
            t = self.expr_type(p.operand, var, types)
            for item in p.items:
                if isinstance(item, ast.Range):
                    for bound in (item.lo, item.hi):
                        bt = self.expr_type(bound, var, types)
                        if not (_kind(bt) == _kind(t) == "number"):
                            raise self.error(f"a range needs numbers, not {bt} for {t}", item)
                else:
                    it = self.expr_type(item, var, types)
                    if _kind(it) != _kind(t):
                        raise self.error(f"IN list mixes {t} with {it}", item)
        elif isinstance(p, ast.InRange):
            t = self.expr_type(p.operand, var, types)
            for bound in (p.lo, p.hi):
                bt = self.expr_type(bound, var, types)
                if not (_kind(bt) == _kind(t) == "number"):
                    raise self.error(f"IN RANGE needs numbers, not {t} and {bt}", p)

    def expr_type(self, e: ast.Expr, var: str, types: list[str]) -> str:
        if isinstance(e, ast.Literal):
            v = e.value
            return ("bool" if isinstance(v, bool) else "int" if isinstance(v, int)
                    else "double" if isinstance(v, float) else "string")
        if isinstance(e, ast.EventAttr):
            return self.event_attr_type(e)
        if isinstance(e, ast.AttrRef):
            owners = [t for t in types if self.schema.event_types[t].has(e.name)]
            if not owners:
                known = {a for t in types for a, _ in self.schema.event_types[t].attributes}
                raise self.error(
                    f"attribute {e.name!r} does not exist in {', '.join(types)} (the events "
                    f"{var!r} can bind)" + did_you_mean(e.name, known), e)
            return self.attr_types[e.name].value
        if isinstance(e, ast.Neg):
            t = self.expr_type(e.operand, var, types)
            if _kind(t) != "number":
                raise self.error(f"cannot negate {t}", e)
            return t
        lt = self.expr_type(e.left, var, types)
        rt = self.expr_type(e.right, var, types)
        if _kind(lt) != "number" or _kind(rt) != "number":
            raise self.error(f"arithmetic '{e.op}' needs numbers, not {lt} and {rt}", e)
        return "int" if lt == rt == "int" else "double"

    def event_attr_type(self, e: ast.EventAttr) -> str:
        if e.var not in self.event_bindable:
            everywhere = _bindable(self.q.formula)
            if e.var in everywhere:
                raise self.error(f"variable {e.var!r} is not bound inside the formula this "
                                 "FILTER applies to", e)
            raise self.error(f"unknown variable {e.var!r}" + did_you_mean(e.var, everywhere), e)
        types = sorted(self.event_bindable[e.var])
        if not any(self.schema.event_types[t].has(e.attr) for t in types):
            known = {a for t in types for a, _ in self.schema.event_types[t].attributes}
            raise self.error(f"attribute {e.attr!r} does not exist in {', '.join(types)} (the "
                             f"events {e.var!r} can bind)" + did_you_mean(e.attr, known), e)
        return self.attr_types[e.attr].value

    def resolve_event_predicates(self) -> tuple[ast.Compare, ...]:
        """The predicates between events, all in the FILTER of the whole pattern and joined
        by AND there: the engine checks them on each complex event (on every valuation that
        produces it), which needs the complex event whole (SELECT *)."""
        found: list[ast.Compare] = []
        f = self.q.formula
        while isinstance(f, ast.Filter):  # the FILTERs that apply to the whole pattern
            stack = [f.filter]
            while stack:
                fe = stack.pop()
                if isinstance(fe, ast.FilterAnd):
                    stack += [fe.right, fe.left]
                elif isinstance(fe, ast.EventPredicate):
                    found.append(fe.pred)
                elif isinstance(fe, ast.FilterOr) and _event_predicates(fe):
                    raise self.error("a predicate between events cannot be an alternative of "
                                     "OR", _event_predicates(fe)[0],
                                     "join predicates between events to the rest with AND, "
                                     "or write one query per alternative")
            f = f.formula
        for inner in _subformulas(f):
            if isinstance(inner, ast.Filter) and _event_predicates(inner.filter):
                raise self.error("a predicate between events must be in the FILTER that "
                                 "applies to the whole pattern", _event_predicates(inner.filter)[0],
                                 "move it to the last FILTER: it holds when it holds for every "
                                 "event bound to its variables")
        if not found:
            return ()
        for c in found:
            if not event_terms(c):
                raise self.error("a predicate between events must name an event (x.attr or "
                                 "NEXT(x).attr)", c, "a comparison of constants says nothing "
                                 "about the events: drop it, or put it inside x[...]")
        absent = _absent_read(self.q.formula)
        # a predicate naming a variable an ABSENT reads (its own, or a name it shares with the
        # present elements, as an event type) says which events count; it is exact when it is
        # an equality that ties every event, the absent ones included, to one key (run)
        self.absent_predicates = [c for c in found if {e.var for e in event_terms(c)} & absent]
        where = found[0]
        if self.q.projection != "*":
            raise self.error("predicates between events need SELECT * (they are checked on the "
                             "whole complex event)", where)
        if self.q.strategy in ("NEXT", "LAST", "MAX") and self.q.within is None:
            raise self.error(f"SELECT {self.q.strategy} with predicates between events needs "
                             "WITHIN", where, "the strategy picks among every complex event "
                             "that satisfies the predicates: a window bounds them")
        return tuple(found)

    def implied_partition(self, predicates: tuple[ast.Compare, ...]) -> tuple[str, ...] | None:
        """A PARTITION BY group implied by equality predicates between events, so that their
        check costs nothing per event: when ``x.a = y.b`` equalities connect the variables of
        every atom, each type has one key attribute, and the pattern has no OR, NOT, ':' or
        STRICT (every variable is bound in every match, and adjacency is not read), the events
        of a complex event that satisfies them share one key value -- so evaluating each key
        apart loses nothing, and the predicates are still checked. None when that does not
        hold (then they are only checked per complex event)."""
        if not predicates or self.q.strategy == "STRICT":
            return None
        body = self.q.formula
        # (atom, its variables, inside an ABSENT, under iteration)
        atoms: list[tuple[ast.EventAtom, set[str], bool, bool]] = []
        stack: list[tuple[ast.Formula, frozenset[str], bool, bool]] = [
            (body, frozenset(), False, False)]
        while stack:
            f, names, absent, iterated = stack.pop()
            if isinstance(f, ast.Or | ast.Not | ast.Contig) or (
                    isinstance(f, ast.Iter | ast.Repeat) and f.contiguous):
                return None
            if isinstance(f, ast.EventAtom):
                atoms.append((f, set(atom_variables(f)) | names, absent, iterated))
            elif isinstance(f, ast.Filter) and any(
                    isinstance(x, ast.FilterOr) for x in _filter_nodes(f.filter)):
                return None
            if isinstance(f, ast.Absent):  # its atoms are named by its own variables only
                names, absent = frozenset(), True
            iterated = iterated or isinstance(f, ast.Iter | ast.Repeat)
            stack += [(c, names | {f.var} if isinstance(f, ast.As) else names, absent,
                       iterated) for c in _children(f)]
        parent: dict[str, str] = {}

        def root(v: str) -> str:
            while parent.get(v, v) != v:
                v = parent[v]
            return v

        key: dict[str, str] = {}  # event type -> its key attribute
        bindable = _bindable(body)
        absent_vars = _absent_only(body)
        read = _absent_read(body)
        to_absent: list[tuple[str, str]] = []  # (variable an ABSENT reads, present variable)
        for c in predicates:
            if not _ties(c):
                continue  # (x.a = x.b compares each event of x with itself, never two events)
            for e in (c.left, c.right):
                for t in bindable.get(e.var, ()):
                    if key.setdefault(t, e.attr) != e.attr:
                        return None  # two key attributes for one type
            sides = (c.left.var in absent_vars, c.right.var in absent_vars)
            if sides == (False, False):
                parent[root(c.left.var)] = root(c.right.var)
            elif sides == (True, False):
                to_absent.append((c.left.var, c.right.var))
            elif sides == (False, True):
                to_absent.append((c.right.var, c.left.var))
            # (two absent variables: they bind nothing, so they tie nothing)
            # a name an ABSENT shares with present elements ties its absent atoms too
            for x, y in ((c.left.var, c.right.var), (c.right.var, c.left.var)):
                if x in read and sides == (False, False):
                    to_absent.append((x, y))
        present = [(t, names) for t, names, absent, _ in atoms if not absent]
        if parent:
            component = {root(v) for v in parent}
            if len(component) != 1:
                return None
            linked = set(parent) | component
        elif len(present) == 1 and not any(it for _, _, ab, it in atoms if not ab) \
                and to_absent:
            linked = set(present[0][1])  # one present event: nothing to tie among them
        else:
            return None
        # an absent atom is tied when one of its variables equals a tied present one
        linked_absent = {a for a, other in to_absent if other in linked}
        for atom, names, absent, _ in atoms:
            t = atom.event_type
            if not names & (linked_absent if absent else linked) or t not in key \
                    or not self.schema.event_types[t].has(key[t]):
                return None
        attrs = sorted(set(key.values()))
        if len({self.attr_types[a] for a in attrs}) != 1:
            return None  # keys of one type only, so equal values are one key
        # order the group so that each type's first attribute in it is its key
        before = {a: {b for t, k in key.items() if k == a for b in attrs
                      if b != a and self.schema.event_types[t].has(b)} for a in attrs}
        group: list[str] = []
        while before:
            ready = sorted(a for a in before if not any(a in later for later in
                                                        before.values()))
            if not ready:
                return None
            group.append(ready[0])
            del before[ready[0]]
        return tuple(group)

    # ---- lowering -------------------------------------------------------------------------
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

    def resolve_deadline(self, window: WindowSpec) -> Deadline | None:
        """The trailing ``ABSENT(ψ) WITHIN T``: T on the attribute event time is ordered by,
        ψ's condition the same in every FILTER alternative, no CONSUME BY or LIMIT (they act
        when φ completes, before the deadline says whether it is reported)."""
        return self.absence_span(self.trailing, self.deadline_atoms, window)

    def resolve_lookback(self, window: WindowSpec) -> Deadline | None:
        """The leading ``ABSENT(ψ) WITHIN T``: as a deadline, looking back from φ's first
        event; under a window counted in events the ψ events to keep would be unbounded."""
        e = self.leading
        if e is not None and window.kind == "events":
            raise self.error("ABSENT(...) WITHIN ... at the start of a pattern needs a time "
                             "window (or none), not WITHIN n EVENTS", e)
        return self.absence_span(e, self.lookback_atoms, window)

    def absence_span(self, e: ast.Absent | None, groups: list, window: WindowSpec
                     ) -> Deadline | None:
        if e is None:
            return None
        spec = self.window_spec(e.deadline)
        ordered = window.attribute if window.kind in ("time", "attr") \
            else self.schema.time_attribute
        if spec.attribute != ordered:
            raise self.error(f"the span of ABSENT(...) WITHIN is measured on {spec.attribute!r} "
                             f"but event time is ordered by {ordered!r}", e.deadline,
                             "give the span and the WITHIN window the same attribute")
        for clause, value in (("CONSUME BY", self.q.consume not in (None, "NONE")),
                              ("LIMIT", self.q.limit is not None)):
            if value:
                raise self.error(f"{clause} with an ABSENT(...) WITHIN span is not supported", e,
                                 f"{clause} would act when the rest of the pattern completes, "
                                 "before the absence says whether it is reported")
        conditions = {tuple(sorted((tuple(sorted(a.types)), repr(a.guard), repr(a.streams))
                                   for a in atoms)) for atoms in groups}
        if len(conditions) > 1:
            raise self.error("the FILTER alternatives (OR) give the ABSENT(...) with a "
                             "span different conditions", e,
                             "filter the absent variable outside the OR: "
                             "FILTER b[...] AND (x[...] OR y[...])")
        atoms = tuple(a.id for group in groups for a in group)
        return Deadline(spec.epsilon, spec.attribute, atoms)

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


def _kind(t: str) -> str:
    return "number" if t in ("int", "double") else t


def _children(f: ast.Formula) -> list[ast.Formula]:
    if isinstance(f, (ast.As, ast.Filter, ast.Iter, ast.Not, ast.Absent, ast.Repeat)):
        return [f.formula]
    if isinstance(f, (ast.Or, ast.Seq, ast.Contig)):
        return [f.left, f.right]
    return []


def _leading_absence(f: ast.Formula) -> ast.Absent | None:
    """The ``ABSENT(ψ) WITHIN T`` that starts the whole pattern (under its FILTERs), if any."""
    while isinstance(f, ast.Filter):
        f = f.formula
    first = _sequence(f)[0]
    return first if isinstance(first, ast.Absent) and first.deadline is not None else None


def unstated_unit_warning(attribute: str) -> str:
    """What a time window over an integer time attribute of no stated unit is told (CEQL
    and trend queries alike)."""
    return (f"a time window reads integer values of {attribute!r} as seconds, the default "
            f"unit, which the declaration does not state: write {attribute}:primary_time(ms) "
            "(or s, us, ns), or pass time_unit= (CLI: --time-unit); timestamps (datetimes, "
            "ISO-8601 text) are read as instants whatever the unit")


def _has_looser_operator(f) -> bool:
    """Whether the formula has a ':' or OR, which bind looser than ';' (so a span written
    after them may sit inside one of their operands)."""
    if isinstance(f, (ast.Contig, ast.Or)):
        return True
    return any(_has_looser_operator(c) for c in _children(f))


def _trailing_absence(f: ast.Formula) -> ast.Absent | None:
    """The ``ABSENT(ψ) WITHIN T`` that ends the whole pattern (under its FILTERs), if any."""
    while isinstance(f, ast.Filter):
        f = f.formula
    last = _sequence(f)[-1]
    return last if isinstance(last, ast.Absent) and last.deadline is not None else None


def _sequence(f: ast.Formula) -> list[ast.Formula]:
    """The elements of a chain of ``;`` (associative: ``(A ; B) ; C`` and ``A ; (B ; C)`` are
    both [A, B, C])."""
    if isinstance(f, ast.Seq):
        return _sequence(f.left) + _sequence(f.right)
    return [f]


def _absent_read(f: ast.Formula) -> set[str]:
    """The variables ABSENT(...) elements read: ψ's own, and the names ψ shares with the
    present elements (``B ; ABSENT(B) ; C`` reads B in both). Filters on them say which
    absent events count."""
    inside: set[str] = set()
    for g in _subformulas(f):
        if isinstance(g, ast.Absent):
            inside |= set(_bindable(g.formula))
    return inside


def _absent_only(f: ast.Formula) -> set[str]:
    """The variables that only ABSENT(...) elements read (they bind no event)."""
    return _absent_read(f) - set(_bindable(f, absent=False))


def _ties(c: ast.Compare) -> bool:
    """Is ``c`` an equality ``x.a = y.b`` between two variables (no NEXT): one that can tie
    their events to one key?"""
    sides = (c.left, c.right)
    return c.op == "==" and all(isinstance(e, ast.EventAttr) and not e.next for e in sides) \
        and c.left.var != c.right.var


def partition_guarantees(c: ast.Compare, partition_by: tuple[tuple[str, ...], ...],
                         schema: Schema, bindable: dict[str, set[str]]) -> bool:
    """Does evaluating each PARTITION BY key apart already make ``c`` hold on every complex
    event? True for an equality ``x.a = y.b`` (NEXT allowed) when one group keys every type x
    can bind by ``a`` and every type y can bind by ``b`` (a type with none of the group's
    attributes is never evaluated), and ``a`` and ``b`` are one type of int, bool or string:
    then partition keys are equal exactly when ``=`` holds (a null key joins no partition, as
    ``=`` on null is false). Doubles are left to the check: NaN is one key but never equal."""
    if c.op != "==" or not all(isinstance(e, ast.EventAttr) for e in (c.left, c.right)):
        return False
    types = schema.attribute_types()
    kind = {types.get(c.left.attr), types.get(c.right.attr)}
    if len(kind) != 1 or next(iter(kind)) not in (AttrType.INT, AttrType.BOOL,
                                                   AttrType.STRING):
        return False

    def keyed_by(group: tuple[str, ...], e: ast.EventAttr) -> bool:
        for t in bindable.get(e.var, ()):
            et = schema.event_types[t]
            if next((a for a in group if et.has(a)), e.attr) != e.attr:
                return False
        return True

    return any(keyed_by(g, c.left) and keyed_by(g, c.right) for g in partition_by)


def _single_event(f: ast.Formula) -> bool:
    """Does every match of ``f`` consist of exactly one event (what NOT accepts)?"""
    if isinstance(f, ast.EventAtom):
        return True
    if isinstance(f, (ast.As, ast.Filter)):
        return _single_event(f.formula)
    if isinstance(f, ast.Or):
        return _single_event(f.left) and _single_event(f.right)
    return False


def _bindable(f: ast.Formula, absent: bool = True) -> dict[str, set[str]]:
    """Variable -> event types whose positions it can collect inside ``f`` (NOT binds none).
    The variables of ABSENT(...) bind nothing either, but filters name them (``absent``:
    counted, without collecting anything into an enclosing AS)."""
    out: dict[str, set[str]] = {}

    def walk(g: ast.Formula) -> set[str]:
        if isinstance(g, ast.Not):
            return set()
        if isinstance(g, ast.Absent):
            if absent:
                walk(g.formula)
            return set()
        if isinstance(g, ast.EventAtom):
            for var in atom_variables(g):
                out.setdefault(var, set()).add(g.event_type)
            return {g.event_type}
        types: set[str] = set()
        for child in _children(g):
            types |= walk(child)
        if isinstance(g, ast.As):
            out.setdefault(g.var, set()).update(types)
        return types

    walk(f)
    return out


def _unbound_hint(var: str) -> str | None:
    """For S>R that the WHERE clause does not read: say how it would."""
    stream, sep, event_type = var.partition(">")
    if not sep:
        return None
    return (f"{var} names the {event_type} events read from stream {stream}; write {var} in "
            f"the WHERE clause to read them (a plain {event_type} reads {event_type} from "
            f"every stream, and is filtered as {event_type}[...])")


def atom_variables(a: ast.EventAtom) -> tuple[str, ...]:
    """The variables an atom binds by itself: its event type R, and S>R when it reads R from
    stream S (``WHERE S>R`` binds R and S>R; ``WHERE R`` binds R only)."""
    if a.stream is None:
        return (a.event_type,)
    return (a.event_type, ast.qualified_name(a.stream, a.event_type))


def _filter_leaves(fe: ast.FilterExpr, kind: type) -> list:
    """The leaves of a filter expression of one kind (AtomicFilter or EventPredicate), in
    order."""
    return [node for node in _filter_nodes(fe) if isinstance(node, kind)]


def _filter_nodes(fe: ast.FilterExpr) -> list:
    """Every node of a filter expression."""
    out, stack = [], [fe]
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, ast.FilterAnd | ast.FilterOr):
            stack += [node.right, node.left]
    return out


def _atomic_filters(fe: ast.FilterExpr) -> list[ast.AtomicFilter]:
    return _filter_leaves(fe, ast.AtomicFilter)


def _event_predicates(fe: ast.FilterExpr) -> list[ast.EventPredicate]:
    return _filter_leaves(fe, ast.EventPredicate)


def _subformulas(f: ast.Formula) -> list[ast.Formula]:
    """``f`` and every formula under it (iteratively)."""
    out, stack = [], [f]
    while stack:
        g = stack.pop()
        out.append(g)
        stack.extend(_children(g))
    return out


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


def analyse(query: ast.Query, schema: Schema, text: str | None = None) -> AnalysedQuery:
    """Resolve, type-check and lower a parsed query; raises CEQLSemanticError."""
    return _Analyser(query, schema, text).run()
