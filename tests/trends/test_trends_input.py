"""Trend queries read their events through the same input layer as CEQL queries: the same
skip taxonomy, reorder slack, stream tags and tabular kinds."""

from __future__ import annotations

import pyarrow as pa
import pytest

import cercore
from cercore.trends import compile_trend

DECL = ("CREATE STREAM S { EVENT A { v:int, s:string, t:primary_time }, "
        "EVENT B { v:int, s:string, t:primary_time } } "
        "CREATE STREAM R { EVENT A { v:int, s:string, t:primary_time } }")
QUERY = "SELECT COUNT(*), SUM(A.v) FROM S WHERE (A)+ ; B WINDOW 10 seconds SLIDE 10 seconds"


def ev(typ, v, t, s="x"):
    return typ, {"v": v, "s": s, "t": t}


STREAM = [ev("A", 1, 0), ev("A", 2, 1), ev("B", 0, 2), ev("A", 4, 3), ev("B", 0, 5),
          ev("A", 8, 12), ev("B", 0, 13)]


def rows(engine, events, **kw):
    return list(engine.process(events, **kw)) + engine.flush()


def test_reorder_slack_equals_the_ordered_stream(backend):
    q = compile_trend(QUERY, DECL)
    want = rows(q.engine(backend), STREAM)
    assert want  # not vacuous
    shuffled = [STREAM[1], STREAM[0], STREAM[3], STREAM[2], STREAM[4], STREAM[6], STREAM[5]]
    with pytest.raises(cercore.EventError, match="time goes backwards"):
        rows(q.engine(backend), shuffled)
    assert rows(q.engine(backend, reorder_slack=2), shuffled) == want


def test_stream_tags_and_from(backend):
    q = compile_trend(QUERY, DECL)
    want = rows(q.engine(backend), STREAM)
    # A events of stream R are not in FROM S: they add nothing
    extra = [ev("A", 100, 4)]
    e = q.engine(backend)
    got = list(e.process(STREAM[:4])) + list(e.process(extra, stream="R")) \
        + list(e.process(STREAM[4:])) + e.flush()
    assert got == want
    table = pa.table({"event_type": [x[0] for x in STREAM[:4] + extra + STREAM[4:]],
                      "v": [x[1]["v"] for x in STREAM[:4] + extra + STREAM[4:]],
                      "s": pa.array(["x"] * 8).dictionary_encode(),
                      "t": [x[1]["t"] for x in STREAM[:4] + extra + STREAM[4:]],
                      "src": ["S", "S", "S", "S", "R", "S", None, "S"]})
    assert rows(q.engine(backend, stream_column="src"), table) == want


def test_one_skip_taxonomy_for_every_engine():
    bad = [("Z", {}), ("A", {"v": "no", "s": "x", "t": 1}), ("A", {"v": 1, "t": 2}),
           ("A", {"v": 1, "s": "x", "t": 3, "q": 0}), "junk", ev("A", 1, 5), ev("A", 1, 0)]
    trend = compile_trend(QUERY, DECL).engine("python", on_error="skip")
    rows(trend, bad)
    ceql = cercore.compile("SELECT * FROM S WHERE A WITHIN 10 SECONDS", DECL).engine(
        "python", on_error="skip")
    list(ceql.process(bad))
    want = {"unknown event type": 1, "wrong type": 1, "missing attribute": 1,
            "unknown attribute": 1, "not an event": 1, "time goes backwards": 1}
    assert dict(trend.skips.by_reason) == want
    assert ceql.stats["skipped_by_reason"] == want
