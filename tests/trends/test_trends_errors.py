"""Bad trend queries and bad input get clear cercore errors (never a wrong number)."""

from __future__ import annotations

import pytest

from cercore.errors import CEQLSemanticError, CEQLSyntaxError, EventError
from cercore.trends import compile_trend, is_trend_query

SCHEMA = ("CREATE STREAM S { EVENT A { v:int, s:string, t:primary_time }, "
          "EVENT B { v:int, s:string, t:primary_time }, EVENT C { w:int, t:primary_time } }")


@pytest.mark.parametrize("text, line, column, expected", [
    ("RETURN COUNT(*) PATTERN SEQ(A, B", 1, 33, ")"),
    ("RETURN COUNT(*) PATERN A", 1, 17, "PATTERN"),
    ("RETURN COUNT(*) PATTERN A SEMANTICS skip-till-some-match", 1, 37, "contiguous"),
    ("RETURN COUNT(*)\nPATTERN A WHERE A.v <", 2, 22, "number"),
    ("SELECT COUNT(*) WHERE A ; B WINDOW", 1, 35, "number"),
])
def test_syntax_errors_are_located(text, line, column, expected):
    with pytest.raises(CEQLSyntaxError) as e:
        compile_trend(text, SCHEMA)
    assert (e.value.line, e.value.column) == (line, column)
    assert expected in e.value.expected
    assert "^" in e.value.snippet


def test_set_items_in_a_condition_are_constants():
    with pytest.raises(CEQLSyntaxError, match="set items must be constants"):
        compile_trend("RETURN COUNT(*) PATTERN A WHERE A.v IN {v, 2}", SCHEMA)


def test_unknown_pattern_operator():
    with pytest.raises(CEQLSyntaxError, match="unknown pattern operator 'FOO'"):
        compile_trend("RETURN COUNT(*) PATTERN FOO(A, B)", SCHEMA)


def test_colon_is_not_trend_syntax():
    with pytest.raises(CEQLSyntaxError, match="unexpected ':'"):
        compile_trend("RETURN COUNT(*) PATTERN A WHERE A:v > 1", SCHEMA)


@pytest.mark.parametrize("text, message", [
    ("RETURN COUNT(*) PATTERN SEQ(A+, B, A)", "A is used twice without renaming"),
    ("RETURN COUNT(*) PATTERN SEQ(A X, B X)", "variable 'X' is bound twice"),
    ("RETURN COUNT(*) PATTERN SEQ(A, NOT B, C)", "negation is not supported"),
    ("RETURN COUNT(*) PATTERN SEQ(A*, B)", "Kleene star is not supported"),
    ("SELECT COUNT(*) WHERE A ; (B OR C)", "disjunction is not supported"),
    ("RETURN COUNT(*) PATTERN SEQ(A, D)", "unknown event type 'D'"),
    ("RETURN COUNT(*) PATTERN SEQ(A, B) WHERE A.v < B.v", "need not be adjacent"),
    ("RETURN COUNT(*) PATTERN SEQ(A, B) WHERE B.v < NEXT(A).v", "never directly follows"),
    ("RETURN COUNT(*) PATTERN SEQ(A, B) WHERE NEXT(A).v > 1", "need not be adjacent"),
    ("RETURN COUNT(*) PATTERN SEQ(A, B) WHERE A.zz > 1", "A has no attribute 'zz'"),
    ("RETURN COUNT(*) PATTERN SEQ(A, B) WHERE A.v > v", "cannot compare"),
    ("RETURN COUNT(*) PATTERN SEQ(A, B) WHERE A.s > 1", "cannot compare"),
    ("RETURN SUM(A.s) PATTERN SEQ(A, B)", "numeric attribute"),
    ("RETURN SUM(X.v) PATTERN SEQ(A, B)", "unknown variable 'X'"),
    ("RETURN v, COUNT(*) PATTERN SEQ(A, B)", "not grouped by"),
    ("RETURN COUNT(*) PATTERN SEQ(A, C) WHERE [v]", "'v' is missing from C"),
    ("RETURN COUNT(*) PATTERN SEQ(A, C) GROUP-BY v", "'v' is missing from C"),
    ("RETURN COUNT(*) PATTERN A WHERE A.v > 1 OR [v]", "equivalence predicates go"),
    ("RETURN COUNT(*) PATTERN A WITHIN 2.5 SLIDE 1", "whole numbers"),
    ("RETURN COUNT(*) PATTERN A WHERE A.v LIKE 'x'", "LIKE needs a string, not A.v"),
    ("RETURN COUNT(*) PATTERN A WHERE A.s LIKE '(('", "invalid regular expression"),
    ("RETURN COUNT(*) PATTERN A WHERE A.s IN {1, 'a'}", "IN list mixes A.s"),
    ("RETURN COUNT(*) PATTERN A WHERE A.v IN {1..'b'}", "a range needs numbers: 1..'b'"),
    ("RETURN COUNT(*) PATTERN A WHERE A.s IN {'a'..'c'}", "a range needs numbers"),
    ("RETURN COUNT(*) PATTERN A WHERE A.s IN RANGE(1, 2)", "IN RANGE needs numbers"),
    ("RETURN COUNT(*) PATTERN A+ WHERE A.v IN RANGE(NEXT(A).v, 9)", "LIKE and IN read one"),
    ("RETURN COUNT(*) PATTERN A+ WHERE A.v IN {1} OR A.v < NEXT(A).v", "LIKE and IN read one"),
    ("RETURN COUNT(*) PATTERN SEQ(A, B) WHERE A.v IN {1} OR B.v > 0", "need not be adjacent"),
])
def test_semantic_errors(text, message):
    with pytest.raises(CEQLSemanticError, match=message):
        compile_trend(text, SCHEMA)


def test_window_needs_time_attribute():
    with pytest.raises(CEQLSemanticError, match="WITHIN needs a time attribute"):
        compile_trend("RETURN COUNT(*) PATTERN A WITHIN 2", "CREATE STREAM S { EVENT A {v:int} }")


def test_paper_next_needs_distinct_types():
    with pytest.raises(CEQLSemanticError, match="each event type once"):
        compile_trend("RETURN COUNT(*) PATTERN SEQ(A A1, A A2+) SEMANTICS skip-till-next-match",
                      SCHEMA, next_algorithm="paper")


def test_bad_events():
    q = compile_trend("RETURN SUM(A.v) PATTERN A+", SCHEMA)
    with pytest.raises(EventError, match="time goes backwards"):
        q.run([("A", {"v": 1, "s": "", "t": 5}), ("A", {"v": 1, "s": "", "t": 4})])
    with pytest.raises(EventError, match="no 'v' value"):
        q.run([("A", {"v": None, "s": "", "t": 5})])
    with pytest.raises(EventError, match="unknown event type"):
        q.run([("Z", {"t": 5})])
    rows = q.engine(on_error="skip").run([("A", {"v": 1, "s": "", "t": 5}),
                                          ("A", {"v": 1, "s": "", "t": 4})])
    assert rows == [{"SUM(A.v)": 1}]


def test_trend_query_detection():
    assert is_trend_query("RETURN COUNT(*) PATTERN A")
    assert is_trend_query("-- c\n select d, AVG(T.x) FROM S WHERE A")
    assert not is_trend_query("SELECT * FROM S WHERE A ; B")
    assert not is_trend_query("SELECT MAX * FROM S WHERE A ; B")
