"""FROM and ``S>E`` over stream-tagged events: an event's stream comes from ``process(...,
stream=)`` / ``push(..., stream=)`` or a stream column; untagged events belong to every stream
that declares their type; events of streams not in FROM never reach the query."""

from __future__ import annotations

import pyarrow as pa
import pytest

import cercore

DECL = ("CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int } } "
        "CREATE STREAM T { EVENT A { v:int }, EVENT C { v:int } }")


def pushed(query: str, events, backend: str):
    engine = cercore.compile(query, DECL).engine(backend)
    return [[ce.positions for ce in engine.push(t, {"v": i}, stream=s)]
            for i, (t, s) in enumerate(events)]


@pytest.mark.parametrize("query, events, expected", [
    ("SELECT * FROM S, T WHERE S>A ; T>A", [("A", "S"), ("A", "T"), ("A", None), ("A", "T")],
     [[], [(0, 1)], [(0, 2)], [(2, 3), (0, 3)]]),
    # FROM T: S-tagged events are not read (not even as a gap for ':')
    ("SELECT * FROM T WHERE A : A", [("A", "T"), ("A", "S"), ("A", "T")],
     [[], [], [(0, 2)]]),
    ("SELECT * FROM T WHERE A ; A", [("A", "S"), ("A", None), ("A", "T")],
     [[], [], [(1, 2)]]),
    # unqualified A in FROM S, T: A of either stream
    ("SELECT * FROM S, T WHERE A ; C", [("A", "S"), ("C", "T")], [[], [(0, 1)]]),
    ("SELECT * FROM S, T WHERE T>A ; C", [("A", "S"), ("C", "T")], [[], []]),
])
def test_stream_tags(query, events, expected, backend):
    assert pushed(query, events, backend) == expected


def test_stream_column(backend):
    q = cercore.compile("SELECT * FROM S, T WHERE S>A ; T>A", DECL)
    table = pa.table({"event_type": ["A", "A", "A"], "v": [0, 1, 2], "src": ["T", "S", "T"]})
    got = [ce.positions for ce in q.engine(backend, stream_column="src").process(table)]
    assert got == [(1, 2)]


def test_bad_stream_tags(backend):
    q = cercore.compile("SELECT * FROM S WHERE A", DECL)
    with pytest.raises(cercore.EventError, match="stream T carries no B events"):
        q.engine(backend).push("B", {"v": 1}, stream="T")
    with pytest.raises(cercore.EventError, match="unknown stream 'U'"):
        q.engine(backend).push("A", {"v": 1}, stream="U")
    table = pa.table({"event_type": ["A", "B", "A"], "v": [0, 1, 2], "src": ["S", "T", "S"]})
    engine = q.engine(backend, on_error="skip", stream_column="src")
    assert [ce.positions for ce in engine.process(table)] == [(0,), (2,)]
    assert engine.stats["skipped_by_reason"] == {"stream": 1}


def test_stream_tags_with_a_reorder_slack(backend):
    """Tags travel with their events through the reorder buffer: shuffled input within the
    slack gives what the time-sorted input gives without one (tags by push, by process and
    by a stream column)."""
    import random

    decl = ("CREATE STREAM S { EVENT A { v:int, ts:primary_time }, EVENT B { v:int, "
            "ts:primary_time } } CREATE STREAM T { EVENT A { v:int, ts:primary_time }, "
            "EVENT C { v:int, ts:primary_time } }")
    q = cercore.compile("SELECT * FROM S, T WHERE S>A ; (T>A OR C) WITHIN 12 [ts]", decl)
    rng = random.Random(4)
    events = [(rng.choice("AAC"), {"v": i, "ts": i}, rng.choice(["S", "T", None]))
              for i in range(60)]
    events = [(t, a, "T" if t == "C" and s == "S" else s) for t, a, s in events]

    def key(ces):
        return sorted(tuple(sorted(e.attributes["v"] for e in ce.events)) for ce in ces)

    plain = q.engine(backend)
    want = key([ce for t, a, s in events for ce in plain.push(t, a, stream=s)])
    assert want
    shuffled = events[:]
    for i in range(0, len(shuffled) - 3, 3):  # swap neighbours: at most 2 time units late
        shuffled[i], shuffled[i + 2] = shuffled[i + 2], shuffled[i]
    slack = q.engine(backend, reorder_slack=2)
    got = [ce for t, a, s in shuffled for ce in slack.push(t, a, stream=s)] + slack.flush()
    assert key(got) == want
    table = pa.table({"event_type": [t for t, _, _ in shuffled],
                      "v": [a["v"] for _, a, _ in shuffled],
                      "ts": [a["ts"] for _, a, _ in shuffled],
                      "src": [s for _, _, s in shuffled]})
    column = q.engine(backend, reorder_slack=2, stream_column="src")
    assert key(list(column.process(table)) + column.flush()) == want


