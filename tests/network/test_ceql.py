"""PrePP queries from CEQL and from PrePP notation; unsupported constructs get clear errors."""

from __future__ import annotations

import pytest

from cercore import CEQLSemanticError, CEQLSyntaxError
from cercore.network import NetEvent, Predicate
from cercore.network.evaluate import centralised_matches, ceql_text
from cercore.network.from_ceql import query_from_ceql
from cercore.network.pattern import parse_pattern

DECL = ("CREATE STREAM S { EVENT A { t:primary_time, id:int, x:double }, "
        "EVENT B { t:primary_time, id:int, x:double }, EVENT C { t:primary_time, id:int, "
        "x:double }, EVENT D { t:primary_time, key:int, x:double } }")


def test_ceql_maps_sequence_or_filters_partition_and_window():
    q = query_from_ceql("SELECT * FROM S WHERE (A AS a ; (B OR C AS c)) FILTER a[x > 1] AND "
                        "c[x <= 2] PARTITION BY [id, key] WITHIN 30 SECONDS", DECL)
    assert str(q.root) == "SEQ(A, OR(B, C))"
    assert q.filter_map == {"A": "x > 1", "C": "x <= 2"}
    assert q.window == 30 and q.time_attribute == "t"
    assert set(q.predicates) == {Predicate("A", "id", "==", "B", "id"),
                                 Predicate("A", "id", "==", "C", "id"),
                                 Predicate("B", "id", "==", "C", "id")}


def test_ceql_time_units_and_attribute_windows():
    ms = DECL.replace("CREATE", "CREATE")
    q = query_from_ceql("SELECT * FROM S WHERE A ; B ; C WITHIN 2 MINUTES", ms)
    assert str(q.root) == "SEQ(A, B, C)" and q.window == 120
    assert query_from_ceql("SELECT * FROM S WHERE A ; D WITHIN 7 [t]", DECL).window == 7


@pytest.mark.parametrize("text, construct", [
    ("SELECT * FROM S WHERE A ; B+ WITHIN 5 [t]", "Kleene closure"),
    ("SELECT * FROM S WHERE A ; B:+ WITHIN 5 [t]", "Kleene closure"),
    ("SELECT * FROM S WHERE A ; NOT(B) ; C WITHIN 5 [t]", "negation NOT"),
    ("SELECT * FROM S WHERE A ; B ; A WITHIN 5 [t]", "event type A is used twice"),
    ("SELECT * FROM S WHERE A : B WITHIN 5 [t]", "contiguity ':'"),
    ("SELECT * FROM S WHERE A ; B", "needs a time window"),
    ("SELECT * FROM S WHERE A ; B WITHIN 5 EVENTS", "count window"),
    ("SELECT NEXT * FROM S WHERE A ; B WITHIN 5 [t]", "selection strategy NEXT"),
    ("SELECT * FROM S WHERE A ; B WITHIN 5 [t] CONSUME BY ANY", "CONSUME BY"),
    ("SELECT * FROM S WHERE A ; B WITHIN 5 [t] LIMIT 3", "LIMIT"),
    ("SELECT A FROM S WHERE A ; B WITHIN 5 [t]", "SELECT list"),
    ("SELECT * FROM S WHERE (A AS a ; B AS b) FILTER a[x > 1] OR b[x > 1] WITHIN 5 [t]",
     "OR between filters"),
    ("SELECT * FROM S WHERE A ; D PARTITION BY [id] WITHIN 5 [t]", "event D has none"),
])
def test_unsupported_ceql_is_named(text, construct):
    with pytest.raises(CEQLSemanticError, match=construct) as info:
        query_from_ceql(text, DECL)
    assert info.value.line == 1 and info.value.column is not None


def test_ceql_errors_of_the_parser_pass_through():
    with pytest.raises(CEQLSyntaxError):
        query_from_ceql("SELECT * FROM S WHERE A ;; B WITHIN 5 [t]", DECL)
    with pytest.raises(CEQLSemanticError, match="Z"):
        query_from_ceql("SELECT * FROM S WHERE A ; Z WITHIN 5 [t]", DECL)


def test_pattern_notation():
    q = parse_pattern("PATTERN SEQ(C c, B b, AND(A a, D)) WHERE a.id = b.id ∧ b.v < c.v "
                      "AND c.price > 10 AND D.s = 'it''s' WITHIN 30")
    assert str(q.root) == "SEQ(C, B, AND(A, D))" and q.window == 30
    assert q.predicates == (Predicate("A", "id", "==", "B", "id"),
                            Predicate("B", "v", "<", "C", "v"))
    assert q.filter_map == {"C": "price > 10", "D": "s == 'it''s'"}


