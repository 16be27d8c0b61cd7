"""Bad input events: clear EventErrors naming position and field, or a counted skip; the
complex events of the good events before the bad one are never lost."""

from __future__ import annotations

import pyarrow as pa
import pytest

import cercore

DECL = ("CREATE STREAM S { EVENT A { v:int, s:string, ts:int }, "
        "EVENT B { v:int, s:string, ts:int } }")
Q = "SELECT * FROM S WHERE A ; B"


def a(v=1, ts=0):
    return ("A", {"v": v, "s": "x", "ts": ts})


def b(v=1, ts=0):
    return ("B", {"v": v, "s": "x", "ts": ts})


@pytest.mark.parametrize("bad, message, field", [
    (("C", {"v": 1}), "unknown event type 'C'", "event_type"),
    (("A", {"v": 1, "s": "x", "ts": 0, "w": 2}), "A has no attribute 'w'", "w"),
    (("A", {"v": 1, "s": "x"}), "A event lacks attribute 'ts'", "ts"),
    (("A", {"v": "1", "s": "x", "ts": 0}), "A.v must be int, got str '1'", "v"),
    (("A", {"v": 1.5, "s": "x", "ts": 0}), "A.v must be int, got float 1.5", "v"),
    (("A", {"v": True, "s": "x", "ts": 0}), "A.v must be int, got bool True", "v"),
    ("A", "expected a (type, attributes) pair", None),
])
def test_bad_event_raises_with_position_and_field(bad, message, field, backend):
    engine = cercore.compile(Q, DECL).engine(backend)
    got = []
    with pytest.raises(cercore.EventError) as err:
        for ce in engine.process([a(), b(), bad, b()]):
            got.append(ce.positions)
    assert err.value.position == 2
    assert err.value.field == field
    assert message in str(err.value) and str(err.value).startswith("event 2: ")
    assert got == [(0, 1)]  # the match before the bad event was delivered


def test_skip_mode_counts_and_keeps_positions(backend):
    engine = cercore.compile(Q, DECL).engine(backend, on_error="skip")
    got = [ce.positions for ce in engine.process([a(), ("C", {}), ("A", {"v": "no"}), b()])]
    assert got == [(0, 3)]
    stats = engine.stats
    assert stats["skipped"] == 2 and stats["events"] == 4
    assert stats["skipped_by_reason"] == {"unknown event type": 1, "wrong type": 1}


def test_time_going_backwards(backend):
    schema = cercore.Schema.parse(DECL, time_attribute="ts")
    q = "SELECT * FROM S WHERE A ; B WITHIN 10 SECONDS"
    engine = cercore.compile(q, schema).engine(backend)
    with pytest.raises(cercore.EventError, match="time goes backwards: ts = 3 after 5") as err:
        list(engine.process([a(ts=5), b(ts=3)]))
    assert err.value.position == 1
    engine = cercore.compile(q, schema).engine(backend, on_error="skip")
    got = [ce.positions for ce in engine.process([a(ts=5), b(ts=3), b(ts=6)])]
    assert got == [(0, 2)]
    assert engine.stats["skipped_by_reason"] == {"time goes backwards": 1}


def test_null_time_is_an_error(backend):
    schema = cercore.Schema.parse(DECL, time_attribute="ts")
    engine = cercore.compile("SELECT * FROM S WHERE A ; B WITHIN 1 SECONDS", schema).engine(backend)
    with pytest.raises(cercore.EventError, match="missing or null"):
        list(engine.process([a(), ("B", {"v": 1, "s": "x", "ts": None})]))


def test_arrow_input_validation(backend):
    engine = cercore.compile(Q, DECL).engine(backend)
    table = pa.table({"event_type": ["A", "B"], "v": [1, 2], "s": ["x", "y"], "ts": [0, 1],
                      "zz": [1, 1]})
    with pytest.raises(cercore.EventError, match="column 'zz' is not an attribute"):
        list(engine.process(table))
    table = pa.table({"event_type": ["A", "B", "Q"], "v": [1, 2, 3], "s": ["x", "y", "z"],
                      "ts": [0, 1, 2]})
    engine = cercore.compile(Q, DECL).engine(backend)
    got = []
    with pytest.raises(cercore.EventError, match="event 2: unknown event type 'Q'"):
        for ce in engine.process(table):
            got.append(ce.positions)
    assert got == [(0, 1)]
    table = pa.table({"event_type": ["A", "B"], "v": ["1", "2"], "s": ["x", "y"], "ts": [0, 1]})
    with pytest.raises(cercore.EventError, match="attribute 'v' must be int"):
        list(cercore.compile(Q, DECL).engine(backend).process(table))


def test_arrow_and_records_agree(backend):
    rows = [a(1, 0), b(2, 1), a(3, 2), b(4, 3)]
    table = pa.table({"event_type": [t for t, _ in rows],
                      **{k: [r[k] for _, r in rows] for k in ("v", "s", "ts")}})
    q = "SELECT * FROM S WHERE A ; B FILTER A[v > 1]"
    by_rows = [ce.positions for ce in cercore.run(q, DECL, rows, backend=backend)]
    by_table = [ce.positions for ce in cercore.run(q, DECL, table, backend=backend)]
    assert by_rows == by_table == [(2, 3)]


def test_null_attribute_makes_predicates_false(backend):
    rows = [("A", {"v": None, "s": "x", "ts": 0}), b()]
    assert cercore.run("SELECT * FROM S WHERE A ; B FILTER A[v > 0]", DECL, rows,
                       backend=backend) == []
    assert len(cercore.run("SELECT * FROM S WHERE A ; B FILTER A[NOT v > 0]", DECL, rows,
                           backend=backend)) == 1
