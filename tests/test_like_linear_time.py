"""LIKE in linear time and one dialect (RE2's) on every path (DESIGN.md "Filters").

An event string from outside must not stall the engine: ``(a+)+$`` against ten thousand ``a``s
and a ``b`` never finishes under a backtracking engine, and finishes at once under RE2, pushed
or in bulk, on both backends (no timing is asserted: a backtracking path hangs the test). The
dialect is RE2's on every path -- ``$`` is the end of the string only, ``\\d`` and ``\\w`` are
ASCII -- which the property below checks on strings that tell it from Python's ``re``; patterns
RE2 cannot run are refused at analysis with a located error.
"""

from __future__ import annotations

import re

import pyarrow as pa
import pytest
import re2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import BACKENDS

import cercore
from cercore.ceql.regex import regex_problem

SCHEMA = cercore.Schema.parse(
    "CREATE STREAM S { EVENT A { id:int, x:string }, EVENT B { id:int, x:string } }")


def ceql_string(text: str) -> str:
    """``text`` as a CEQL string literal (a quote is doubled; backslashes are literal)."""
    return "'" + text.replace("'", "''") + "'"


def like_query(pattern: str) -> cercore.CompiledQuery:
    return cercore.compile(f"SELECT * FROM S WHERE A FILTER A[x LIKE {ceql_string(pattern)}]",
                           SCHEMA)


def positions_by_path(query, strings: list[str | None], backend: str) -> dict[str, list]:
    """The complex events (as position tuples) of ``query`` over one A event per string, through
    ``push``, bulk records and a bulk Arrow table."""
    events = [{"id": i, "x": s} for i, s in enumerate(strings)]
    engine = query.engine(backend)
    pushed = [ce.positions for e in events for ce in engine.push("A", e)]
    records = [ce.positions for ce in query.engine(backend).process([("A", e) for e in events])]
    table = pa.Table.from_pylist([{"event_type": "A", **e} for e in events],
                                 schema=pa.schema([("event_type", pa.string()),
                                                   ("id", pa.int64()), ("x", pa.string())]))
    bulk_table = [ce.positions for ce in query.engine(backend).process(table)]
    return {"push": pushed, "records": records, "table": bulk_table}


