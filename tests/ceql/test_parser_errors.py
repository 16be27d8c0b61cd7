# ruff: noqa: E501
"""Golden tests for syntax errors: the full message a user sees for common mistakes.

Each case pins ``str(err)``: message, location, caret snippet and hint. When a message is
changed on purpose, look at the new text, make sure it still helps, and update it here.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cercore.ceql.parser import parse_declarations, parse_query
from cercore.errors import CEQLSyntaxError

GOLDEN = [
    ('missing_rparen', 'SELECT * FROM S WHERE (A ; B', """\
unexpected end of query (line 1, column 29)
  SELECT * FROM S WHERE (A ; B
                              ^
the '(' at line 1, column 23 is never closed: add ')'"""),
    ('double_semicolon', 'SELECT * FROM S WHERE A ;; B', """\
unexpected ';'; expected '(', 'ABSENT', 'NOT' or identifier (line 1, column 26)
  SELECT * FROM S WHERE A ;; B
                           ^
two ';' in a row: remove one (A ; B means B after A)"""),
    ('filter_before_where', 'SELECT * FROM S FILTER A[x > 1]', """\
unexpected keyword 'FILTER'; expected ',' or 'WHERE' (line 1, column 17)
  SELECT * FROM S FILTER A[x > 1]
                  ^
FILTER comes after the pattern: SELECT * FROM S WHERE <pattern> FILTER X[...]"""),
    ('equals_in_formula', 'SELECT * FROM S WHERE A = B', """\
unexpected '=' (line 1, column 25)
  SELECT * FROM S WHERE A = B
                          ^
comparisons go inside a filter's brackets, e.g. ... FILTER x[price = 10]"""),
    ('equals_twice', 'SELECT * FROM S WHERE A AS a FILTER a[x = = 1]', """\
unexpected '=' (line 1, column 43)
  SELECT * FROM S WHERE A AS a FILTER a[x = = 1]
                                            ^
write '=' or '==' (they mean the same)"""),
    ('arrow_ge', 'SELECT * FROM S WHERE A AS a FILTER a[x => 1]', """\
unexpected '>' (line 1, column 42)
  SELECT * FROM S WHERE A AS a FILTER a[x => 1]
                                           ^
did you mean '>='?"""),
    ('partition_without_brackets', 'SELECT * FROM S WHERE A PARTITION BY name', """\
unexpected name 'name'; expected '[' (line 1, column 38)
  SELECT * FROM S WHERE A PARTITION BY name
                                       ^
put the attributes in brackets: PARTITION BY [name] (several groups: PARTITION BY [a, b], [c])"""),
    ('missing_where', 'SELECT * FROM S A ; B', """\
unexpected name 'A'; expected ',' or 'WHERE' (line 1, column 17)
  SELECT * FROM S A ; B
                  ^
add WHERE before the pattern: WHERE A ..."""),
    ('missing_from', 'SELECT * S WHERE A ; B', """\
unexpected name 'S'; expected 'FROM' or 'WHERE' (line 1, column 10)
  SELECT * S WHERE A ; B
           ^
add FROM before the stream name: FROM S WHERE ..."""),
    ('within_without_unit', 'SELECT * FROM S WHERE A WITHIN 5', """\
unexpected end of query (line 1, column 33)
  SELECT * FROM S WHERE A WITHIN 5
                                  ^
give a unit: WITHIN 5 EVENTS, WITHIN 5 SECONDS (or MINUTES, HOURS), or WITHIN 5 [attribute]"""),
    ('within_bad_unit', 'SELECT * FROM S WHERE A WITHIN 5 MS', """\
unexpected name 'MS' (line 1, column 34)
  SELECT * FROM S WHERE A WITHIN 5 MS
                                   ^
give a unit: WITHIN 5 EVENTS, WITHIN 5 SECONDS (or MINUTES, HOURS), or WITHIN 5 [attribute]"""),
    ('unterminated_string', "SELECT * FROM S WHERE A AS a FILTER a[name = 'abc]", """\
unterminated string (line 1, column 46)
  SELECT * FROM S WHERE A AS a FILTER a[name = 'abc]
                                               ^
close the string with ' (inside a string, write '' for a ')"""),
    ('filter_without_brackets', 'SELECT * FROM S WHERE A AS a FILTER price > 10', """\
unexpected '>'; expected '[' (line 1, column 43)
  SELECT * FROM S WHERE A AS a FILTER price > 10
                                            ^
a filter is a variable with a condition in brackets: write X[price > 10], where X is a variable bound with AS (or an event type)"""),
    ('as_without_name', 'SELECT * FROM S WHERE A AS ; B', """\
unexpected ';'; expected identifier (line 1, column 28)
  SELECT * FROM S WHERE A AS ; B
                             ^
AS needs a variable name, e.g. BUY AS b"""),
    ('as_keyword_name', 'SELECT * FROM S WHERE A AS select', """\
unexpected keyword 'select'; expected identifier (line 1, column 28)
  SELECT * FROM S WHERE A AS select
                             ^
'select' is a reserved word; to use it as a variable name, quote it: `select`"""),
    ('empty_query', '', "empty query (line 1, column 1)\n  \n  ^\n"
                        "a query looks like: SELECT * FROM S WHERE A ; B"),
    ('select_trailing_comma', 'SELECT a, FROM S WHERE A AS a', """\
unexpected keyword 'FROM'; expected identifier (line 1, column 11)
  SELECT a, FROM S WHERE A AS a
            ^
remove the trailing ',' before FROM"""),
    ('unknown_strategy', 'SELECT FIRST * FROM S WHERE A', """\
unknown selection strategy 'FIRST' (line 1, column 8)
  SELECT FIRST * FROM S WHERE A
         ^
selection strategies are ALL, ANY, NEXT, LAST, MAX and STRICT"""),
    ('misspelled_strategy', 'SELECT MAXX * FROM S WHERE A', """\
unknown selection strategy 'MAXX' (line 1, column 8)
  SELECT MAXX * FROM S WHERE A
         ^
did you mean 'MAX'? selection strategies are ALL, ANY, NEXT, LAST, MAX and STRICT"""),
    ('limit_without_number', 'SELECT * FROM S WHERE A LIMIT', """\
unexpected end of query; expected number (line 1, column 30)
  SELECT * FROM S WHERE A LIMIT
                               ^
LIMIT needs a whole number, e.g. LIMIT 10"""),
    ('limit_not_whole', 'SELECT * FROM S WHERE A LIMIT 1.5', """\
LIMIT must be a whole number, not 1.5 (line 1, column 31)
  SELECT * FROM S WHERE A LIMIT 1.5
                                ^"""),
    ('consume_without_by', 'SELECT * FROM S WHERE A CONSUME ANY', """\
unexpected keyword 'ANY'; expected 'BY' (line 1, column 33)
  SELECT * FROM S WHERE A CONSUME ANY
                                  ^
write CONSUME BY ANY, CONSUME BY PARTITION or CONSUME BY NONE"""),
    ('in_with_parentheses', 'SELECT * FROM S WHERE A AS a FILTER a[x IN (1, 2)]', """\
unexpected '('; expected 'RANGE' or '{' (line 1, column 44)
  SELECT * FROM S WHERE A AS a FILTER a[x IN (1, 2)]
                                             ^
a set is written with braces: IN {1, 2} (or IN RANGE(lo, hi) for a range)"""),
    ('misspelled_where', 'SELECT * FROM S WHER A', """\
unexpected name 'WHER'; expected ',' or 'WHERE' (line 1, column 17)
  SELECT * FROM S WHER A
                  ^
did you mean 'WHERE'?"""),
    ('misspelled_filter', 'SELECT * FROM S WHERE A FILTR a[x > 1]', """\
unexpected name 'FILTR' (line 1, column 25)
  SELECT * FROM S WHERE A FILTR a[x > 1]
                          ^
did you mean 'FILTER'?"""),
    ('trailing_semicolon', 'SELECT * FROM S WHERE A ;', """\
unexpected end of query; expected '(', 'ABSENT', 'NOT' or identifier (line 1, column 26)
  SELECT * FROM S WHERE A ;
                           ^
remove the trailing ';': a query does not end with ';'"""),
    ('and_between_patterns', 'SELECT * FROM S WHERE A AND B', """\
unexpected keyword 'AND' (line 1, column 25)
  SELECT * FROM S WHERE A AND B
                          ^
AND only joins filters (FILTER x[...] AND y[...]); to combine patterns use ';' (followed by), ':' (immediately followed by) or OR"""),
    ('patterns_without_operator', 'SELECT * FROM S WHERE A B', """\
unexpected name 'B' (line 1, column 25)
  SELECT * FROM S WHERE A B
                          ^
two patterns in a row: join them with ';' (followed by), ':' (immediately followed by) or OR"""),
    ('clause_order', 'SELECT * FROM S WHERE A WITHIN 5 EVENTS PARTITION BY [x]', """\
unexpected keyword 'PARTITION'; expected 'CONSUME', 'LIMIT' or end of query (line 1, column 41)
  SELECT * FROM S WHERE A WITHIN 5 EVENTS PARTITION BY [x]
                                          ^
clauses go in this order: SELECT, FROM, WHERE, PARTITION BY, WITHIN, CONSUME BY, LIMIT"""),
    ('double_ampersand', 'SELECT * FROM S WHERE A AS a FILTER a[x > 1 && y < 2]', """\
unexpected character '&' (line 1, column 45)
  SELECT * FROM S WHERE A AS a FILTER a[x > 1 && y < 2]
                                              ^
write AND instead of '&&'"""),
    ('missing_rsqb_multiline', 'SELECT *\nFROM S\nWHERE A AS a\nFILTER a[x > 1\nWITHIN 5 EVENTS', """\
unexpected keyword 'WITHIN' (line 5, column 1)
  WITHIN 5 EVENTS
  ^
the '[' at line 4, column 9 is never closed: add ']'"""),
    ('unmatched_rparen', 'SELECT * FROM S WHERE A)', """\
unexpected ')' (line 1, column 24)
  SELECT * FROM S WHERE A)
                         ^
this ')' has no matching opening bracket"""),
    ('bare_attribute_condition', 'SELECT * FROM S WHERE A AS a FILTER a[price]', """\
'price' is not a condition (line 1, column 39)
  SELECT * FROM S WHERE A AS a FILTER a[price]
                                        ^
compare it with something, e.g. price > 10, flag == true or name LIKE 'A.*'"""),
    ('empty_brackets', 'SELECT * FROM S WHERE A AS a FILTER a[]', """\
unexpected ']' (line 1, column 39)
  SELECT * FROM S WHERE A AS a FILTER a[]
                                        ^
write a condition inside the brackets, e.g. x[price > 10]"""),
    ('not_without_parens', 'SELECT * FROM S WHERE A ; NOT B', """\
unexpected name 'B'; expected '(' (line 1, column 31)
  SELECT * FROM S WHERE A ; NOT B
                                ^
NOT takes a pattern in parentheses: NOT(B)"""),
    ('no_select', '* FROM S WHERE A', """\
unexpected '*'; expected 'SELECT' (line 1, column 1)
  * FROM S WHERE A
  ^
a query starts with SELECT, e.g. SELECT * FROM S WHERE A ; B"""),
    ('unterminated_comment', 'SELECT * FROM S WHERE A /* comment', """\
unterminated comment (line 1, column 25)
  SELECT * FROM S WHERE A /* comment
                          ^
close the comment with */"""),
    ('where_without_pattern', 'SELECT * FROM S WHERE FILTER a[x > 1]', """\
unexpected keyword 'FILTER'; expected '(', 'ABSENT', 'NOT' or identifier (line 1, column 23)
  SELECT * FROM S WHERE FILTER a[x > 1]
                        ^
WHERE needs a pattern, e.g. WHERE A ; B"""),
    ('dangling_and_in_filter', 'SELECT * FROM S\nWHERE A ; B\nFILTER A[x > 1] AND\n', """\
unexpected end of query (line 3, column 20)
  FILTER A[x > 1] AND
                     ^
'AND' must be followed by a filter, e.g. x[price > 10] or x.price > y.price"""),
    ('duplicate_within', 'SELECT * FROM S WHERE A WITHIN 5 EVENTS WITHIN 3 EVENTS', """\
unexpected keyword 'WITHIN'; expected 'CONSUME', 'LIMIT' or end of query (line 1, column 41)
  SELECT * FROM S WHERE A WITHIN 5 EVENTS WITHIN 3 EVENTS
                                          ^
a query has at most one WITHIN clause"""),
    ('condition_in_arithmetic', 'SELECT * FROM S WHERE A FILTER A[(x > 1) + 2 > 3]', """\
a condition cannot be used as a value in arithmetic (line 1, column 35)
  SELECT * FROM S WHERE A FILTER A[(x > 1) + 2 > 3]
                                    ^
parentheses here must hold an arithmetic expression, e.g. (price + 1) * 2"""),
]


