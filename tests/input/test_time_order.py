"""Time order: out-of-order events raise EventError by default; a reorder slack buffers and
re-sorts them (equal to evaluating the time-sorted stream); events later than the slack raise,
or are skipped and counted with on_error="skip"."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cercore

DECL = "CREATE STREAM S { EVENT A { k:int, ts:int }, EVENT B { k:int, ts:int } }"
SCHEMA = cercore.Schema.parse(DECL, time_attribute="ts")
QUERIES = [
    "SELECT * FROM S WHERE A ; B WITHIN 4 SECONDS",
    "SELECT * FROM S WHERE A+ ; B PARTITION BY [k] WITHIN 3 SECONDS",
    "SELECT * FROM S WHERE A : B",
    "SELECT * FROM S WHERE (A OR B) ; B WITHIN 2 EVENTS CONSUME BY ANY",
]


def key(ces):
    return [(ce.start, ce.end, ce.positions, tuple(e.attributes["ts"] for e in ce.events))
            for ce in ces]


@st.composite
def disordered(draw):
    """A stream whose times are at most ``slack`` behind the running maximum."""
    slack = draw(st.integers(0, 3))
    n = draw(st.integers(0, 14))
    base = sorted(draw(st.lists(st.integers(0, 12), min_size=n, max_size=n)))
    times = [max(0, t - draw(st.integers(0, slack))) for t in base]
    events = [(draw(st.sampled_from("AB")), {"k": draw(st.integers(0, 1)), "ts": t})
              for t in times]
    return slack, events


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # backend is a constant
@given(disordered(), st.sampled_from(QUERIES))
def test_slack_equals_sorted_stream(backend, case, text):
    slack, events = case
    q = cercore.compile(text, SCHEMA)
    engine = q.engine(backend, reorder_slack=slack)
    got = list(engine.process(events)) + engine.flush()
    ordered = sorted(events, key=lambda e: e[1]["ts"])  # stable: ties keep arrival order
    assert key(got) == key(q.engine(backend).process(ordered))
    assert engine.stats["skipped"] == 0


def test_out_of_order_raises_by_default(backend):
    q = cercore.compile(QUERIES[0], SCHEMA)
    with pytest.raises(cercore.EventError, match="time goes backwards") as err:
        list(q.engine(backend).process([("A", {"k": 0, "ts": 5}), ("B", {"k": 0, "ts": 4})]))
    assert err.value.position == 1


def test_too_late_for_the_slack(backend):
    events = [("A", {"k": 0, "ts": 5}), ("B", {"k": 0, "ts": 3}), ("A", {"k": 0, "ts": 2}),
              ("B", {"k": 0, "ts": 9})]
    q = cercore.compile(QUERIES[0], SCHEMA)
    with pytest.raises(cercore.EventError, match="too late for the reorder slack"):
        list(q.engine(backend, reorder_slack=1).process(events))
    engine = q.engine(backend, reorder_slack=1, on_error="skip")
    got = list(engine.process(events)) + engine.flush()
    # A(2) is skipped and counted; B(3), A(5), B(9) are evaluated in that order
    assert key(got) == [(1, 2, (1, 2), (5, 9))]
    assert engine.stats["skipped_by_reason"] == {"late beyond the reorder slack": 1}


def test_push_releases_after_the_slack(backend):
    engine = cercore.compile(QUERIES[0], SCHEMA).engine(backend, reorder_slack=2)
    assert engine.push("B", {"k": 0, "ts": 4}) == []
    assert engine.push("A", {"k": 0, "ts": 3}) == []  # buffered, reordered before B(4)
    assert engine.push("A", {"k": 0, "ts": 5}) == []  # releases A(3): nothing complete yet
    assert [ce.positions for ce in engine.push("B", {"k": 0, "ts": 7})] == [(0, 1)]
    assert [ce.positions for ce in engine.flush()] == [(2, 3), (0, 3)]


def test_arrow_input_with_slack(backend):
    import pyarrow as pa

    table = pa.table({"event_type": ["A", "B", "A", "B"], "k": [0, 0, 0, 0], "ts": [2, 1, 3, 4]})
    got = cercore.run(QUERIES[0], SCHEMA, table, backend=backend, reorder_slack=1)
    assert key(got) == [(2, 3, (2, 3), (3, 4)), (1, 3, (1, 3), (2, 4))]


def test_slack_needs_event_time():
    q = cercore.compile("SELECT * FROM S WHERE A ; B", "CREATE STREAM S { EVENT A { k:int }, "
                        "EVENT B { k:int } }")
    with pytest.raises(ValueError, match="needs event time"):
        q.engine(reorder_slack=1)


@pytest.mark.parametrize("text", ["SELECT * FROM S WHERE A : B", "SELECT * FROM S WHERE A ; B",
                                  "SELECT * FROM S WHERE A ; B WITHIN 3 EVENTS"])
def test_backwards_time_without_a_time_window_is_never_silent(backend, text):
    """The schema names event time: a query without a time window still refuses (or counts)
    an event that goes back in time."""
    events = [("A", {"k": 0, "ts": 5}), ("B", {"k": 0, "ts": 3}), ("B", {"k": 0, "ts": 6})]
    q = cercore.compile(text, SCHEMA)
    with pytest.raises(cercore.EventError, match="event 1: time goes backwards: ts = 3"):
        list(q.engine(backend).process(events))
    engine = q.engine(backend, on_error="skip")
    got = [ce.positions for ce in engine.process(events)]
    assert got == [(0, 2)]
    assert engine.stats["skipped_by_reason"] == {"time goes backwards": 1}


# ---- watermarks: advance(t) --------------------------------------------------------------
def ab(*spec):
    return [(t, {"k": 0, "ts": ts}) for t, ts in spec]


def test_advance_releases_what_the_slack_holds_and_makes_earlier_events_late(backend):
    q = cercore.compile(QUERIES[0], SCHEMA)
    engine = q.engine(backend, reorder_slack=10)
    assert list(engine.process(ab(("A", 5), ("B", 7), ("A", 6)))) == []  # all held back
    released = engine.advance(7)
    assert sorted((ce.start, ce.end) for ce in released) == [(0, 2), (1, 2)]
    assert engine.last_time == 7
    with pytest.raises(cercore.EventError, match="too late"):
        engine.push("B", {"k": 0, "ts": 6})
    skipping = q.engine(backend, reorder_slack=10, on_error="skip")
    list(skipping.process(ab(("A", 5))))
    skipping.advance(9)
    assert skipping.push("B", {"k": 0, "ts": 8}) == []
    assert skipping.stats["skipped_by_reason"] == {"late beyond the reorder slack": 1}


def test_advance_without_slack_and_its_errors(backend):
    q = cercore.compile(QUERIES[0], SCHEMA)
    engine = q.engine(backend)
    list(engine.process(ab(("A", 1))))
    assert engine.advance(3) == [] and engine.last_time == 3
    with pytest.raises(cercore.EventError, match="time goes backwards"):
        engine.push("B", {"k": 0, "ts": 2})
    with pytest.raises(cercore.EventError, match=r"advance\(2\) is before"):
        engine.advance(2)
    with pytest.raises(cercore.ConfigError, match="integer time"):
        engine.advance(2.5)
    untimed = cercore.compile("SELECT * FROM S WHERE A ; B",
                              cercore.Schema.parse(DECL)).engine(backend)
    with pytest.raises(cercore.ConfigError, match="needs event time"):
        untimed.advance(1)


def test_multi_engine_advance(backend):
    multi = cercore.multi_engine(QUERIES[:2], SCHEMA, backend=backend, reorder_slack=10)
    assert list(multi.process(ab(("A", 5), ("B", 7)))) == []
    assert [(m.query, m.start, m.end) for m in multi.advance(7)] == [("q0", 0, 1), ("q1", 0, 1)]
    with pytest.raises(cercore.EventError):
        multi.push("B", {"k": 0, "ts": 6})


# ---- a read type without the window's attribute ---------------------------------------------
PARTIAL = "CREATE STREAM S { EVENT A { x:int, v:int }, EVENT B { x:int }, EVENT C { v:int } }"


def test_a_type_without_the_window_attribute_is_read_but_not_timed(backend):
    """C lacks x: its events are part of the stream (they break ``:``) but carry no time, so
    they are neither rejected nor skipped, and never widen a window."""
    events = [("C", {"v": 0}), ("A", {"x": 1, "v": 0}), ("C", {"v": 3}), ("B", {"x": 2}),
              ("C", {"v": 1}), ("B", {"x": 9})]
    for query, expected in [("SELECT * FROM S WHERE A ; B WITHIN 5 [x]", [(1, 3)]),
                            ("SELECT * FROM S WHERE A : B WITHIN 5 [x]", []),
                            ("SELECT * FROM S WHERE A ; C ; B WITHIN 5 EVENTS",
                             [(1, 3), (1, 5), (1, 5)])]:
        q = cercore.compile(query, PARTIAL)
        for on_error in ("raise", "skip"):
            engine = q.engine(backend, on_error=on_error)
            assert [(ce.start, ce.end) for ce in engine.process(events)] == expected, query
            assert engine.stats["skipped"] == 0
        multi = cercore.multi_engine([q], backend=backend)
        assert [(m.start, m.end) for m in multi.process(events)] == expected
    adjacent = cercore.compile("SELECT * FROM S WHERE A : B WITHIN 5 [x]", PARTIAL)
    assert [(ce.start, ce.end) for ce in adjacent.engine(backend).process(
        [("A", {"x": 1, "v": 0}), ("B", {"x": 2})])] == [(0, 1)]
    windowed = cercore.compile("SELECT * FROM S WHERE A ; B WITHIN 5 [x]", PARTIAL)
    with pytest.raises(cercore.EventError, match="time goes backwards"):
        list(windowed.engine(backend).process(events + [("B", {"x": 8})]))
