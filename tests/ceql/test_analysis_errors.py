"""Semantic errors point at the offending name, with a hint where one helps."""

from __future__ import annotations

import pytest

import cercore

DECL = ("CREATE STREAM Stock { EVENT BUY { name:string, price:double, volume:int, t:int }, "
        "EVENT SELL { name:string, price:double, volume:int, t:int } } "
        "CREATE STREAM Other { EVENT PING { n:int } }")


@pytest.mark.parametrize("query, message", [
    ("SELECT * FROM Stock WHERE BUYY", "unknown event type 'BUYY'; did you mean 'BUY'?"),
    ("SELECT * FROM Stok WHERE BUY", "unknown stream 'Stok'; did you mean 'Stock'?"),
    ("SELECT * FROM Stock WHERE PING", "event type PING is not in the FROM stream(s) Stock"),
    ("SELECT * FROM Stock WHERE BUY AS b FILTER c[price > 1]", "unknown variable 'c'"),
    ("SELECT * FROM Stock WHERE BUY AS b FILTER b[pric > 1]",
     "attribute 'pric' does not exist in BUY (the events 'b' can bind); did you mean 'price'?"),
    ("SELECT * FROM Stock WHERE BUY AS b FILTER b[name > 1]", "cannot compare string with int"),
    ("SELECT * FROM Stock WHERE BUY AS b FILTER b[price LIKE 'x']", "LIKE needs a string"),
    ("SELECT * FROM Stock WHERE BUY AS b FILTER b[name LIKE '(']", "invalid regular expression"),
    ("SELECT * FROM Stock WHERE BUY AS b FILTER b[name + 1 > 2]", "arithmetic '+' needs numbers"),
    ("SELECT * FROM Stock WHERE BUY AS b FILTER b[name IN {1, 2}]",
     "IN list mixes string with int"),
    ("SELECT * FROM Stock WHERE BUY ; SELL PARTITION BY [nme]",
     "unknown attribute 'nme' in PARTITION BY; did you mean 'name'?"),
    ("SELECT * FROM Stock WHERE BUY ; SELL WITHIN 5 [name]",
     "WITHIN [name] needs an int attribute"),
    ("SELECT * FROM Stock WHERE BUY ; SELL WITHIN 5 SECONDS", "needs event time"),
    ("SELECT NEXT * FROM Stock WHERE NOT(SELL) ; BUY", "the strategy has no position to rank"),
    ("SELECT b[pric] FROM Stock WHERE BUY AS b",
     "no event 'b' can bind has an attribute 'pric'; did you mean 'price'?"),
    ("SELECT c FROM Stock WHERE BUY AS b",
     "SELECT names 'c', which the WHERE clause does not bind"),
    ("SELECT * FROM Stock WHERE BUY ; NOT(SELL ; BUY)", "NOT(...) takes one event"),
    ("SELECT * FROM Stock WHERE BUY ; NOT(SELL AS s) FILTER s[price > 1]", "unknown variable 's'"),
])
def test_semantic_error(query, message):
    with pytest.raises(cercore.CEQLSemanticError) as err:
        cercore.compile(query, DECL)
    assert message in str(err.value)


def test_error_points_at_the_name():
    with pytest.raises(cercore.CEQLSemanticError) as err:
        cercore.compile("SELECT * FROM Stock\nWHERE BUY ; SELLL", DECL)
    e = err.value
    assert (e.line, e.column) == (2, 13)
    assert "WHERE BUY ; SELLL\n" in str(e) and str(e).rstrip().endswith("^")


def test_schema_errors():
    with pytest.raises(cercore.CEQLSemanticError,
                       match="attribute 'x' is int in A but string in B"):
        cercore.Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:string } }")
    with pytest.raises(cercore.CEQLSemanticError, match="time attribute 'ts' is not declared"):
        cercore.Schema.parse("CREATE STREAM S { EVENT A { x:int } }", time_attribute="ts")
    with pytest.raises(cercore.CEQLSemanticError, match="declared twice"):
        cercore.Schema.parse("CREATE STREAM S { EVENT A { x:int, x:int } }")
