"""WITHIN: each window kind at its boundary (exactly the bound is in, one more is out)."""

from __future__ import annotations

import pytest
from support import outputs

import cercore

DECL = ("CREATE STREAM S { EVENT A { k:int, ts:int }, EVENT B { k:int, ts:int }, "
        "EVENT X { ts:int } }")


def stream(gap: int, fillers: int = 0, ts_gap: int = 1):
    """A, then ``fillers`` X events, then B; ``ts`` grows by ts_gap per event."""
    evs = [("A", {"k": 1, "ts": 0})]
    evs += [("X", {"ts": ts_gap * (i + 1)}) for i in range(fillers)]
    evs += [("B", {"k": 1, "ts": ts_gap * (fillers + 1) + gap})]
    return evs


@pytest.mark.parametrize("n, fillers, matches", [
    (3, 1, True), (3, 2, True), (3, 3, False),   # end - start counted in events read
    (0, 0, False), (1, 0, True),
])
def test_events_window(n, fillers, matches, backend):
    q = f"SELECT * FROM S WHERE A ; B WITHIN {n} EVENTS"
    assert bool(outputs(q, DECL, stream(0, fillers), backend)) == matches


def test_events_window_counts_only_events_the_query_reads(backend):
    decl = DECL + " CREATE STREAM Other { EVENT Y { ts:int } }"
    evs = [("A", {"k": 1, "ts": 0}), ("Y", {"ts": 1}), ("Y", {"ts": 2}), ("B", {"k": 1, "ts": 3})]
    q = "SELECT * FROM S WHERE A ; B WITHIN 1 EVENTS"
    # Y is not in stream S, so the query reads A, B only: distance 1, positions stay global.
    assert outputs(q, decl, evs, backend) == {(0, 3, (0, 3))}


@pytest.mark.parametrize("bound, delta, matches", [(10, 10, True), (10, 11, False), (10, 9, True)])
def test_attribute_window(bound, delta, matches, backend):
    q = f"SELECT * FROM S WHERE A ; B WITHIN {bound} [ts]"
    evs = [("A", {"k": 1, "ts": 5}), ("B", {"k": 1, "ts": 5 + delta})]
    assert bool(outputs(q, DECL, evs, backend)) == matches


@pytest.mark.parametrize("window, delta_ms, matches", [
    ("2 SECONDS", 2000, True), ("2 SECONDS", 2001, False),
    ("1 MINUTES 30 SECONDS", 90_000, True), ("1 MINUTES 30 SECONDS", 90_001, False),
    ("1 HOURS", 3_600_000, True), ("1 HOURS", 3_600_001, False),
    ("0.5 SECONDS", 500, True), ("0.5 SECONDS", 501, False),
])
def test_time_window_in_the_time_attribute_unit(window, delta_ms, matches, backend):
    schema = cercore.Schema.parse(DECL, time_attribute="ts", time_unit="ms")
    q = f"SELECT * FROM S WHERE A ; B WITHIN {window}"
    evs = [("A", {"k": 1, "ts": 1000}), ("B", {"k": 1, "ts": 1000 + delta_ms})]
    assert bool(outputs(q, schema, evs, backend)) == matches


def test_time_window_reports_times(backend):
    schema = cercore.Schema.parse(DECL, time_attribute="ts", time_unit="s")
    ces = list(cercore.compile("SELECT * FROM S WHERE A ; B WITHIN 5 SECONDS", schema)
               .engine(backend).process([("A", {"k": 1, "ts": 10}), ("B", {"k": 1, "ts": 12})]))
    assert [(ce.start_time, ce.end_time) for ce in ces] == [(10, 12)]


def test_primary_time_marks_the_time_attribute(backend):
    decl = "CREATE STREAM S { EVENT A { ts: primary_time }, EVENT B { ts: primary_time } }"
    schema = cercore.Schema.parse(decl)
    assert schema.time_attribute == "ts"
    q = "SELECT * FROM S WHERE A ; B WITHIN 3 SECONDS"
    assert outputs(q, schema, [("A", {"ts": 0}), ("B", {"ts": 3})], backend)
    assert not outputs(q, schema, [("A", {"ts": 0}), ("B", {"ts": 4})], backend)


def test_time_window_without_time_attribute_is_a_clear_error():
    with pytest.raises(cercore.CEQLSemanticError, match="needs event time"):
        cercore.compile("SELECT * FROM S WHERE A ; B WITHIN 3 SECONDS", DECL)


def test_equal_timestamps_share_the_window(backend):
    schema = cercore.Schema.parse(DECL, time_attribute="ts")
    evs = [("A", {"k": 1, "ts": 0}), ("A", {"k": 1, "ts": 0}), ("B", {"k": 1, "ts": 0}),
           ("B", {"k": 1, "ts": 1})]
    got = outputs("SELECT * FROM S WHERE A ; B WITHIN 0 SECONDS", schema, evs, backend)
    assert got == {(0, 2, (0, 2)), (1, 2, (1, 2))}
