"""Hostile query text: every limit is checked before the work it limits, each a
positioned CEQL error naming the limit; integer arithmetic in filters is exact."""

from __future__ import annotations

import pytest

import cercore
from cercore.ceql.parser import MAX_TREE_DEPTH
from cercore.interface.constants import INT64_MAX, INT64_MIN
from cercore.trends import compile_trend

DECL = ("CREATE STREAM S { EVENT A { x:int, w:double, s:string, ts:int }, "
        "EVENT B { x:int, w:double, s:string, ts:int } }")
SCHEMA = cercore.Schema.parse(DECL, time_attribute="ts")


def semantic_error(text: str, schema=SCHEMA) -> cercore.CEQLError:
    with pytest.raises(cercore.CEQLError) as info:
        cercore.compile(text, schema)
    return info.value


@pytest.mark.parametrize("k", [22, 26, 60])
def test_filter_alternatives_are_counted_before_they_are_built(k):
    """The 2^k alternatives are counted, not built, before the limit is checked (k = 60 would
    never finish, nor fit in memory, if they were built first)."""
    f = " AND ".join(f"(a[x > {i}] OR b[x > {i}])" for i in range(k))
    err = semantic_error(f"SELECT * FROM S WHERE A AS a ; B AS b FILTER {f}")
    assert "alternatives (more than 256)" in err.message and err.line == 1


@pytest.mark.parametrize("text, limit", [
    ("SELECT * FROM S WHERE A ; B WITHIN 99999999999999999 HOURS", "WITHIN is too large"),
    ("SELECT * FROM S WHERE A ; B WITHIN 1e400 SECONDS", "WITHIN is too large"),
    ("SELECT * FROM S WHERE A ; B WITHIN 1e308 [ts]", "WITHIN is too large"),
    ("SELECT * FROM S WHERE A ; B WITHIN 9223372036854775808 EVENTS", "WITHIN is too large"),
    ("SELECT * FROM S WHERE A ; B WITHIN 9223372036854775808 [ts]", "WITHIN is too large"),
    ("SELECT * FROM S WHERE A ; B LIMIT 9223372036854775808", "LIMIT is too large"),
])
def test_window_and_limit_ranges_are_checked_at_compile_time(text, limit):
    """Refused when compiled, not left to overflow the Cython backend on the first event (or
    the compiler)."""
    err = semantic_error(text)
    assert limit in err.message and str(INT64_MAX) in err.message
    keyword = "LIMIT" if "LIMIT" in limit else "WITHIN"
    assert text[err.column - 1:].startswith(keyword) or keyword == "LIMIT"


def test_the_largest_window_and_limit_run(backend):
    q = cercore.compile(f"SELECT * FROM S WHERE A ; B WITHIN {INT64_MAX} [ts] "
                        f"LIMIT {INT64_MAX}", SCHEMA)
    events = [("A", {"x": 0, "w": 0.0, "s": "", "ts": INT64_MIN}),
              ("B", {"x": 0, "w": 0.0, "s": "", "ts": -1})]
    assert [(ce.start, ce.end) for ce in q.engine(backend).process(events)] == [(0, 1)]


@pytest.mark.parametrize("text", ["RETURN COUNT(*) PATTERN A+ WITHIN 1e400 SLIDE 1",
                                  "RETURN COUNT(*) PATTERN A+ WITHIN 1e400 seconds SLIDE 1 seconds",
                                  "RETURN COUNT(*) PATTERN A+ WITHIN 99999999999999999999 SLIDE 1"])
def test_trend_windows_are_checked_too(text):
    with pytest.raises(cercore.CEQLSemanticError, match="window sizes are at most"):
        compile_trend(text, SCHEMA)


@pytest.mark.parametrize("condition, expected", [
    ("x * 9223372036854775807 > 0", [1, 2, INT64_MAX]),
    ("x + 9223372036854775807 < 0", [INT64_MIN]),
    ("x - 1 < -9223372036854775808", [INT64_MIN]),
    ("x / -1 > 0", [-3, INT64_MIN]),
    ("x % 99999999999999999999999 = 2", [2]),
    ("x > 99999999999999999999", []),
    ("x * x > 9223372036854775807", [INT64_MAX, INT64_MIN]),
    ("w % 99999999999999999999999 > 1", [1, 2, -3, 0, INT64_MAX, INT64_MIN]),
])
def test_filter_arithmetic_is_exact(backend, condition, expected):
    """No int64 wrap-around, and % of a literal beyond int64 is exact (not an
    AttributeError)."""
    xs = [1, 2, -3, 0, INT64_MAX, INT64_MIN]
    events = [("A", {"x": x, "w": 1.5, "s": "", "ts": i}) for i, x in enumerate(xs)]
    q = f"SELECT * FROM S WHERE A AS a FILTER a[{condition}]"
    got = [xs[ce.end] for ce in cercore.run(q, SCHEMA, events, backend=backend)]
    assert got == expected