@pytest.mark.parametrize("text, error, message", [
    ("PATTERN SEQ(A, A) WITHIN 3", CEQLSemanticError, "used twice"),
    ("PATTERN SEQ(A, B) WHERE z.x = A.y WITHIN 3", CEQLSemanticError, "unknown event or alias z"),
    ("PATTERN SEQ(A, B)", CEQLSyntaxError, "end of pattern"),
    ("PATTERN SEQ(A+, B) WITHIN 3", CEQLSyntaxError, "no iteration"),
    ("PATTERN SEQ(A a, B b) WHERE a:x = 1 WITHIN 3", CEQLSyntaxError, "unexpected ':'"),
    ("PATTERN SEQ(A a, B b) WHERE a.x < 1 OR b.x > 1 WITHIN 3", CEQLSemanticError,
     "joined by AND"),
    ("PATTERN SEQ(A) WITHIN 3", CEQLSyntaxError, "unexpected"),
    ("PATTERN KLEENE(A, B) WITHIN 3", CEQLSyntaxError, "unexpected"),
])
def test_pattern_errors(text, error, message):
    with pytest.raises(error, match=message) as info:
        parse_pattern(text)
    assert info.value.line == 1


def test_pattern_notation_shares_the_trend_grammar():
    # one grammar (grammar.lark's pattern_query): V.attr as in trend queries, a literal on
    # either side, comments and case-insensitive keywords as in CEQL
    q = parse_pattern("pattern seq(A a, B b) -- PrePP\n where 10 < a.price and a.id = b.id "
                      "within 5")
    assert q.filter_map == {"A": "price > 10"}
    assert q.predicates == (Predicate("A", "id", "==", "B", "id"),)


def test_and_becomes_every_interleaving_in_ceql():
    q = parse_pattern("PATTERN SEQ(A, AND(B, C)) WITHIN 9")
    text, _ = ceql_text(q)
    assert "(A ; B ; C) OR (A ; C ; B)" in text and "WITHIN 9.0 [t]" in text
    events = [NetEvent(0, "A", 0), NetEvent(1, "C", 1), NetEvent(2, "B", 2),
              NetEvent(3, "B", 12)]
    assert centralised_matches(q, events) == {frozenset({0, 1, 2})}


def test_equality_predicates_become_partition_by():
    q = parse_pattern("PATTERN SEQ(A a, B b, C c) WHERE a.id = b.id AND b.id = c.id "
                      "AND a.v < c.v WITHIN 9")
    text, left = ceql_text(q)
    assert "PARTITION BY [id]" in text
    assert Predicate("A", "v", "<", "C", "v") in left
    single = parse_pattern("PATTERN OR(A a, SEQ(B b, C c)) WHERE b.id = c.id WITHIN 9")
    assert "PARTITION BY" not in ceql_text(single)[0]  # A alone has no partner


def test_predicates_between_events_become_pairwise_predicates():
    # CEQL's x.a op y.b maps to PrePP's pairwise predicates (it is not refused);
    # one-type comparisons and literals fold into the type's filter
    q = query_from_ceql("SELECT * FROM S WHERE A AS a ; B AS b ; C AS c FILTER a.id = b.id "
                        "AND b.x < c.x AND 10 < c.x AND c.id >= c.x WITHIN 30 [t]", DECL)
    p = parse_pattern("PATTERN SEQ(A a, B b, C c) WHERE a.id = b.id AND b.x < c.x "
                      "AND c.x > 10 AND c.id >= c.x WITHIN 30")
    assert q.predicates == p.predicates == (Predicate("A", "id", "==", "B", "id"),
                                            Predicate("B", "x", "<", "C", "x"))
    assert q.filter_map == p.filter_map == {"C": "(x > 10) AND (id >= x)"}
    rows = [("A", 1, 1.0), ("B", 1, 2.0), ("C", 20, 12.0), ("B", 2, 0.0), ("C", 30, 11.0)]
    events = [NetEvent(i, t, i, attrs={"id": k, "x": x}) for i, (t, k, x) in enumerate(rows)]
    assert centralised_matches(q, events) == {frozenset({0, 1, 2}), frozenset({0, 1, 4})}
    with pytest.raises(CEQLSemanticError, match="no arithmetic"):
        query_from_ceql("SELECT * FROM S WHERE A AS a ; B AS b FILTER a.x + 1 < b.x "
                        "WITHIN 30 [t]", DECL)