# ---- (a) the adversarial pattern ------------------------------------------------------------
ADVERSARIAL = ["a" * 10_000 + "b", "a" * 10_000, "b" + "a" * 9_999, "a" * 10_000 + "\n"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_catastrophic_pattern_runs_on_ten_thousand_characters(backend):
    got = positions_by_path(like_query("(a+)+$"), ADVERSARIAL, backend)
    # RE2's $ is the end of the string: "a...a\n" does not match (Python's re would say it does)
    assert got == {path: [(1,), (2,)] for path in ("push", "records", "table")}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_catastrophic_pattern_in_a_trend_condition(backend):
    q = cercore.compile("RETURN id, COUNT(*) PATTERN A WHERE A.x LIKE '(a+)+$' GROUP-BY id",
                        SCHEMA)
    records = [("A", {"id": i, "x": s}) for i, s in enumerate(ADVERSARIAL)]
    assert {r["id"] for r in q.run(records, backend=backend) if r["COUNT(*)"]} == {1, 2}


# ---- (b) one meaning on every path: random patterns, random strings -------------------------
# strings over characters that tell RE2's dialect from Python's: a newline before the end ($),
# a non-ASCII letter (\w), a non-ASCII digit (\d), a no-break space (\s)
ALPHABET = "ab1 \n\u00e9\u0663\u00a0"
ATOMS = st.sampled_from(["a", "b", "1", " ", ".", r"\d", r"\w", r"\s", r"\D", r"\W", "[ab]",
                         "[^a]", "[a-c1]", r"[\w ]", r"\n"])


def _regex(children):
    """One step of the grammar: concatenation, alternation, a group, a repetition."""
    return st.one_of(
        st.lists(children, min_size=2, max_size=3).map("".join),
        st.tuples(children, children).map("|".join),
        children.map(lambda r: f"({r})"),
        st.tuples(children, st.sampled_from(["*", "+", "?"])).map(
            lambda t: f"({t[0]}){t[1]}"),
    )


REGEXES = st.recursive(ATOMS, _regex, max_leaves=6)
PATTERNS = st.tuples(st.sampled_from(["", "^"]), REGEXES, st.sampled_from(["", "$"])).map(
    "".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=PATTERNS,
       strings=st.lists(st.one_of(st.none(), st.text(ALPHABET, max_size=6)), min_size=1,
                        max_size=6))
def test_every_path_gives_the_same_complex_events(pattern, strings):
    assert regex_problem(pattern) is None, pattern
    query = like_query(pattern)
    expected = [(i,) for i, s in enumerate(strings)
                if s is not None and re2.search(pattern, s) is not None]
    for backend in BACKENDS:
        got = positions_by_path(query, strings, backend)
        assert got == {path: expected for path in ("push", "records", "table")}, backend


def test_the_strings_tell_the_dialects_apart():
    """The property's alphabet can fail a path that drifted back to Python's re."""
    cases = [("a$", "a\n"), (r"\w", "\u00e9"), (r"\d", "\u0663"), (r"\s", "\u00a0")]
    for pattern, text in cases:
        assert (re2.search(pattern, text) is None) != (re.search(pattern, text) is None)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_undecodable_byte_is_one_character(backend):
    """Input bytes that are not UTF-8 arrive as lone surrogates (surrogateescape): RE2 reads each
    as one character, as Python's re did, pushed and in bulk alike."""
    query = like_query("^a.b$")
    strings = ["a\udcffb", "a\udcff\udcfeb", "ab"]
    events = [("A", {"id": i, "x": s}) for i, s in enumerate(strings)]
    engine = query.engine(backend)
    assert [ce.positions for _, e in events for ce in engine.push("A", e)] == [(0,)]
    assert [ce.positions for ce in query.run(events, backend=backend)] == [(0,)]


# ---- (c) patterns RE2 cannot run: located errors --------------------------------------------
@pytest.mark.parametrize(("pattern", "says"), [
    (r"(a)\1", r"backreferences (\1)"),
    ("(?P<v>a)(?P=v)", "backreferences and calls ((?P=name)"),
    ("(?x) a b", "flags other than i, m, s and U"),
    ("a(?#note)", "comments"),
    ("a(?=b)", "lookaround"),
    ("(?<!b)a", "lookaround"),
    ("(?>a+)b", "atomic groups"),
    ("a++b", "possessive quantifiers"),
    (r"a\Z", r"write \z"),
    ("a{,3}", "write {0,3}"),
    ("x{99999999999}", "the repetition count {99999999999}"),
    ("a{1001}", "the repetition count {1001}"),
    ("a{0,0001001}", "the repetition count {0,0001001}"),
    ("a{" + "9" * 5000 + "}", "the repetition count {999"),  # beyond int()'s 4,300 digits
])
def test_patterns_outside_re2_are_refused_where_they_stand(pattern, says):
    text = f"SELECT *\nFROM S\nWHERE A AS a\nFILTER a[x LIKE {ceql_string(pattern)}]"
    with pytest.raises(cercore.CEQLSemanticError) as info:
        cercore.compile(text, SCHEMA)
    err = info.value
    assert says in err.message and "linear-time regular expression" in err.message
    assert (err.line, err.column) == (4, len("FILTER a[") + 1)


def test_a_trend_condition_refuses_a_backreference_where_it_stands():
    with pytest.raises(cercore.CEQLSemanticError) as info:
        cercore.compile("RETURN COUNT(*)\nPATTERN A WHERE A.x LIKE '(a)\\1'", SCHEMA)
    assert "backreferences" in info.value.message and info.value.line == 2


@pytest.mark.parametrize("pattern", [r"\{,3}", "[{,3}]", r"\Q{,3}\E", "a{2,1000}", r"\pL",
                                     r"\x{100000}", r"[\x{1000}-\x{2000}]{2}", r"\p{Greek}{3}",
                                     r"\z", "(?i)a", "[[:alpha:]]{2}", "(?P<v>a)"])
def test_re2_patterns_with_braces_escapes_and_flags_are_accepted(pattern):
    assert regex_problem(pattern) is None
