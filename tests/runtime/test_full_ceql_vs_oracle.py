"""Property tests over the whole of CEQL that cercore evaluates: ':' and ':+', NOT(...),
projections (SELECT x, y / NONE) and bindings, the strategies STRICT, NEXT, LAST and MAX,
CONSUME BY and LIMIT, FROM and ``S>E`` over stream-tagged events, mixed with PARTITION BY and
WITHIN, on both backends, against the brute-force oracle (tests/oracle.py).

LIMIT n is checked in two ways: the events reported at each end position are among the oracle's
complex events there, as many as min(n, available), and they are exactly the first n that the
same engine reports for the query without LIMIT (the documented enumeration order).

Predicates between events are also checked on every way of feeding a stream (``PATHS``: push,
a live iterator, an Arrow table, ``process_arrays``, and two queries in one ``multi_engine``),
each against the oracle, with the Cython backend equal to the reference case by case.
"""

from __future__ import annotations

import dataclasses
import itertools

import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from oracle import evaluate_with_bindings, starts_unreported, stream_of
from strategies import bindable, queries, queries_between_events, schemas, streams
from support import BACKENDS

import cercore
from cercore.ceql import ast, parser, printer
from cercore.types import AttrType

SETTINGS = dict(deadline=None)


# the ways of feeding a stream: process(list), push one event at a time, a live iterator (the
# record path), an Arrow table with a stream column, and process_arrays over that table
PATHS = ("list", "push", "live", "table", "arrays")
STREAM_COLUMN = "stream"  # (no attribute of tests/strategies.py's schemas is named so)
ARROW_TYPES = {AttrType.INT: pa.int64(), AttrType.DOUBLE: pa.float64(),
               AttrType.STRING: pa.string(), AttrType.BOOL: pa.bool_()}


def as_table(schema, events) -> pa.Table:
    """``events`` as one Arrow table: a column per attribute (null where an event's type does
    not declare it, or the event has None), the stream tag (null: untagged) in STREAM_COLUMN."""
    cols = {"event_type": pa.array([e[0] for e in events], pa.string())}
    for a, t in schema.attribute_types().items():
        cols[a] = pa.array([e[1].get(a) for e in events], ARROW_TYPES[t])
    cols[STREAM_COLUMN] = pa.array([stream_of(e) for e in events], pa.string())
    return pa.table(cols)


def fed(engine, events, path: str, schema=None) -> list:
    """What ``engine`` (an Engine or a MultiEngine made with ``stream_column=STREAM_COLUMN``)
    yields for ``events`` fed through ``path``; ``schema``: for the table paths. The arrays
    path gives (start, end, positions) triples (MultiEngine: (query, triple) pairs)."""
    if path == "push":
        return [ce for e in events for ce in engine.push(e[0], e[1], stream_of(e))]
    if path == "table":
        return list(engine.process(as_table(schema, events)))
    if path == "arrays":
        out = engine.process_arrays(as_table(schema, events))
        named = out.items() if isinstance(out, dict) else [(None, out)]
        triples = {name: [(s, e, tuple(m.positions[lo:hi].tolist()))
                          for s, e, lo, hi in zip(m.start.tolist(), m.end.tolist(),
                                                  m.offsets[:-1].tolist(), m.offsets[1:].tolist())]
                   for name, m in named}
        if not isinstance(out, dict):
            return triples[None]
        return [(name, t) for name, ts in triples.items() for t in ts]
    tagged = itertools.groupby(events, key=stream_of)  # runs of events of one stream (or none)
    wrap = iter if path == "live" else list  # (any other iterable than a list: the record path)
    return [ce for tag, run in tagged for ce in engine.process(wrap([e[:2] for e in run]), tag)]


