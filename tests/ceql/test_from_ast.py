"""A query compiled from its AST (another front end builds it: the network package) and one
condition parsed alone (a PrePP filter)."""

from __future__ import annotations

import pytest

import cercore
from cercore.ceql import ast
from cercore.ceql.parser import parse_predicate, parse_query
from cercore.errors import CEQLSyntaxError

SCHEMA = cercore.Schema.parse("CREATE STREAM S { EVENT A { x:int, t:int }, "
                              "EVENT B { x:int, t:int } }", time_attribute="t")
EVENTS = [("A", {"x": 1, "t": 0}), ("B", {"x": 1, "t": 1}), ("A", {"x": 2, "t": 2}),
          ("B", {"x": 3, "t": 3})]


def test_an_ast_compiles_as_its_text():
    text = "SELECT * FROM S WHERE A ; B FILTER A[x > 0] AND A.x < B.x WITHIN 5 [t]"
    q = cercore.compile(parse_query(text), SCHEMA)
    assert q.run(EVENTS) == cercore.compile(text, SCHEMA).run(EVENTS)
    assert "A.x < B.x" in q.text  # printed on demand


def test_a_hand_built_ast_compiles():
    formula = ast.Filter(ast.Seq(ast.EventAtom("A"), ast.EventAtom("B")),
                         ast.EventPredicate(ast.Compare("==", ast.EventAttr("A", "x"),
                                                        ast.EventAttr("B", "x"))))
    q = cercore.compile(ast.Query(formula, streams=("S",)), SCHEMA)
    assert [ce.positions for ce in q.run(EVENTS)] == [(0, 1)]


def test_parse_predicate():
    assert parse_predicate("x > 1 AND NOT s LIKE 'a'") == ast.PredAnd(
        ast.Compare(">", ast.AttrRef("x"), ast.Literal(1)),
        ast.PredNot(ast.Like(ast.AttrRef("s"), "a")))
    for bad, message in (("x", "is not a condition"), ("", "empty condition"),
                         ("x >", "end of condition")):
        with pytest.raises(CEQLSyntaxError, match=message):
            parse_predicate(bad)
