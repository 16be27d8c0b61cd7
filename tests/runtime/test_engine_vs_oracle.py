"""Property tests: the engine agrees with the brute-force oracle (tests/oracle.py) on random
supported queries and short random streams.

Each example prints the query AST as CEQL (``format_query``), checks that it parses back to the
same AST, compiles it with ``cercore.compile`` and compares, per end position, the set of
(start, positions) the engine reports with the oracle's. The engine must report no duplicates,
report each complex event when its last event arrives, and accept every generated query.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import evaluate
from strategies import (
    SCHEMAS,
    bindable,
    predicate_queries,
    queries,
    schemas,
    streams,
)

import cercore
from cercore.ceql import ast, parser, printer
from cercore.runtime.backend import CYTHON_AVAILABLE

SETTINGS = dict(deadline=None)


def engine_output(compiled, events, backend: str) -> dict[int, set[tuple[int, tuple[int, ...]]]]:
    got: dict[int, list] = {}
    last_end = -1
    for ce in compiled.engine(backend=backend).process(events):
        positions = tuple(ce.positions)
        assert positions == tuple(sorted(set(positions))), f"positions not sorted: {ce}"
        assert positions and positions[0] == ce.start and positions[-1] == ce.end, ce
        assert ce.end >= last_end, "complex events must be reported when their end arrives"
        last_end = ce.end
        got.setdefault(ce.end, []).append((ce.start, positions))
    for end, found in got.items():
        dups = sorted({x for x in found if found.count(x) > 1})
        assert not dups, f"duplicate complex events ending at {end}: {dups}"
    return {end: set(found) for end, found in got.items()}


def check(schema, q: ast.Query, events, backend: str = "python") -> None:
    text = printer.format_query(q)
    parsed = parser.parse_query(text)
    # repr also tells 1 from 1.0 and True from 1, which == on the AST does not
    assert parsed == q and repr(parsed) == repr(q), f"round trip changed the query:\n{text}"
    try:
        compiled = cercore.compile(text, schema)
    except cercore.CEQLSemanticError as e:  # every generated query is in the supported set
        pytest.fail(f"the engine refused a supported query:\n{text}\n{e}")
    got = engine_output(compiled, events, backend)
    expected = evaluate(q, schema, events)
    if got != expected:
        lines = [f"query: {text}", "events:"]
        lines += [f"  {i}: {t} {a}" for i, t, a in ((i, *e) for i, e in enumerate(events))]
        for end in sorted(set(got) | set(expected)):
            g, x = got.get(end, set()), expected.get(end, set())
            if g != x:
                lines.append(f"end {end}: engine extra {sorted(g - x)}, missing {sorted(x - g)}")
        pytest.fail("\n".join(lines))


@st.composite
def cases(draw, **query_options):
    schema = draw(schemas())
    q = draw(queries(schema, **query_options))
    events = draw(streams(schema, 8, favour=set(bindable(q.formula)) & set(schema.event_types)))
    return schema, q, events


@settings(max_examples=900, **SETTINGS)
@given(cases(partitioned=False))
def test_unpartitioned(case):
    check(*case)


@settings(max_examples=600, **SETTINGS)
@given(cases(partitioned=True))
def test_partitioned(case):
    check(*case)


@settings(max_examples=600, **SETTINGS)
@given(cases(windowed=True))
def test_windows(case):
    check(*case)


@st.composite
def predicate_cases(draw):
    schema = draw(schemas())
    q = draw(predicate_queries(schema))
    return schema, q, draw(streams(schema, 12, favour=set(bindable(q.formula)) - {"x"}))


@settings(max_examples=600, **SETTINGS)
@given(predicate_cases())
def test_predicates(case):
    check(*case)


# ---- predicate edge cases on a dense fixed stream -------------------------------------------
def _dense_stream() -> list[tuple[str, dict]]:
    """Every combination of small v and w (plus None), strings and booleans, on types A-D."""
    events = []
    svals = ["", "a", "b", "ab", "ba", "abc", None]
    for i, (v, w) in enumerate((v, w) for v in [-3, -2, -1, 0, 1, 2, 3, None]
                               for w in [-2.5, -1.5, -0.5, 0.0, 1.0, 1.5, 3.5, None]):
        s, b = svals[i % len(svals)], [True, False, None][i % 3]
        t = "ABCD"[i % 4]
        attrs = {"v": v, "w": w, "s": s, "b": b, "k": i % 2, "g": i % 3, "ts": i}
        declared = dict(SCHEMAS["untimed"].event_types[t].attributes)
        events.append((t, {a: x for a, x in attrs.items() if a in declared}))
    return events


EDGE_PREDICATES = [
    "v / 2 == -1", "v / 2 == 0", "v % 2 == -1", "v / -2 == 1", "v % -2 == 1", "-v % 3 == 2",
    "w % 2 < 0", "w % 2 == -0.5", "w % -2 == 1.5", "w / 2 < -1", "v % w < 0", "v / w > 1",
    "v / 0 == 0", "NOT v / 0 == 0", "v % 0 != 1", "w / 0.0 > 0", "v / w == 2",
    "v * w > 1", "v / 2.0 == -1.5", "v - w * 2 >= 0", "v = w", "v <> w", "v == 1.0",
    "v IN {1, 3..5}", "v NOT IN {1, -3..-2}", "v IN {-1.5..0.5}", "w IN {1, 3.5}",
    "w IN RANGE(-1.5, 1)", "w NOT IN RANGE(-1.5, 1)", "v IN RANGE(w, 3)", "v IN {0..w}",
    "s LIKE 'b'", "s LIKE '^b'", "s LIKE 'a$'", "NOT s LIKE 'a'", "s < 'ab'", "s >= 'b'",
    "s == ''", "s != 'a'", "s IN {'', 'a'}", "s NOT IN {'a'}", "'b' > s",
    "b == true", "b != true", "NOT b == true", "b = false", "b IN {true}", "b NOT IN {false}",
    "k IN {0, 1.0}", "v > 0 OR w > 0", "v > 0 AND NOT w > 0", "NOT (v > 0 OR s LIKE 'a')",
    "true", "false", "NOT true", "g > 0",
]


@pytest.mark.parametrize("pred", EDGE_PREDICATES)
def test_predicate_edge_cases(pred):
    schema = SCHEMAS["untimed"]
    q = parser.parse_query(f"SELECT * WHERE (A OR B OR C OR D) AS x FILTER x[{pred}]")
    check(schema, q, _dense_stream())


@pytest.mark.skipif(not CYTHON_AVAILABLE, reason="the Cython backend is not built")
@settings(max_examples=300, **SETTINGS)
@given(cases())
def test_cython_backend(case):
    check(*case, backend="cython")


