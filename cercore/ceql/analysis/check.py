"""Check: the clauses, every name in the formula (event types, streams, variables,
attributes), the types of its predicates, and where predicates between events may stand."""

from __future__ import annotations

from cercore.ceql import ast
from cercore.ceql.analysis.context import Context, Stage
from cercore.ceql.analysis.formulas import (
    _absent_only,
    _absent_read,
    _atomic_filters,
    _bindable,
    _children,
    _event_predicates,
    _has_looser_operator,
    _leading_absence,
    _sequence,
    _single_event,
    _subformulas,
    _ties,
    _trailing_absence,
    _unbound_hint,
)
from cercore.ceql.regex import regex_problem
from cercore.ceql.terms import event_terms
from cercore.errors import did_you_mean
from cercore.types import INT64_MAX

MAX_REPEAT = 100  # A{n,m}: the automaton holds up to about 2m copies of A


class Checker(Stage):
    """Checks the query before anything is built from it; raises CEQLSemanticError."""

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.visible: set[str] = set()  # the event types the FROM clause lets the query read
        self.trailing = _trailing_absence(self.q.formula)  # ABSENT(ψ) WITHIN T ending it
        self.leading = _leading_absence(self.q.formula)  # ABSENT(ψ) WITHIN T starting it
        self.event_bindable: dict[str, set[str]] = {}  # variables an event predicate may name
        self.absent_predicates: list[ast.Compare] = []  # those naming an ABSENT's variables

    def check_clauses(self) -> None:
        q = self.q
        if q.limit is not None and q.limit < 0:
            raise self.error("LIMIT needs a non-negative number of complex events",
                             self.spot(r"\bLIMIT\b", None))
        if q.limit is not None and q.limit > INT64_MAX:
            raise self.error(f"LIMIT is too large: at most {INT64_MAX}",
                             self.spot(r"\bLIMIT\b", None),
                             "leave LIMIT out to report every complex event")

    def check_streams(self) -> set[str]:
        """The event types the query reads: those of its FROM streams (all without FROM)."""
        if not self.q.streams:
            self.visible = set(self.schema.event_types)
            return self.visible
        visible: set[str] = set()
        for s in self.q.streams:
            if s not in self.schema.streams:
                raise self.error(f"unknown stream {s!r}" + did_you_mean(s, self.schema.streams),
                                 self.spot(r"\bFROM\b", s))
            visible.update(self.schema.streams[s].event_types)
        self.visible = visible
        return visible

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

    def check_event_predicates(self) -> tuple[ast.Compare, ...]:
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

    def check_absent_predicates(self, implied: tuple[str, ...] | None) -> None:
        """The implied partition decides which absent events count exactly as its tying
        equalities do; any other predicate naming a variable an ABSENT reads would have to
        be checked on each event in the gap, which the automaton has already ruled out."""
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


def _kind(t: str) -> str:
    return "number" if t in ("int", "double") else t