def test_non_event_record_with_a_reorder_slack_is_an_event_error():
    q = cercore.compile("SELECT * FROM S WHERE A",
                        "CREATE STREAM S { EVENT A { ts:primary_time } }")
    with pytest.raises(cercore.EventError, match="expected a .type, attributes. pair"):
        list(q.engine("python", reorder_slack=1).process([5]))


# ---- stream-qualified names wherever a variable is named ------------------------------------
@pytest.mark.parametrize("query, events, expected", [
    # S>A[...] filters the A events read from S; the T-tagged A is read by T>A, unfiltered
    ("SELECT * FROM S, T WHERE S>A ; T>A FILTER S>A[v > 0]",
     [("A", "S"), ("A", "S"), ("A", "T")], [[], [], [(1, 2)]]),
    ("SELECT * FROM S, T WHERE T>A ; S>A FILTER T>A[v > 5]", [("A", "T"), ("A", "S")],
     [[], []]),
    # SELECT S>A keeps only the positions read as S>A
    ("SELECT S>A FROM S, T WHERE S>A ; T>A", [("A", "S"), ("A", "T")], [[], [(0,)]]),
    # the event type's own name still binds every A, qualified or not
    ("SELECT * FROM S, T WHERE S>A ; T>A FILTER A[v > 0]", [("A", "S"), ("A", "T"),
                                                         ("A", "S"), ("A", "T")],
     [[], [], [], [(2, 3)]]),
])
def test_stream_qualified_variables(query, events, expected, backend):
    assert pushed(query, events, backend) == expected


def test_stream_qualified_projection_and_bindings(backend):
    q = cercore.compile("SELECT S>A[v] FROM S, T WHERE S>A ; T>A", DECL)
    engine = q.engine(backend)
    engine.push("A", {"v": 1}, stream="S")
    (ce,) = engine.push("A", {"v": 2}, stream="T")
    assert ce.positions == (0,) and ce.bindings == {"S>A": (0,)}  # the projected variables
    assert [e.attributes for e in ce.events] == [{"v": 1}]


@pytest.mark.parametrize("query, message, hint", [
    # a qualified filter on an unqualified atom: the atom reads A of every stream
    ("SELECT * FROM S, T WHERE A ; C FILTER S>A[v > 0]", "unknown variable 'S>A'",
     "write S>A in the WHERE clause"),
    ("SELECT T>A FROM S, T WHERE S>A ; C", "SELECT names 'T>A'", "write T>A in the WHERE"),
    ("SELECT * FROM S, T WHERE S>A AS `x>y` ; C", "contains '>'", "qualifies an event type"),
])
def test_stream_qualified_variable_errors(query, message, hint):
    with pytest.raises(cercore.CEQLSemanticError, match=message) as info:
        cercore.compile(query, DECL)
    assert hint in str(info.value)


def test_stream_qualified_names_print_and_parse_back():
    from cercore.ceql import parser, printer

    text = "SELECT S>A[v], T>A FROM S, T WHERE S>A ; T>A FILTER S>A[v > 0] AND T>A[v < 9]"
    q = parser.parse_query(text)
    assert q.projection[0].var == "S>A" and q.formula.filter.left.var == "S>A"
    assert parser.parse_query(printer.format_query(q)) == q