def per_end(compiled, events, backend: str, with_bindings: bool = False,
            step_every_event: bool = False, path: str = "list", ces=None):
    """End -> [(start, positions)] in reporting order (and, if asked, each one's bindings).
    ``step_every_event``: the engine steps inert events too (as it does under LIMIT); ``path``:
    how the events are fed (PATHS); ``ces``: the complex events already found (e.g. by a
    MultiEngine) instead."""
    got: dict[int, list] = {}
    bindings = {}
    last_end = -1
    if ces is None:
        engine = compiled.engine(backend=backend, stream_column=STREAM_COLUMN)
        if step_every_event:
            engine.intake.skip_inert = False
        ces = fed(engine, events, path, compiled.schema)
    for ce in ces:
        if path == "arrays":  # (start, end, positions): no bindings to read
            start, end, positions = ce
        else:
            start, end, positions = ce.start, ce.end, ce.positions
            if with_bindings:
                bindings[end, (start, tuple(positions))] = (
                    ce.bindings, [sorted(e.attributes) for e in ce.events])
        assert end >= last_end, "complex events must be reported when their end arrives"
        assert all(start <= p <= end for p in positions), ce
        assert list(positions) == sorted(set(positions)), ce
        last_end = end
        got.setdefault(end, []).append((start, tuple(positions)))
    return (got, bindings) if with_bindings else got


def projected_attributes(q: ast.Query, events, positions, bindings) -> list[list[str]]:
    """The attribute names each reported event keeps under SELECT x[a, b] (from the oracle's
    bindings): the union of what the variables binding it select; all if one selects all."""
    out = []
    for p in positions:
        declared = sorted(events[p][1])
        keep: set[str] | None = set()
        if isinstance(q.projection, tuple) and any(i.attributes for i in q.projection):
            for item in q.projection:
                if p in bindings.get(item.var, ()):
                    keep = None if item.attributes is None or keep is None \
                        else keep | set(item.attributes)
        else:
            keep = None
        out.append(declared if keep is None else sorted(a for a in declared if a in keep))
    return out


def describe(text, events, got, expected) -> str:
    lines = [f"query: {text}", "events:"]
    # an event is (type, attrs) or, tagged with its stream, (type, attrs, stream)
    lines += [f"  {i}: {' '.join(map(str, e))}" for i, e in enumerate(events)]
    for end in sorted(set(got) | set(expected)):
        g, x = set(got.get(end, ())), expected.get(end, set())
        if g != x:
            lines.append(f"end {end}: engine extra {sorted(g - x)}, missing {sorted(x - g)}")
    return "\n".join(lines)


def check(schema, q: ast.Query, events, backend: str, path: str = "list",
          oracle: dict | None = None, ces=None) -> None:
    """The engine's complex events (fed through ``path``, or ``ces`` found already) are the
    oracle's (computed unless given), with their bindings and projected attributes."""
    text = printer.format_query(q)
    parsed = parser.parse_query(text)
    assert parsed == q and repr(parsed) == repr(q), f"round trip changed the query:\n{text}"
    if q.strategy in ("NEXT", "LAST", "MAX") and starts_unreported(q):
        with pytest.raises(cercore.CEQLSemanticError, match="no position to rank"):
            cercore.compile(text, schema)
        return
    try:
        compiled = cercore.compile(text, schema)
    except cercore.CEQLSemanticError as e:
        pytest.fail(f"the engine refused a supported query:\n{text}\n{e}")
    got, bindings = per_end(compiled, events, backend, with_bindings=True, path=path, ces=ces)
    for end, found in got.items():
        assert len(found) == len(set(found)), f"duplicates at {end} ({path}):\n{text}"
    if oracle is None:
        oracle = evaluate_with_bindings(q, schema, events)
    expected = {end: set(found) for end, found in oracle.items()}
    if q.limit is None:
        if {e: set(f) for e, f in got.items()} != expected:
            pytest.fail(f"{backend}, {path}:\n" + describe(text, events, got, expected))
        for (end, ce), (binds, attrs) in bindings.items():
            want = {x: tuple(sorted(ps)) for x, ps in oracle[end][ce].items()}
            assert binds == want, f"bindings of {ce} ending at {end} ({path}):\n{text}"
            assert attrs == projected_attributes(q, events, ce[1], want), \
                f"attributes of {ce} ending at {end} ({path}):\n{text}"
        return
    # the order LIMIT keeps the first ones of: an engine that steps every event (skipping
    # inert events, which LIMIT turns off, may reorder the complex events of one end;
    # letters.inert_letters_skippable)
    unlimited = per_end(cercore.compile(printer.format_query(dataclasses.replace(q, limit=None)),
                                        schema), events, backend, step_every_event=True)
    for end in sorted(set(got) | set(expected)):
        g, x = got.get(end, []), expected.get(end, set())
        assert set(g) <= x and len(g) == min(q.limit, len(x)), \
            f"{backend}, {path}:\n" + describe(text, events, got, expected)
        assert g == unlimited.get(end, [])[:q.limit], f"not the first {q.limit} ({path}):\n{text}"


