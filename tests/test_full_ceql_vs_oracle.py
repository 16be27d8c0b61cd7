"""Property tests over the whole of CEQL that cercore evaluates: ':' and ':+', NOT(...),
projections (SELECT x, y / NONE), the strategies STRICT, NEXT, LAST and MAX, CONSUME BY and LIMIT, mixed with PARTITION BY and
WITHIN, on both backends, against the brute-force oracle (tests/oracle.py).

LIMIT n is checked in two ways: the events reported at each end position are among the oracle's
complex events there, as many as min(n, available), and they are exactly the first n that the
same engine reports for the query without LIMIT (the documented enumeration order).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import evaluate_with_bindings, starts_unreported
from strategies import bindable, queries, schemas, streams

import cercore
from cercore.ceql import ast, parser, printer

SETTINGS = dict(deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


def per_end(compiled, events, backend: str, with_bindings: bool = False):
    """End -> [(start, positions)] in reporting order (and, if asked, each one's bindings)."""
    got: dict[int, list] = {}
    bindings = {}
    last_end = -1
    for ce in compiled.engine(backend=backend).process(events):
        if with_bindings:
            bindings[ce.end, (ce.start, tuple(ce.positions))] = ce.bindings
        assert ce.end >= last_end, "complex events must be reported when their end arrives"
        assert all(ce.start <= p <= ce.end for p in ce.positions), ce
        assert list(ce.positions) == sorted(set(ce.positions)), ce
        last_end = ce.end
        got.setdefault(ce.end, []).append((ce.start, tuple(ce.positions)))
    return (got, bindings) if with_bindings else got


def describe(text, events, got, expected) -> str:
    lines = [f"query: {text}", "events:"]
    lines += [f"  {i}: {t} {a}" for i, (t, a) in enumerate(events)]
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
        for (end, ce), binds in bindings.items():
            want = {x: tuple(sorted(ps)) for x, ps in oracle[end][ce].items()}
            assert binds == want, f"bindings of {ce} ending at {end}:\n{text}"
        return
    unlimited = per_end(cercore.compile(printer.format_query(dataclasses.replace(q, limit=None)),
                                        schema), events, backend)
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
    return schema, q, draw(streams(schema, 7, favour=favour))


@settings(max_examples=700, **SETTINGS)
@given(cases(max_depth=3))
def test_full_ceql_python(case):
    check(*case, backend="python")


@pytest.mark.parametrize("partitioned", [False, True])
@settings(max_examples=350, **SETTINGS)
@given(data=st.data())
def test_full_ceql_cython(partitioned, data):
    pytest.importorskip("cercore_fast.evaluator")
    check(*data.draw(cases(partitioned=partitioned)), backend="cython")
