"""CEQL → PrePP query, where CEQL can say it.

A CEQL query maps onto PrePP's fragment when its pattern is built from event types with ``;``
(SEQ) and ``OR``, each type used once, under skip-till-any-match (no strategy, ALL or ANY),
with a time window (``WITHIN d SECONDS`` on the time attribute or ``WITHIN n [t]``). Filters
``x[p]`` joined by AND become single-type filters (folded into the type, §3.2);
``PARTITION BY`` becomes equality predicates between every two types of the pattern, and
predicates between events (``FILTER a.id = b.id AND b.v < c.v``) become PrePP's pairwise
predicates (or single-type filters when both sides read one type or one side is a literal).
CEQL has no AND operator: write it in PrePP notation (:mod:`cercore.network.pattern`).

Everything else is outside PrePP (§9) and raises :class:`cercore.CEQLSemanticError` naming the
construct: Kleene closure ``+``/``:+``, negation ``NOT``, contiguity ``:``, a type used twice,
OR between filters, count windows, NEXT/LAST/MAX/STRICT, CONSUME BY, LIMIT and projections.
"""

from __future__ import annotations

import itertools

import cercore
from cercore.ceql import ast
from cercore.ceql.printer import format_pred
from cercore.errors import CEQLSemanticError
from cercore.network.query import Leaf, NetQuery, Node, Op, Predicate
from cercore.predicates import MIRRORED
from cercore.schema import Schema
from cercore.types import INT64_MAX, window_length


def query_from_ceql(text: str, schema: Schema | str) -> NetQuery:
    """Check ``text`` with :func:`cercore.compile` and map it to a :class:`NetQuery`."""
    compiled = cercore.compile(text, schema)
    return _Mapper(compiled.ast, compiled.schema, text).run()