@pytest.mark.parametrize("name, text, rendered", GOLDEN, ids=[g[0] for g in GOLDEN])
def test_golden_error(name, text, rendered):
    with pytest.raises(CEQLSyntaxError) as info:
        parse_query(text)
    assert str(info.value) == rendered


def test_error_attributes():
    with pytest.raises(CEQLSyntaxError) as info:
        parse_query("SELECT * FROM S WHERE (A ; B\nWITHIN 5 EVENTS")
    err = info.value
    assert err.message == "unexpected keyword 'WITHIN'"
    assert (err.line, err.column) == (2, 1)
    assert err.text.startswith("SELECT")
    assert err.expected == sorted(err.expected)
    assert ")" in err.expected and ";" in err.expected and "OR" in err.expected
    assert "RPAR" not in err.expected and "$END" not in err.expected
    assert err.hint == "the '(' at line 1, column 23 is never closed: add ')'"
    assert err.snippet == "  WITHIN 5 EVENTS\n  ^"
    assert isinstance(err, ValueError)


def test_expected_in_source_form():
    with pytest.raises(CEQLSyntaxError) as info:
        parse_query("SELECT * FROM S WHERE A WITHIN 5")
    assert info.value.expected == ["EVENTS", "HOURS", "MINUTES", "SECONDS", "["]
    with pytest.raises(CEQLSyntaxError) as info:
        parse_query("SELECT * FROM S WHERE A LIMIT")
    assert info.value.expected == ["number"]