def test_regular_expressions_that_overflow_are_query_errors():
    err = semantic_error("SELECT * FROM S WHERE A AS a FILTER a[s LIKE 'x{99999999999}']")
    assert "invalid regular expression" in err.message and err.column is not None


@pytest.mark.parametrize("text, name", [
    ("SELECT * FROM S\nWHERE A ; B\nPARTITION BY [nope]", "nope"),
    ("SELECT * FROM Nowhere WHERE A ; B", "Nowhere"),
    ("SELECT * FROM S WHERE A ; B LIMIT -1", "-1"),
])
def test_errors_point_at_the_name(text, name):
    """The caret is at the offending name, not at line 1, column 1."""
    err = semantic_error(text)
    line = text.splitlines()[err.line - 1]
    assert line[err.column - 1:].startswith(name), (err.line, err.column)


NESTED = [
    "SELECT * FROM S WHERE A AS a FILTER a[" + "(" * 243 + "x > 1" + ")" * 243 + "]",
    "SELECT * FROM S WHERE A AS a FILTER a[x > " + "- " * 300 + "1]",
    "SELECT * FROM S WHERE " + " ; ".join(["A"] * 490),
    "SELECT * FROM S WHERE " + " OR ".join(["A"] * 490),
    "SELECT * FROM S WHERE A AS a FILTER " + " AND ".join(["a[x > 1]"] * 400),
    "SELECT * FROM S WHERE A AS a FILTER a[" + " + ".join(["x"] * 400) + " > 1]",
    "SELECT * FROM S WHERE A AS a FILTER a[" + "(" * 5000 + "x > 1" + ")" * 5000 + "]",
]


@pytest.mark.parametrize("text", NESTED, ids=range(len(NESTED)))
def test_deep_nesting_is_a_syntax_error_not_a_crash(text):
    """Not a RecursionError or a lark VisitError, in compile and in explain."""
    with pytest.raises(cercore.CEQLSyntaxError, match="nested too deeply") as info:
        cercore.compile(text, SCHEMA)
    assert str(MAX_TREE_DEPTH) in info.value.message and info.value.line == 1


def test_nesting_below_the_limit_compiles_and_explains():
    for text in ["SELECT * FROM S WHERE " + " ; ".join(["A"] * 200),
                 "SELECT * FROM S WHERE A AS a FILTER a[" + "(" * 100 + "x > 1" + ")" * 100 + "]"]:
        assert cercore.compile(text, SCHEMA).explain()


# ---- an empty or blank text is located like every other syntax error -------------------------
BLANK = ["", "   ", "\n", "\n\t \n", "-- only a comment", "/* c */\n"]


def _blank_errors(text: str):
    """(entry point, its error) for every way in for query or declaration text."""
    from cercore.network.pattern import net_query, parse_pattern
    from cercore.trends.parse import parse_trend_query

    calls = {
        "compile": lambda: cercore.compile(text, DECL),
        "run": lambda: cercore.run(text, DECL, []),
        "multi_engine": lambda: cercore.multi_engine({"q": text}, DECL),
        "Schema.parse": lambda: cercore.Schema.parse(text),
        "compile with a blank schema": lambda: cercore.compile("SELECT * FROM S WHERE A", text),
        "trend query": lambda: parse_trend_query(text),
        "compile_trend": lambda: compile_trend(text, DECL),
        "PATTERN": lambda: parse_pattern(text),
        "network query": lambda: net_query(text),
        "network query with a schema": lambda: net_query(text, DECL),
    }
    for name, call in calls.items():
        with pytest.raises(cercore.CEQLSyntaxError) as info:
            call()
        yield name, info.value


@pytest.mark.parametrize("text", BLANK)
def test_a_blank_text_is_an_error_at_line_1_column_1(text):
    for name, err in _blank_errors(text):
        assert (err.line, err.column) == (1, 1), name
        assert "(line 1, column 1)" in str(err) and "\n  ^" in str(err), name
        what = ("declarations" if "chema" in name and "network" not in name
                else "pattern" if name in ("PATTERN", "network query") else "query")
        assert err.message == f"empty {what}", name
        assert err.hint, name


@pytest.mark.parametrize("argv", [
    ["explain", "  ", "--schema", DECL],
    ["run", "\n", "--schema", DECL, "--input", "-"],
    ["run", "SELECT * FROM S WHERE A", "--schema", " ", "--input", "-"],
    ["plan", "", "--network", "-"],
])
def test_the_cli_locates_a_blank_text(argv, capsys, tmp_path):
    from cercore.cli import main

    if argv[0] == "plan":
        net = tmp_path / "net.json"
        net.write_text('{"nodes": [1], "sources": {"A": [1]}, "rates": {"A": 1}}')
        argv = [*argv[:3], str(net)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "error: empty " in err and "(line 1, column 1)" in err and "Traceback" not in err