@st.composite
def cases(draw, **query_options):
    schema = draw(schemas())
    q = draw(queries(schema, full=True, **query_options))
    favour = set(bindable(q.formula)) & set(schema.event_types)
    return schema, q, draw(streams(schema, 7, favour=favour, tagged=True))


@settings(max_examples=1000, **SETTINGS)
@given(cases(max_depth=3))
def test_full_ceql_python(case):
    check(*case, backend="python")


@pytest.mark.parametrize("partitioned", [False, True])
@settings(max_examples=500, **SETTINGS)
@given(data=st.data())
def test_full_ceql_cython(partitioned, data):
    pytest.importorskip("cercore_fast.evaluator")
    check(*data.draw(cases(partitioned=partitioned)), backend="cython")


@settings(max_examples=300, **SETTINGS)
@given(data=st.data())
def test_strategies_under_windows(backend, data):
    """NEXT / LAST / MAX select among the complex events that fit the window."""
    check(*data.draw(cases(windowed=True, strategies=("NEXT", "LAST", "MAX"))), backend=backend)


@st.composite
def cases_between_events(draw, **query_options):
    schema = draw(schemas())
    q = draw(queries_between_events(schema, **query_options))
    favour = set(bindable(q.formula)) & set(schema.event_types)
    return schema, q, draw(streams(schema, 7, favour=favour, tagged=True))


@st.composite
def rich_cases_between_events(draw):
    """``cases_between_events`` with more complex events to check: half of the patterns are
    SHAPES (tests/strategies.py), and two thirds of the LIMITs drawn are dropped (LIMIT 0 and 1
    report little)."""
    schema, q, events = draw(cases_between_events(shaped=draw(st.booleans())))
    if q.limit is not None and draw(st.sampled_from(range(3))):
        q = dataclasses.replace(q, limit=None)
    return schema, q, events


@settings(max_examples=400, **SETTINGS)
@given(data=st.data())
def test_predicates_between_events(backend, data):
    """b.price > s.price, l.v < NEXT(l).v hold for every combination of the events a valuation
    binds to the variables, under every strategy, window, partitioning and LIMIT."""
    check(*data.draw(cases_between_events()), backend=backend)


def ranked_without_start(q: ast.Query) -> bool:
    """NEXT/LAST/MAX over a match that starts unreported: refused (``check`` pins that)."""
    return q.strategy in ("NEXT", "LAST", "MAX") and starts_unreported(q)


def keys_of(ces, path: str) -> list[tuple]:
    """(start, end, positions) of each complex event, in reporting order."""
    if path == "arrays":
        return list(ces)
    return [(ce.start, ce.end, tuple(ce.positions)) for ce in ces]


@settings(max_examples=400, **SETTINGS)
@given(data=st.data())
def test_predicates_between_events_on_every_path(data):
    """Every way of feeding the stream (PATHS: push, a live iterator, an Arrow table and
    process_arrays over it, besides process(list)) gives the oracle's complex events, with
    their bindings, for random queries with predicates between events; and on each path the
    Cython backend reports the reference's complex events in the same order, having counted
    the same work (``stats["work"]``: enumeration, predicate checks, branches pruned)."""
    schema, q, events = data.draw(rich_cases_between_events())
    assume(not ranked_without_start(q))
    compiled = cercore.compile(printer.format_query(q), schema)
    oracle = evaluate_with_bindings(q, schema, events)
    for path in PATHS:
        seen = {}
        for backend in BACKENDS:
            engine = compiled.engine(backend=backend, stream_column=STREAM_COLUMN)
            ces = fed(engine, events, path, schema)
            check(schema, q, events, backend, path, oracle, ces)
            seen[backend] = keys_of(ces, path), engine.stats["work"]
        first, *rest = seen.values()
        for backend, got in zip(BACKENDS[1:], rest):
            assert got[0] == first[0], f"{backend} reports another order ({path})"
            assert got[1] == first[1], f"{backend} counts other work ({path}):\n" \
                + printer.format_query(q)


@st.composite
def two_cases_between_events(draw):
    """Two queries with predicates between events over one schema, and a stream that favours
    the event types of both."""
    schema = draw(schemas())
    qs = [draw(queries_between_events(schema, shaped=draw(st.booleans()))) for _ in range(2)]
    favour = set().union(*(bindable(q.formula) for q in qs)) & set(schema.event_types)
    return schema, qs, draw(streams(schema, 7, favour=favour, tagged=True))


