"""``ce.bindings``: the variables (AS names and event-type names) bound to each reported event;
the union over the runs that produce the complex event."""

from __future__ import annotations

import pytest

import cercore

DECL = "CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int }, EVENT C { v:int } }"


def bindings(query: str, word: str, backend: str, values=None):
    values = values or [0] * len(word)
    engine = cercore.compile(query, DECL).engine(backend)
    return [(ce.positions, ce.bindings) for ce in
            engine.process([(c, {"v": v}) for c, v in zip(word, values, strict=True)])]


@pytest.mark.parametrize("query, word, values, expected", [
    # only the branch that completes binds: y's run never reaches a final state
    ("SELECT * FROM S WHERE (A AS x ; B) OR (A AS y ; C)", "AB", None,
     [((0, 1), {"A": (0,), "B": (1,), "x": (0,)})]),
    # both runs produce {0, 1}: the union
    ("SELECT * FROM S WHERE (A AS x ; B) OR (A AS y ; B)", "AB", None,
     [((0, 1), {"A": (0,), "B": (1,), "x": (0,), "y": (0,)})]),
    # a variable under + collects every iteration
    ("SELECT * FROM S WHERE A AS x ; (B AS y)+", "ABB", None,
     [((0, 1), {"A": (0,), "B": (1,), "x": (0,), "y": (1,)}),
      ((0, 1, 2), {"A": (0,), "B": (1, 2), "x": (0,), "y": (1, 2)}),
      ((0, 2), {"A": (0,), "B": (2,), "x": (0,), "y": (2,)})]),
    # filters decide which variable an event can be
    ("SELECT * FROM S WHERE ((A AS x FILTER x[v > 5]) OR (A AS y FILTER y[v <= 5])) ; B",
     "AAB", [9, 1, 0],
     [((1, 2), {"A": (1,), "B": (2,), "y": (1,)}), ((0, 2), {"A": (0,), "B": (2,), "x": (0,)})]),
    # projection: only the selected variables
    ("SELECT x FROM S WHERE A AS x ; B AS y", "AB", None, [((0,), {"x": (0,)})]),
    # NOT binds nothing
    ("SELECT * FROM S WHERE A AS x ; NOT(C) AS n ; B", "AAB", None,
     [((0, 2), {"A": (0,), "B": (2,), "x": (0,)})]),
])
def test_bindings(query, word, values, expected, backend):
    assert bindings(query, word, backend, values) == expected


def test_bindings_survive_reclamation(backend):
    q = cercore.compile("SELECT * FROM S WHERE A AS x ; B WITHIN 2 EVENTS", DECL)
    ces = list(q.engine(backend).process([("AB"[i % 2], {"v": i}) for i in range(40_000)]))
    assert ces[0].bindings == {"A": (0,), "B": (1,), "x": (0,)}
    assert ces[-1].bindings == {"A": (39_998,), "B": (39_999,), "x": (39_998,)}
