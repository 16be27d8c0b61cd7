"""Evaluating PrePP queries with the cercore engine.

A query (or its partial matches over a set of types X) is compiled, as a CEQL AST built here
and handed to :func:`cercore.compile` (never printed and parsed again), as follows:

* the pattern becomes the OR of every admissible *type sequence* ``T1 ; T2 ; …`` (for each
  branch, every order of ``T(b) ∩ X`` its SEQ operators allow: AND = all interleavings) --
  CEQL has no AND operator;
* single-type filters become CEQL filters ``T[p]``, the window ``WITHIN w [t]`` on the time
  attribute;
* pairwise predicates become CEQL's predicates between events (``A.x < B.y``; event types are
  variables), which the engine checks on each complex event -- vacuously true when the
  complex event holds no event of one of the two types, as PrePP's partial matches want;
* equality predicates on one attribute that connect every shape also become
  ``PARTITION BY`` (the engine infers it only for an OR-free pattern).

Filters alone (:func:`passes_filters`) need no engine: the events of each type are decoded as
the engine decodes them and the filter evaluated over them by the predicate layer
(:func:`cercore.predicates.evaluate_pred`).

Complex events are mapped back to the :class:`NetEvent` objects fed to the engine (by
position), so callers compare matches as sets of event ``uid``s.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import reduce
from typing import Any

import cercore
from cercore.ceql import ast
from cercore.ceql.analysis import analyse
from cercore.ceql.printer import format_filter, format_formula, format_query
from cercore.input.decode import EventDecoder
from cercore.network.errors import NetworkError
from cercore.network.query import NetEvent, NetQuery, Predicate
from cercore.predicates import attributes_read, evaluate_pred
from cercore.types import type_of_value

MAX_SEQUENCES = 5040  # 7! orderings: beyond this the OR of sequences is too big to compile

Match = tuple[NetEvent, ...]


def schema_for(query: NetQuery, events: Iterable[NetEvent], stream: str = "S") -> cercore.Schema:
    """A declaration for the query's types: each declares every attribute the events carry or
    the predicates and filters name (kind from the values; ``double`` when no event has it),
    plus the ``int`` time attribute."""
    names: dict[str, str] = {}
    for e in events:
        if e.type not in query.types:
            continue
        for a, v in e.attrs.items():
            if a == query.time_attribute or v is None:
                continue
            t = type_of_value(v)
            if t is None:
                raise NetworkError(f"attribute {a!r} has a value of type {type(v).__name__}; "
                                   "use int, float, str or bool")
            k = t.value
            seen = names.get(a)
            if seen is not None and seen != k:
                if {seen, k} != {"int", "double"}:
                    raise NetworkError(f"attribute {a!r} is {seen} in one event and {k} in "
                                       "another")
                k = "double"
            names[a] = k
    wanted = {a for p in query.predicates for a in (p.left_attr, p.right_attr)}
    wanted |= {a for f in query.filter_predicates.values() for a in attributes_read(f)}
    for a in sorted(wanted - {query.time_attribute}):
        names.setdefault(a, "double")
    attrs = [(query.time_attribute, "int"), *sorted(names.items())]
    return cercore.Schema.build({t: attrs for t in query.types}, {stream: query.types},
                                time_attribute=query.time_attribute)


def ceql_query(query: NetQuery, types: Iterable[str] | None = None, stream: str = "S",
               use_predicates: bool = True) -> ast.Query:
    """The CEQL query (its AST) for the partial matches over ``types`` (the whole query when
    None); with ``use_predicates``, the pairwise predicates among ``types`` are in it."""
    xs = frozenset(query.types if types is None else types)
    shapes = query.partial_shapes(xs)
    if not shapes:
        raise NetworkError("no branch of the query uses these types")
    seqs: set[tuple[str, ...]] = set()
    for shape, branches in shapes.items():
        for b in branches:
            seqs.update(b.linear_extensions(shape))
            if len(seqs) > MAX_SEQUENCES:
                raise NetworkError(f"the query allows more than {MAX_SEQUENCES} orders of its "
                                   "types (large AND); the cercore engine cannot evaluate it "
                                   "as one OR of sequences")
    formula: ast.Formula = reduce(ast.Or, (reduce(ast.Seq, map(ast.EventAtom, s))
                                           for s in sorted(seqs)))
    preds = query.predicates_over(xs) if use_predicates else ()
    filters = [ast.AtomicFilter(t, f) for t, f in query.filter_predicates.items() if t in xs]
    filters += [ast.EventPredicate(p.compare) for p in preds]
    if filters:
        formula = ast.Filter(formula, reduce(ast.FilterAnd, filters))
    key = _partition_attribute(query, shapes, preds)
    return ast.Query(formula, streams=(stream,),
                     partition_by=((key,),) if key is not None else (),
                     within=ast.AttrWindow(query.window, query.time_attribute))


def ceql_text(query: NetQuery, types: Iterable[str] | None = None, stream: str = "S",
              use_predicates: bool = True) -> tuple[str, tuple[Predicate, ...]]:
    """For reading: the text of :func:`ceql_query` (one line, each sequence in parentheses)
    and the pairwise predicates it checks between events."""
    q = ceql_query(query, types, stream, use_predicates)
    body, between = (q.formula.formula, q.formula.filter) if isinstance(q.formula, ast.Filter) \
        else (q.formula, None)
    alternatives: list[ast.Formula] = []
    while isinstance(body, ast.Or):
        alternatives.insert(0, body.right)
        body = body.left
    where = " OR ".join(f"({format_formula(f)})" for f in [body, *alternatives])
    if between is not None:
        where += " FILTER " + format_filter(between)
    lines = format_query(q).split("\n")
    lines = [("WHERE " + where) if line.startswith("WHERE ") else line for line in lines]
    xs = frozenset(query.types if types is None else types)
    return " ".join(lines), query.predicates_over(xs) if use_predicates else ()


def _partition_attribute(query: NetQuery, shapes, preds) -> str | None:
    """An attribute whose equality predicates connect the types of every shape, if any."""
    candidates = {p.left_attr for p in preds if p.op == "==" and p.left_attr == p.right_attr}
    for a in sorted(candidates):
        edges = [p.pair for p in preds if p.op == "==" and p.left_attr == p.right_attr == a]
        if all(len(shape) > 1 and _connected(shape, edges) for shape in shapes):
            return a
    return None


def _connected(types: frozenset[str], edges) -> bool:
    start = next(iter(types))
    seen, todo = {start}, [start]
    while todo:
        u = todo.pop()
        for e in edges:
            if u in e:
                for v in e:
                    if v in types and v not in seen:
                        seen.add(v)
                        todo.append(v)
    return seen == types


class QueryEvaluator:
    """A cercore engine for the partial matches over ``types`` fed incrementally with
    :class:`NetEvent` s in ``(t, uid)`` order; ``feed`` returns the new matches (the engine
    checks the filters and, with ``use_predicates``, the pairwise predicates)."""

    def __init__(self, query: NetQuery, schema: cercore.Schema, types: Iterable[str] | None = None,
                 *, use_predicates: bool = True, backend: str = "auto") -> None:
        self.query = query
        self.types = frozenset(query.types if types is None else types)
        self.predicates = query.predicates_over(self.types) if use_predicates else ()
        self.ast = ceql_query(query, self.types, next(iter(schema.streams)), use_predicates)
        self.compiled = cercore.compile(self.ast, schema)
        self.engine = self.compiled.engine(backend=backend)
        self.fed: list[NetEvent] = []
        self._last: tuple[int, int] | None = None
        self._attrs = {t: [a for a, _ in schema.event_type(t).attributes] for t in query.types}

    @property
    def text(self) -> str:
        """The compiled CEQL query, as text (for reading)."""
        return self.compiled.text

    def feed(self, events: Sequence[NetEvent]) -> list[Match]:
        """Evaluate ``events`` (those of other types are ignored); the matches they complete."""
        batch = [e for e in events if e.type in self.types]
        if not batch:
            return []
        for e in batch:
            if self._last is not None and e.key <= self._last:
                raise NetworkError(f"event {e.uid} reached the evaluator out of (t, uid) order")
            self._last = e.key
        self.fed.extend(batch)
        rows = [(e.type, _row(e, self._attrs[e.type], self.query.time_attribute))
                for e in batch]
        return [tuple(self.fed[p] for p in ce.positions) for ce in self.engine.process(rows)]


def _row(e: NetEvent, attrs: list[str], time_attribute: str) -> dict[str, Any]:
    """``e`` as the engine reads it: the declared attributes (None where missing), the time."""
    row = {a: e.attrs.get(a) for a in attrs}
    row[time_attribute] = e.t
    return row


def global_trace(traces: dict[Any, Sequence[NetEvent]] | Iterable[NetEvent]) -> list[NetEvent]:
    """All events of the local traces in the global order ``(t, uid)``."""
    events = [e for tr in traces.values() for e in tr] if isinstance(traces, dict) \
        else list(traces)
    uids = [e.uid for e in events]
    if len(set(uids)) != len(uids):
        raise NetworkError("event uids must be unique across the network")
    return sorted(events, key=lambda e: e.key)


def centralised_matches(query: NetQuery, traces, schema: cercore.Schema | None = None,
                        backend: str = "auto") -> set[frozenset[int]]:
    """The matches of ``query`` over the global trace (every event at one place), evaluated
    with the cercore engine, as sets of event uids."""
    events = global_trace(traces)
    schema = schema or schema_for(query, events)
    ev = QueryEvaluator(query, schema, backend=backend)
    return {frozenset(e.uid for e in m) for m in ev.feed(events)}


def passes_filters(query: NetQuery, events: Sequence[NetEvent], schema: cercore.Schema,
                   backend: str = "auto") -> list[NetEvent]:
    """The events of the query's types that satisfy their type's filter (in input order).
    Each filter is checked against ``schema`` and evaluated by the predicate layer over the
    events of its type at once, decoded as the engine decodes them (``backend`` is accepted
    for compatibility: no engine is needed)."""
    filters = query.filter_predicates
    by_type: dict[str, list[int]] = {}
    for i, e in enumerate(events):
        if e.type in query.types:
            by_type.setdefault(e.type, []).append(i)
    checked = sorted(t for t in filters if t in by_type)
    if checked:  # type-check the filters as CEQL does (analysis only: no automaton, no engine)
        alternatives = reduce(ast.Or, map(ast.EventAtom, checked))
        analyse(ast.Query(ast.Filter(alternatives, reduce(ast.FilterAnd, (
            ast.AtomicFilter(t, filters[t]) for t in checked)))), schema)
    keep = [False] * len(events)
    decoder = EventDecoder(schema)
    for t, idx in by_type.items():
        if t not in filters:
            for i in idx:
                keep[i] = True
            continue
        attrs = [a for a, _ in schema.event_type(t).attributes]
        batch = decoder.from_records(
            [(t, _row(events[i], attrs, query.time_attribute)) for i in idx], 0)
        if batch.error is not None:
            raise batch.error
        for i, ok in zip(idx, evaluate_pred(filters[t], batch.columns).tolist(), strict=True):
            keep[i] = ok
    return [e for e, k in zip(events, keep, strict=True) if k]
