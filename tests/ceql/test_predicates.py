"""Predicate semantics inside X[...] (DESIGN.md "Filters")."""

from __future__ import annotations

import pytest

import cercore

DECL = ("CREATE STREAM S { EVENT A { i:int, d:double, s:string, b:bool }, "
        "EVENT B { i:int }, EVENT C { j:int } }")


def matches(pred: str, backend: str, **attrs) -> bool:
    row = {"i": 0, "d": 0.0, "s": "", "b": False}
    row.update(attrs)
    return bool(cercore.run(f"SELECT * FROM S WHERE A FILTER A[{pred}]", DECL, [("A", row)],
                            backend=backend))


@pytest.mark.parametrize("pred, attrs, expected", [
    ("i / 2 = -3", {"i": -7}, True),          # int / int truncates toward zero
    ("i % 2 = -1", {"i": -7}, True),          # C remainder
    ("d / 2 = 3.5", {"d": 7.0}, True),
    ("i / 0 = 0", {"i": 1}, False),           # undefined arithmetic is false ...
    ("NOT i / 0 = 0", {"i": 1}, True),        # ... and NOT negates it
    ("i = 2.0", {"i": 2}, True),              # int and double mix
    ("i + d * 2 > 5", {"i": 1, "d": 2.5}, True),
    ("s LIKE 'NT'", {"s": "INTC"}, True),     # unanchored search
    ("s LIKE '^NT'", {"s": "INTC"}, False),
    ("s = 'INTC'", {"s": "INTC"}, True),
    ("s < 'B'", {"s": "AZ"}, True),
    ("i IN {1, 3, 5..7}", {"i": 6}, True),
    ("i IN {1, 3, 5..7}", {"i": 4}, False),
    ("i NOT IN {1, 3}", {"i": 4}, True),
    ("i IN RANGE(2, 4)", {"i": 4}, True),     # inclusive
    ("i IN RANGE(2, 4)", {"i": 5}, False),
    ("b = true", {"b": True}, True),
    ("i > 1 AND NOT (s = 'x' OR d < 0)", {"i": 2, "s": "y", "d": 1.0}, True),
    ("i > 1 OR i < -1 AND i = 0", {"i": 2}, True),   # AND binds tighter than OR
])
def test_predicate(pred, attrs, expected, backend):
    assert matches(pred, backend, **attrs) is expected


def test_filter_on_attribute_of_another_type_is_false_for_that_type(backend):
    """``(A OR C) AS x FILTER x[i > 0]``: C has no ``i``, so only A events can pass."""
    q = "SELECT * FROM S WHERE (A OR C) AS x FILTER x[i > 0]"
    evs = [("C", {"j": 5}), ("A", {"i": 1, "d": 0.0, "s": "", "b": False})]
    assert [ce.positions for ce in cercore.run(q, DECL, evs, backend=backend)] == [(1,)]
