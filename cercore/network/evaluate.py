"""Evaluating PrePP queries with the cercore engine.

CEQL has no AND and no predicates over two events, so a query (or its partial matches over a
set of types X) is compiled as follows:

* the pattern becomes the OR of every admissible *type sequence* ``T1 ; T2 ; …`` (for each
  branch, every order of ``T(b) ∩ X`` its SEQ operators allow: AND = all interleavings);
* single-type filters become CEQL filters, the window ``WITHIN w [t]`` on the time attribute;
* equality predicates on one attribute that connect every shape become ``PARTITION BY``;
* the remaining pairwise predicates filter the enumerated complex events.

Complex events are mapped back to the :class:`NetEvent` objects fed to the engine (by
position), so callers compare matches as sets of event ``uid``s.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import cercore
from cercore.ceql.printer import format_name
from cercore.network.errors import NetworkError
from cercore.network.query import NetEvent, NetQuery

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
            k = _kind(v, a)
            seen = names.get(a)
            if seen is not None and seen != k:
                if {seen, k} != {"int", "double"}:
                    raise NetworkError(f"attribute {a!r} is {seen} in one event and {k} in "
                                       "another")
                k = "double"
            names[a] = k
    wanted = {a for p in query.predicates for a in (p.left_attr, p.right_attr)}
    wanted |= {a for _, f in query.filters for a in _filter_attributes(f)}
    for a in sorted(wanted - {query.time_attribute}):
        names.setdefault(a, "double")
    attrs = [f"{format_name(query.time_attribute)}:int"] + [
        f"{format_name(a)}:{k}" for a, k in sorted(names.items())]
    decls = [f"EVENT {format_name(t)} {{ {', '.join(attrs)} }}" for t in query.types]
    return cercore.Schema.parse(f"CREATE STREAM {stream} {{ " + ", ".join(decls) + " }",
                                time_attribute=query.time_attribute)


def _filter_attributes(pred_text: str) -> set[str]:
    """The attribute names a CEQL predicate text mentions (parsed by the CEQL parser)."""
    from cercore.ceql import ast
    from cercore.ceql.parser import parse_query

    q = parse_query(f"SELECT * FROM S WHERE X FILTER X[{pred_text}]")
    out: set[str] = set()

    def walk(node) -> None:
        if isinstance(node, ast.AttrRef):
            out.add(node.name)
        elif isinstance(node, tuple):
            for x in node:
                walk(x)
        elif hasattr(node, "__dataclass_fields__"):
            for f in node.__dataclass_fields__:
                walk(getattr(node, f))

    walk(q.formula)
    return out


def _kind(v: Any, attr: str) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "double"
    if isinstance(v, str):
        return "string"
    raise NetworkError(f"attribute {attr!r} has a value of type {type(v).__name__}; use int, "
                       "float, str or bool")


def ceql_text(query: NetQuery, types: Iterable[str] | None = None, stream: str = "S",
              use_predicates: bool = True) -> tuple[str, tuple]:
    """The CEQL query for the partial matches over ``types`` (the whole query when None), and
    the pairwise predicates left to post-filter."""
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
    formula = " OR ".join("(" + " ; ".join(format_name(t) for t in s) + ")"
                          for s in sorted(seqs))
    filters = [f"{format_name(t)}[{f}]" for t, f in query.filters if t in xs]
    preds = query.predicates_over(xs) if use_predicates else ()
    key = _partition_attribute(query, shapes, preds)
    text = f"SELECT * FROM {stream} WHERE {formula}"
    if filters:
        text += " FILTER " + " AND ".join(filters)
    if key is not None:
        text += f" PARTITION BY [{format_name(key)}]"
    text += f" WITHIN {query.window!r} [{format_name(query.time_attribute)}]"
    return text, preds


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
    :class:`NetEvent` s in ``(t, uid)`` order; ``feed`` returns the new (post-filtered)
    matches."""

    def __init__(self, query: NetQuery, schema: cercore.Schema, types: Iterable[str] | None = None,
                 *, use_predicates: bool = True, backend: str = "auto") -> None:
        self.query = query
        self.types = frozenset(query.types if types is None else types)
        text, self.predicates = ceql_text(query, self.types, next(iter(schema.streams)),
                                          use_predicates)
        self.text = text
        self.engine = cercore.compile(text, schema).engine(backend=backend)
        self.fed: list[NetEvent] = []
        self._last: tuple[int, int] | None = None
        self._attrs = {t: [a for a, _ in schema.event_type(t).attributes] for t in query.types}

    def feed(self, events: Sequence[NetEvent]) -> list[Match]:
        batch = [e for e in events if e.type in self.types]
        if not batch:
            return []
        for e in batch:
            if self._last is not None and e.key <= self._last:
                raise NetworkError(f"event {e.uid} reached the evaluator out of (t, uid) order")
            self._last = e.key
        self.fed.extend(batch)
        rows = [(e.type, self._row(e)) for e in batch]
        out = []
        for ce in self.engine.process(rows):
            m = tuple(self.fed[p] for p in ce.positions)
            if all(p.holds(*_pick(m, p)) for p in self.predicates if _has(m, p)):
                out.append(m)
        return out

    def _row(self, e: NetEvent) -> dict[str, Any]:
        row = {a: e.attrs.get(a) for a in self._attrs[e.type]}
        row[self.query.time_attribute] = e.t
        return row


def _has(m: Match, p) -> bool:
    ts = {e.type for e in m}
    return p.left in ts and p.right in ts


def _pick(m: Match, p) -> tuple[NetEvent, NetEvent]:
    by = {e.type: e for e in m}
    return by[p.left], by[p.right]


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
    """The events of the query's types that satisfy their type's filter (in input order);
    each filter is evaluated by the cercore engine as a one-event query."""
    by_type: dict[str, list[int]] = {}
    for i, e in enumerate(events):
        if e.type in query.types:
            by_type.setdefault(e.type, []).append(i)
    keep: set[int] = set()
    filters = query.filter_map
    stream = next(iter(schema.streams))
    for t, idx in by_type.items():
        if t not in filters:
            keep.update(idx)
            continue
        text = (f"SELECT * FROM {stream} WHERE {format_name(t)} "
                f"FILTER {format_name(t)}[{filters[t]}]")
        eng = cercore.compile(text, schema).engine(backend=backend)
        attrs = [a for a, _ in schema.event_type(t).attributes]
        # the engine refuses time going backwards; a one-event filter does not care about
        # order, so feed the events in time order (positions map back through idx)
        idx = sorted(idx, key=lambda i: events[i].t)
        rows = [(t, {**{a: events[i].attrs.get(a) for a in attrs},
                     query.time_attribute: events[i].t}) for i in idx]
        keep.update(idx[p] for ce in eng.process(rows) for p in ce.positions)
    return [e for i, e in enumerate(events) if i in keep]
