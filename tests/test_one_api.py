"""One vocabulary for every kind of query: ``cercore.compile`` and ``cercore.run`` take CEQL and
trend queries alike; compiled queries have ``engine()``, ``run()`` and ``explain()``; engines
have ``process``, ``push``, ``advance``, ``flush`` and ``stats``; options are keyword-only."""

from __future__ import annotations

import pytest

import cercore
from cercore.trends import CompiledTrendQuery, compile_trend

DECL = "CREATE STREAM S { EVENT A { v:int, t:int }, EVENT B { v:int, t:int } }"
SCHEMA = cercore.Schema.parse(DECL, time_attribute="t")
CEQL = "SELECT * FROM S WHERE A ; B WITHIN 10 SECONDS"
TREND = "RETURN COUNT(*), SUM(A.v) PATTERN SEQ(A+, B) SEMANTICS skip-till-any-match"
EVENTS = [("A", {"v": 1, "t": 1}), ("A", {"v": 2, "t": 2}), ("B", {"v": 0, "t": 3})]


def test_compile_recognises_the_kind_of_query():
    assert isinstance(cercore.compile(CEQL, SCHEMA), cercore.CompiledQuery)
    trend = cercore.compile(TREND, SCHEMA)
    assert isinstance(trend, CompiledTrendQuery)
    assert trend.run(EVENTS) == compile_trend(TREND, SCHEMA).run(EVENTS)
    with pytest.raises(cercore.ConfigError, match="next_algorithm"):
        cercore.compile(CEQL, SCHEMA, next_algorithm="paper")
    assert cercore.compile(TREND, DECL, time_attribute="t", next_algorithm="paper").plan \
        .next_algorithm == "paper"


def test_run_takes_either_kind(backend):
    ces = cercore.run(CEQL, SCHEMA, EVENTS, backend=backend)
    assert sorted((ce.start, ce.end) for ce in ces) == [(0, 2), (1, 2)]
    assert cercore.run(TREND, SCHEMA, EVENTS, backend=backend) == \
        [{"COUNT(*)": 3, "SUM(A.v)": 1 + 2 + 3}]


@pytest.mark.parametrize("text", [CEQL, TREND])
def test_every_compiled_query_and_engine_has_the_same_shape(text):
    q = cercore.compile(text, SCHEMA)
    assert isinstance(q.explain(), str) and q.run(EVENTS, backend="python")
    engine = q.engine("python", on_error="skip", reorder_slack=2)
    for name in ("process", "push", "advance", "flush"):
        assert callable(getattr(engine, name)), name
    list(engine.process(EVENTS))
    engine.advance(5)
    engine.flush()
    stats = engine.stats
    assert stats["events"] == 3 and stats["skipped"] == 0 and stats["backend"] == "python"
    with pytest.raises(TypeError):
        q.engine("python", "skip")  # options are keyword-only
    with pytest.raises(TypeError):
        q.run(EVENTS, "python")