@settings(max_examples=150, **SETTINGS)
@given(data=st.data())
def test_predicates_between_events_in_a_multi_engine(data):
    """Two such queries in one ``multi_engine``, on every path: each query's complex events
    are the oracle's, and both backends report the same ones in the same order with the
    same work per query."""
    schema, qs, events = data.draw(two_cases_between_events())
    assume(not any(ranked_without_start(q) for q in qs))
    compiled = {f"q{i}": cercore.compile(printer.format_query(q), schema)
                for i, q in enumerate(qs)}
    oracles = [evaluate_with_bindings(q, schema, events) for q in qs]
    for path in PATHS:
        seen = {}
        for backend in BACKENDS:
            multi = cercore.multi_engine(compiled, backend=backend, stream_column=STREAM_COLUMN)
            found = fed(multi, events, path, schema)
            for (name, _), q, oracle in zip(compiled.items(), qs, oracles):
                mine = [t for n, t in found if n == name] if path == "arrays" \
                    else [m.ce for m in found if m.query == name]
                check(schema, q, events, backend, path, oracle, mine)
            work = {n: s["work"] for n, s in multi.stats["queries"].items()}
            seen[backend] = [(n, k) for n, k in found] if path == "arrays" \
                else [(m.query, *keys_of([m.ce], path)) for m in found], work
        first, *rest = seen.values()
        for backend, got in zip(BACKENDS[1:], rest):
            assert got == first, f"{backend} differs ({path}):\n" \
                + "\n".join(printer.format_query(q) for q in qs)


@settings(max_examples=150, **SETTINGS)
@given(data=st.data())
def test_predicates_between_events_across_a_checkpoint(data):
    """An engine pickled between two parts of the stream and restored on each backend (a
    checkpoint, ``to_backend``) goes on checking predicates between events (the restored
    evaluator gets the check again): the two parts' complex events, in order, are the
    uninterrupted run's -- which the oracle checks -- and so are the work counts."""
    import pickle

    schema, q, events = data.draw(rich_cases_between_events())
    assume(not ranked_without_start(q))
    cut = data.draw(st.integers(0, len(events)))
    compiled = cercore.compile(printer.format_query(q), schema)
    for backend in BACKENDS:
        whole_engine = compiled.engine(backend=backend, stream_column=STREAM_COLUMN)
        whole = fed(whole_engine, events, "list")
        check(schema, q, events, backend, "list", ces=whole)
        for other in BACKENDS:
            engine = compiled.engine(backend=backend, stream_column=STREAM_COLUMN)
            first = fed(engine, events[:cut], "list")
            moved = pickle.loads(pickle.dumps(engine)).to_backend(other)
            # (positions go on from the cut: the restored engine's input position)
            rest = fed(moved, events[cut:], "push")
            assert keys_of(first + rest, "list") == keys_of(whole, "list"), (backend, other, cut)
            assert moved.stats["work"] == whole_engine.stats["work"], (backend, other, cut)


@pytest.mark.parametrize("backend", BACKENDS)
def test_limit_keeps_the_first_of_the_order_that_steps_every_event(backend):
    """Found by test_full_ceql_cython: the C events are inert for ``T>D ; T>D+``, and an
    engine that skips them (no LIMIT) reports the complex events ending at 6 in another order
    than one that steps them (LIMIT turns skipping off). LIMIT 2 keeps the first two of the
    latter."""
    schema = cercore.Schema.parse(
        "CREATE STREAM S { EVENT C { v:int } } CREATE STREAM T { EVENT C { v:int }, "
        "EVENT D { v:int } }")
    events = [(t, {"v": 0}) for t in "DCDDDCD"]
    limited = cercore.compile("SELECT * WHERE T>D ; T>D+ AS x LIMIT 2", schema)
    unlimited = cercore.compile("SELECT * WHERE T>D ; T>D+ AS x", schema)
    got = per_end(limited, events, backend)[6]
    stepping = per_end(unlimited, events, backend, step_every_event=True)[6]
    skipping = per_end(unlimited, events, backend)[6]
    assert got == stepping[:2] == [(4, (4, 6)), (3, (3, 6))]
    assert sorted(stepping) == sorted(skipping) and skipping[:2] != got