def test_unexpected_character_message():
    with pytest.raises(CEQLSyntaxError) as info:
        parse_query("SELECT * FROM S WHERE A ; @B")
    assert info.value.message.startswith("unexpected character '@'")
    assert (info.value.line, info.value.column) == (1, 27)


def test_end_of_input_points_after_last_token():
    with pytest.raises(CEQLSyntaxError) as info:
        parse_query("SELECT * FROM S WHERE (A ; B   -- a comment\n\n")
    assert (info.value.line, info.value.column) == (1, 29)


def test_misspelled_keyword_is_case_insensitive():
    with pytest.raises(CEQLSyntaxError) as info:
        parse_query("select * from S wher A")
    assert info.value.hint == "did you mean 'WHERE'?"


def test_declaration_errors_say_declarations():
    with pytest.raises(CEQLSyntaxError) as info:
        parse_declarations("CREATE STREAM S { EVENT A { x:int }")
    assert info.value.message.startswith("unexpected end of declarations")
    with pytest.raises(CEQLSyntaxError) as info:
        parse_declarations("CREATE STREAM S { EVENT A { x:int } } ,")
    assert info.value.expected == [";", "CREATE", "end of declarations"]


# ---------------------------------------------------------------------------------------
# No lark exception ever escapes
# ---------------------------------------------------------------------------------------
VALID = [
    "SELECT MAX * FROM S WHERE (SELL OR BUY) AS low ; BUY+ AS x : C:+ "
    "FILTER low[(price + 1) * 2 > 10 AND name IN {1..5, 'x'}] OR x[NOT a LIKE 'b'] "
    "PARTITION BY [a, b], [c] WITHIN 1 HOURS 30 MINUTES CONSUME BY ANY LIMIT 3",
    "SELECT x[a], y FROM S1, S2 WHERE S1>A AS x ; NOT(B) ; C AS y "
    "FILTER x[a IN RANGE(1, 2)] WITHIN 100 [ts]",
]
PIECES = ["(", ")", "[", "]", "{", "}", ";", ":", ":+", "+", ",", "..", "'", '"', "`", "=", "==",
          "AS", "FILTER", "OR", "AND", "NOT", "WHERE", "SELECT", "x", "1", "1.5", "-", "--",
          "/*", "*/", "@", "\n", " ", "IN", "RANGE", "WITHIN", "EVENTS", "LIMIT", "."]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(VALID), st.lists(st.tuples(st.floats(0, 1), st.integers(0, 3),
                                                  st.sampled_from(PIECES)), max_size=4))
def test_mutated_queries_raise_only_ceql_errors(base, edits):
    text = base
    for where, cut, piece in edits:
        i = int(where * len(text))
        text = text[:i] + piece + text[i + cut:]
    try:
        parse_query(text)
    except CEQLSyntaxError as e:
        assert e.message and "Traceback" not in str(e)
        assert e.line is None or e.line >= 1


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_random_text_raises_only_ceql_errors(text):
    for parse in (parse_query, parse_declarations):
        try:
            parse(text)
        except CEQLSyntaxError:
            pass