class _Mapper:
    def __init__(self, q: ast.Query, schema: Schema, text: str) -> None:
        self.q, self.schema, self.text = q, schema, text
        self.types: list[str] = []
        self.vars: dict[str, set[str]] = {}
        self.filters: dict[str, list[str]] = {}
        self.pending: list = []  # (variable, predicate, node): resolved once all AS are seen
        self.between: list[ast.Compare] = []  # predicates between events (x.a op y.b)

    def error(self, message: str, node=None, hint: str | None = None) -> CEQLSemanticError:
        node = node if node is not None else self.q
        return CEQLSemanticError(message, line=getattr(node, "line", None),
                                 column=getattr(node, "column", None), text=self.text,
                                 hint=hint)

    def run(self) -> NetQuery:
        q = self.q
        if q.strategy not in (None, "ALL", "ANY"):
            raise self.error(f"selection strategy {q.strategy} is outside PrePP, which "
                             "evaluates every match (skip-till-any-match)")
        if q.consume not in (None, "NONE"):
            raise self.error(f"CONSUME BY {q.consume} is outside PrePP")
        if q.limit is not None:
            raise self.error("LIMIT is outside PrePP")
        if q.projection != "*":
            raise self.error("a SELECT list is outside PrePP; use SELECT *")
        root = self._formula(q.formula)
        for var, pred, node in self.pending:
            if var not in self.vars:
                raise self.error(f"filter on {var}, which names no event of the pattern", node)
            for t in self.vars[var]:
                self.filters.setdefault(t, []).append(format_pred(pred))
        window, time_attr = self.window()
        preds = self.partition_predicates()
        preds += tuple(p for p in map(self.pairwise, self.between) if p is not None)
        filters = {t: " AND ".join(f"({f})" for f in fs) if len(fs) > 1 else fs[0]
                   for t, fs in self.filters.items()}
        return NetQuery(root, window, preds, filters, time_attr)

    def _formula(self, f: ast.Formula) -> Node:
        if isinstance(f, ast.EventAtom):
            if f.event_type in self.types:
                raise self.error(f"event type {f.event_type} is used twice; PrePP queries "
                                 "reference each type at most once", f)
            self.types.append(f.event_type)
            self.vars.setdefault(f.event_type, set()).add(f.event_type)
            return Leaf(f.event_type)
        if isinstance(f, ast.As):
            node = self._formula(f.formula)
            self.vars.setdefault(f.var, set()).update(_leaves(node))
            return node
        if isinstance(f, ast.Filter):
            node = self._formula(f.formula)
            self._filters(f.filter)
            return node
        if isinstance(f, ast.Seq | ast.Or):
            kind = "SEQ" if isinstance(f, ast.Seq) else "OR"
            kids = [self._formula(f.left), self._formula(f.right)]
            flat: list[Node] = []
            for k in kids:  # ; and OR are associative: (A ; B) ; C = SEQ(A, B, C)
                flat.extend(k.children if isinstance(k, Op) and k.kind == kind else [k])
            return Op(kind, tuple(flat))
        if isinstance(f, ast.Iter):
            raise self.error("Kleene closure ('+' / ':+') is outside PrePP (each type matches "
                             "one event)", f)
        if isinstance(f, ast.Not):
            raise self.error("negation NOT(...) is outside PrePP", f)
        if isinstance(f, ast.Contig):
            raise self.error("contiguity ':' is outside PrePP (only ';', skip-till-any-match)",
                             f)
        raise self.error(f"{type(f).__name__} is outside PrePP", f)

    def _filters(self, fe: ast.FilterExpr) -> None:
        if isinstance(fe, ast.FilterAnd):
            self._filters(fe.left)
            self._filters(fe.right)
        elif isinstance(fe, ast.FilterOr):
            raise self.error("OR between filters is outside PrePP (predicates are a "
                             "conjunction)", fe)
        elif isinstance(fe, ast.EventPredicate):
            self.between.append(fe.pred)
        else:
            self.pending.append((fe.var, fe.pred, fe))

    def pairwise(self, c: ast.Compare) -> Predicate | None:
        """``x.a op y.b`` as PrePP's pairwise predicate (None: ``x.a op x.b`` or a literal,
        which is a single-type filter, added here)."""
        sides = []
        for e in (c.left, c.right):
            if isinstance(e, ast.EventAttr) and not e.next:
                types = self.vars.get(e.var, set())
                if len(types) != 1:
                    raise self.error(f"{e.var} names {len(types)} event types; a PrePP "
                                     "predicate compares attributes of two single types", e)
                sides.append((next(iter(types)), e.attr))
            elif isinstance(e, ast.Literal):
                sides.append(e)
            else:
                raise self.error("PrePP's pairwise predicates compare x.attr with y.attr or "
                                 "a literal (no arithmetic, no NEXT(...))", c)
        (left, right), op = sides, c.op
        if isinstance(left, ast.Literal) and isinstance(right, ast.Literal):
            raise self.error("a predicate between events needs an attribute", c)
        if isinstance(left, ast.Literal):
            left, right, op = right, left, MIRRORED[op]
        if isinstance(right, ast.Literal) or right[0] == left[0]:
            other = format_pred(ast.Compare(op, ast.AttrRef(left[1]), right if isinstance(
                right, ast.Literal) else ast.AttrRef(right[1])))
            self.filters.setdefault(left[0], []).append(other)
            return None
        return Predicate(left[0], left[1], op, right[0], right[1])

    def window(self) -> tuple[float, str]:
        w, s = self.q.within, self.schema
        if w is None:
            raise self.error("PrePP needs a time window (WITHIN ...)")
        if isinstance(w, ast.EventsWindow):
            raise self.error("a count window (WITHIN n EVENTS) is outside PrePP: events are "
                             "counted per node, so the window must be in time", w)
        if isinstance(w, ast.TimeWindow):
            if s.time_attribute is None:
                raise self.error("WITHIN in seconds needs a time attribute in the declaration "
                                 "(primary_time)", w)
            length = window_length(w.seconds, s.time_unit)
            if length is None:
                raise self.error(f"WITHIN is too large: at most {INT64_MAX} {s.time_unit} "
                                 "(event times and window lengths are int64)", w)
            return float(length), s.time_attribute
        if s.time_attribute not in (None, w.attribute):
            raise self.error(f"the window is on {w.attribute}, but the time attribute is "
                             f"{s.time_attribute}; PrePP windows are on event time", w)
        return float(w.amount), w.attribute

    def partition_predicates(self) -> tuple[Predicate, ...]:
        preds = []
        for group in self.q.partition_by:
            keys = {}
            for t in self.types:
                attrs = self.schema.event_type(t).attribute_types
                key = next((a for a in group if a in attrs), None)
                if key is None:
                    raise self.error(f"PARTITION BY [{', '.join(group)}]: event {t} has none of "
                                     "these attributes, so it could never match")
                keys[t] = key
            for a, b in itertools.combinations(self.types, 2):
                preds.append(Predicate(a, keys[a], "==", b, keys[b]))
        return tuple(preds)


def _leaves(node: Node) -> list[str]:
    if isinstance(node, Leaf):
        return [node.type]
    return [t for c in node.children for t in _leaves(c)]
