"""Property tests over the whole of CEQL that cercore evaluates: ':' and ':+', NOT(...),
projections (SELECT x, y / NONE) and bindings, the strategies STRICT, NEXT, LAST and MAX,
CONSUME BY and LIMIT, FROM and ``S>E`` over stream-tagged events, mixed with PARTITION BY and
WITHIN, on both backends, against the brute-force oracle (tests/oracle.py).

LIMIT n is checked in two ways: the events reported at each end position are among the oracle's
complex events there, as many as min(n, available), and they are exactly the first n that the
same engine reports for the query without LIMIT (the documented enumeration order).
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import evaluate_with_bindings, starts_unreported, stream_of
from strategies import bindable, queries, queries_between_events, schemas, streams
from support import BACKENDS

import cercore
from cercore.ceql import ast, parser, printer

SETTINGS = dict(deadline=None)


def per_end(compiled, events, backend: str, with_bindings: bool = False,
            step_every_event: bool = False):
    """End -> [(start, positions)] in reporting order (and, if asked, each one's bindings).
    ``step_every_event``: the engine steps inert events too (as it does under LIMIT)."""
    got: dict[int, list] = {}
    bindings = {}
    last_end = -1
    engine = compiled.engine(backend=backend)
    if step_every_event:
        engine.skip_inert = False
    tagged = itertools.groupby(events, key=stream_of)  # runs of events of one stream (or none)
    for ce in (ce for tag, run in tagged for ce in engine.process([e[:2] for e in run], tag)):
        if with_bindings:
            bindings[ce.end, (ce.start, tuple(ce.positions))] = (
                ce.bindings, [sorted(e.attributes) for e in ce.events])
        assert ce.end >= last_end, "complex events must be reported when their end arrives"
        assert all(ce.start <= p <= ce.end for p in ce.positions), ce
        assert list(ce.positions) == sorted(set(ce.positions)), ce
        last_end = ce.end
        got.setdefault(ce.end, []).append((ce.start, tuple(ce.positions)))
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


def check(schema, q: ast.Query, events, backend: str) -> None:
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
    got, bindings = per_end(compiled, events, backend, with_bindings=True)
    for end, found in got.items():
        assert len(found) == len(set(found)), f"duplicates at {end}:\n{text}"
    oracle = evaluate_with_bindings(q, schema, events)
    expected = {end: set(ces) for end, ces in oracle.items()}
    if q.limit is None:
        if {e: set(f) for e, f in got.items()} != expected:
            pytest.fail(describe(text, events, got, expected))
        for (end, ce), (binds, attrs) in bindings.items():
            want = {x: tuple(sorted(ps)) for x, ps in oracle[end][ce].items()}
            assert binds == want, f"bindings of {ce} ending at {end}:\n{text}"
            assert attrs == projected_attributes(q, events, ce[1], want), \
                f"attributes of {ce} ending at {end}:\n{text}"
        return
    # the order LIMIT keeps the first ones of: an engine that steps every event (skipping
    # inert events, which LIMIT turns off, may reorder the complex events of one end;
    # letters.inert_letters_skippable)
    unlimited = per_end(cercore.compile(printer.format_query(dataclasses.replace(q, limit=None)),
                                        schema), events, backend, step_every_event=True)
    for end in sorted(set(got) | set(expected)):
        g, x = got.get(end, []), expected.get(end, set())
        assert set(g) <= x and len(g) == min(q.limit, len(x)), describe(text, events, got,
                                                                         expected)
        assert g == unlimited.get(end, [])[:q.limit], f"not the first {q.limit}:\n{text}"


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


@settings(max_examples=400, **SETTINGS)
@given(data=st.data())
def test_predicates_between_events(backend, data):
    """b.price > s.price, l.v < NEXT(l).v hold for every combination of the events a valuation
    binds to the variables, under every strategy, window, partitioning and LIMIT."""
    check(*data.draw(cases_between_events()), backend=backend)


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
