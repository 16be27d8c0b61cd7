"""Projection (SELECT x, y / SELECT NONE) and the STRICT selection strategy, asserted after
every event."""

from __future__ import annotations

import pytest

import cercore

DECL = "CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int }, EVENT C { v:int } }"


def per_event(query: str, word: str, backend: str):
    engine = cercore.compile(query, DECL).engine(backend)
    return [[(ce.start, ce.positions) for ce in engine.push(c, {"v": i})]
            for i, c in enumerate(word)]


@pytest.mark.parametrize("query, word, expected", [
    ("SELECT x FROM S WHERE A AS x ; B", "AAB", [[], [], [(1, (1,)), (0, (0,))]]),
    ("SELECT B FROM S WHERE A AS x ; B", "AAB", [[], [], [(1, (2,)), (0, (2,))]]),
    ("SELECT x, B FROM S WHERE A AS x ; C ; B", "ACB", [[], [], [(0, (0, 2))]]),
    # the same projected positions with the same interval are reported once
    ("SELECT x FROM S WHERE A AS x ; (B OR C)+", "ABC",
     [[], [(0, (0,))], [(0, (0,))]]),
    ("SELECT NONE FROM S WHERE A ; B", "AAB", [[], [], [(1, ()), (0, ())]]),
    # a variable under + collects every iteration
    ("SELECT y FROM S WHERE A ; (B AS y)+", "ABB",
     [[], [(0, (1,))], [(0, (1, 2)), (0, (2,))]]),
])
def test_projection(query, word, expected, backend):
    assert per_event(query, word, backend) == expected


@pytest.mark.parametrize("query, word, expected", [
    ("SELECT STRICT * FROM S WHERE A ; B", "AACB", [[], [], [], []]),
    ("SELECT STRICT * FROM S WHERE A ; B", "AAB", [[], [], [(1, (1, 2))]]),
    ("SELECT STRICT * FROM S WHERE A+ ; B", "AAB", [[], [], [(1, (1, 2)), (0, (0, 1, 2))]]),
    # STRICT applies after projection (CORE §3): the projected positions must be contiguous
    ("SELECT STRICT B FROM S WHERE A ; C ; B", "ACCB", [[], [], [], [(0, (3,))]]),
    ("SELECT STRICT x, B FROM S WHERE A AS x ; C ; B", "ACCB", [[], [], [], []]),
    ("SELECT STRICT C, B FROM S WHERE A ; C ; B", "AACB", [[], [], [], [(1, (2, 3)), (0, (2, 3))]]),
    # a NOT-consumed event is not reported, so it breaks contiguity
    ("SELECT STRICT * FROM S WHERE A ; NOT(C) ; B", "ABB", [[], [], []]),
])
def test_strict(query, word, expected, backend):
    assert per_event(query, word, backend) == expected


def test_select_unknown_variable():
    with pytest.raises(cercore.CEQLSemanticError, match="does not bind") as err:
        cercore.compile("SELECT * FROM S WHERE A AS x ; B".replace("*", "y"), DECL)
    assert err.value.column == 8
