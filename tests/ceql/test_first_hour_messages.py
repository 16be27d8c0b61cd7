"""Messages a new user meets while writing a first query: each warning only when true, and a
span error that says where the parentheses go."""

from __future__ import annotations

import pytest

import cercore
from cercore.errors import CEQLSemanticError

DECL = ("CREATE STREAM S { EVENT HOT { id:int, ts:primary_time(s) }, "
        "EVENT COOL { id:int, ts:primary_time(s) } }")


def _warnings(query: str) -> list[str]:
    return cercore.compile(query, DECL).warnings


def test_a_deadline_without_an_outer_window_says_what_the_span_does_not_bound():
    (w,) = _warnings("SELECT * FROM S WHERE HOT AS h ; ABSENT(COOL) WITHIN 30 SECONDS "
                     "PARTITION BY [id]")
    assert "bounds only the wait" in w and "add a WITHIN for the pattern" in w
    assert "nothing can be reclaimed" not in w
    assert _warnings("SELECT * FROM S WHERE HOT AS h ; ABSENT(COOL) WITHIN 30 SECONDS "
                     "PARTITION BY [id] WITHIN 5 MINUTES") == []
    (plain,) = _warnings("SELECT * FROM S WHERE HOT ; COOL")
    assert plain.startswith("no WITHIN clause: memory grows")


def test_a_span_inside_a_looser_operator_suggests_parentheses():
    with pytest.raises(CEQLSemanticError, match=r"write \(A : B\) ; ABSENT\(C\) WITHIN"):
        cercore.compile("SELECT * FROM S WHERE HOT AS p : HOT AS h ; ABSENT(COOL) "
                        "WITHIN 30 SECONDS", DECL)
    cercore.compile("SELECT * FROM S WHERE (HOT AS p : HOT AS h) ; ABSENT(COOL) "
                    "WITHIN 30 SECONDS", DECL)
