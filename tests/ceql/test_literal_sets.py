"""Big IN lists: a set of constants is lexed as one LITERAL_SET token and
its items read with one regex, so an allow-list of 100,000 items compiles in a fraction of a
second instead of going through the LALR parser token by token (about 50 us an item). The
token must build exactly the AST the token-by-token rules build -- values, ranges, negative
numbers, and each node's line and column -- and every malformed set still goes through those
rules, so its error keeps its location and expected tokens."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark import Lark

import cercore
from cercore.ceql.grammar import get_parser, grammar_text
from cercore.ceql.parser import parse_query, parse_text

DECL = "CREATE STREAM S { EVENT A { x:int, w:double, s:string } }"


def token_by_token_parser() -> Lark:
    """The CEQL parser without the LITERAL_SET alternative: every set goes through in_set."""
    text = grammar_text()
    rule = "          | sum NOT? IN LITERAL_SET                     -> in_literal_set\n"
    assert rule in text
    return Lark(text.replace(rule, ""), parser="lalr", start=["query", "declarations"],
                propagate_positions=True, maybe_placeholders=False)


SLOW = token_by_token_parser()


def located(node):
    """A node with every position (dataclass equality leaves them out)."""
    if isinstance(node, tuple):
        return tuple(located(x) for x in node)
    if not dataclasses.is_dataclass(node):
        return node
    return (type(node).__name__, node.line, node.column,
            tuple(located(getattr(node, f.name)) for f in dataclasses.fields(node)
                  if f.name not in ("line", "column")))


def lexed_as_one_token(text: str) -> bool:
    tokens = get_parser().parse_interactive(text, start="query").iter_parse()
    return any(t.type == "LITERAL_SET" for t in tokens)


SPACE = st.sampled_from(["", " ", "  ", "\n", " \n\t", "\r\n  "])
NUMBER = st.one_of(st.integers(0, 10**20).map(str),
                   st.sampled_from(["1.5", ".5", "0.25", "1e3", "2.5E-3", "7e+2", "0", "00"]))
SIGNED = st.tuples(st.sampled_from(["", "", "-", "- ", "-\n"]), NUMBER).map("".join)
STRING = st.text(st.sampled_from("ab,{}'\"\n .-1"), max_size=6).flatmap(
    lambda s: st.sampled_from(["'" + s.replace("'", "''") + "'",
                               '"' + s.replace('"', '""') + '"']))
CONSTANT = st.one_of(SIGNED, STRING)


@st.composite
def literal_sets(draw) -> str:
    items = []
    for _ in range(draw(st.integers(1, 6))):
        item = draw(CONSTANT)
        if draw(st.booleans()):
            item += draw(SPACE) + ".." + draw(SPACE) + draw(CONSTANT)
        items.append(item)
    seps = [draw(SPACE) + "," + draw(SPACE) for _ in items[1:]]
    body = items[0] + "".join(s + i for s, i in zip(seps, items[1:]))
    return "{" + draw(SPACE) + body + draw(SPACE) + "}"


@settings(max_examples=300, deadline=None, derandomize=True)
@given(lead=SPACE.filter(bool), negated=st.booleans(), literal=literal_sets())
def test_a_literal_set_token_builds_the_ast_of_the_token_by_token_rules(lead, negated, literal):
    text = (f"SELECT *{lead}FROM S WHERE A{lead}FILTER A[{lead}x {'NOT ' if negated else ''}"
            f"IN {literal}]{lead}WITHIN 3 EVENTS")
    assert lexed_as_one_token(text)
    fast = parse_query(text)
    assert located(fast) == located(parse_text(text, "query", parser=SLOW))


@pytest.mark.parametrize("literal, reason", [
    ("{1, 2,}", "unexpected '}'"),                  # trailing comma
    ("{1 2}", "unexpected number 2"),
    ("{1, 2", "is never closed"),
    ("{1, -'a'}", "set items must be constants"),
    ("{1, y}", "set items must be constants"),
    ("{1, --2\n}", "unexpected '}'"),                # a comment: token by token
    ("{1..}", "unexpected '}'"),
    ("{1e}", "unexpected name 'e'"),
])
def test_malformed_sets_keep_their_errors(literal, reason):
    text = f"SELECT * FROM S WHERE A FILTER A[x IN {literal}]"
    with pytest.raises(cercore.CEQLSyntaxError) as fast:
        parse_query(text)
    with pytest.raises(cercore.CEQLSyntaxError) as slow:
        parse_text(text, "query", parser=SLOW)
    assert reason in str(fast.value)
    assert (str(fast.value), fast.value.line, fast.value.column, fast.value.expected) == \
        (str(slow.value), slow.value.line, slow.value.column, slow.value.expected)


def test_the_token_is_never_named_in_expected_tokens():
    with pytest.raises(cercore.CEQLSyntaxError) as e:
        parse_query("SELECT * FROM S WHERE A FILTER A[x IN 5]")
    assert e.value.expected == ["RANGE", "{"] and "LITERAL_SET" not in str(e.value)


def test_sets_that_are_not_all_constants_still_parse():
    # parentheses, double signs and comments are read token by token
    text = "SELECT * FROM S WHERE A FILTER A[x IN {(1), /* c */ 2, - -3}]"
    assert not lexed_as_one_token(text)
    engine = cercore.compile(text, DECL).engine()
    got = [ce.positions for ce in engine.process([("A", {"x": v, "w": 0.0, "s": ""})
                                                  for v in (1, 2, 3, 4, -3)])]
    assert got == [(0,), (1,), (2,)]


def test_a_big_allow_list_is_one_token_and_compiles():
    n = 100_000
    text = "SELECT * FROM S WHERE A FILTER A[x IN {" + ", ".join(map(str, range(n))) + "}]"
    assert lexed_as_one_token(text)
    q = cercore.compile(text, DECL)
    engine = q.engine(on_error="skip")
    got = [ce.positions for ce in engine.process([("A", {"x": v, "w": 0.0, "s": ""})
                                                  for v in (5, -1, n - 1, n)])]
    assert got == [(0,), (2,)]
