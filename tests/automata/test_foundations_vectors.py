"""Test vectors of notes/seed-003-foundations.md §10 that need no selection strategy.

cercore follows CORE's semantics (paper Fig. 2): a variable holds the *set* of positions bound
to it and ``X[P]`` must hold for all of them. Where that differs from the Foundations paper's
single-position variables (TV6, TV19, TV20, TV21), the CORE answer is pinned and the
difference is explained next to it.
"""

from __future__ import annotations

import pytest
from support import F1_STREAM, letters, position_sets

import cercore

PHI1 = ("SELECT * FROM S WHERE (T AS x ; H AS y) "
        "FILTER x[v > 40 AND id = 0] AND y[v <= 25 AND id = 0]")
PHI2 = ("SELECT * FROM S WHERE ((T AS x ; H AS y) OR (H AS y ; T AS x)) "
        "FILTER x[v > 40 AND id = 0] AND y[v <= 25 AND id = 0]")
PHI3 = ("SELECT * FROM S WHERE (H AS x ; (T AS y FILTER y[id = 1])+ ; H AS z) "
        "FILTER x[v < 30 AND id = 1] AND z[v > 60 AND id = 1]")
PHI6_LP = ("SELECT * FROM S WHERE ((T AS x FILTER x[v >= 40]) ; T AS y) "
           "OR ((T AS x FILTER x[v < 40]) ; H AS y)")
Q1 = "SELECT * FROM S WHERE A AS x ; B AS y ; C AS z"
Q2 = "SELECT * FROM S WHERE A AS x ; B AS y ; C AS z ; D AS w"
Q3 = "SELECT * FROM S WHERE ((A AS x OR B AS y) OR C AS z) ; D AS w"
Q4 = "SELECT * FROM S WHERE (A AS x)+ ; B AS y"
Q5 = "SELECT * FROM S WHERE (A AS x)+ ; (B AS y)+ ; C AS z"
Q6 = "SELECT * FROM S WHERE ((A AS x)+ ; B AS y)+ ; C AS z"


def sets(*ps):
    return {frozenset(p) for p in ps}


@pytest.mark.parametrize("query, expected", [
    (PHI1, sets({1, 2}, {1, 8}, {5, 8})),                                   # TV1
    (PHI2, sets({1, 2}, {1, 8}, {2, 5}, {5, 8})),                           # TV2
    (PHI3, sets({3, 4, 7}, {3, 6, 7}, {3, 4, 6, 7})),                       # TV3
    (PHI6_LP, sets({1, 4}, {1, 5}, {1, 6}, {4, 5}, {4, 6}, {5, 6}, {6, 7}, {6, 8})),  # TV7
])
def test_paper_formulas_on_figure_1_stream(query, expected, ht_schema, backend):
    assert position_sets(query, ht_schema, F1_STREAM, backend) == expected


def test_tv24_figure_2_automaton(ht_schema, backend):
    """Fig. 2: an H, any subset of hot T events (v > 40), then an H: 22 complex events."""
    q = "SELECT * FROM S WHERE (H ; H) OR (H ; (T FILTER T[v > 40])+ ; H)"
    got = position_sets(q, ht_schema, F1_STREAM, backend)
    assert len(got) == 22
    assert {s for s in got if max(s) == 2} == sets({0, 2}, {0, 1, 2})
    assert {s for s in got if max(s) == 3} == sets({0, 3}, {0, 1, 3}, {2, 3})
    assert len({s for s in got if max(s) == 7}) == 8
    assert {s for s in got if max(s) == 8} == sets(
        {0, 8}, {0, 1, 8}, {0, 5, 8}, {0, 1, 5, 8}, {2, 8}, {2, 5, 8}, {3, 8}, {3, 5, 8}, {7, 8})


@pytest.mark.parametrize("query, word, expected", [
    (Q1, "AABC", sets({0, 2, 3}, {1, 2, 3})),                                        # TV8
    (Q4, "AAB", sets({0, 2}, {1, 2}, {0, 1, 2})),                                     # TV9
    (Q4, "ABAB", sets({0, 1}, {0, 3}, {2, 3}, {0, 2, 3})),                            # TV10
    ("SELECT * FROM S WHERE (A AS x ; B AS y) OR (C AS z ; D AS w ; B AS y)", "ACDB",
     sets({0, 3}, {1, 2, 3})),                                                        # TV11
    (Q3, "ABDCD", sets({0, 2}, {1, 2}, {0, 4}, {1, 4}, {3, 4})),                      # TV12
    (Q5, "ABBC", sets({0, 1, 3}, {0, 2, 3}, {0, 1, 2, 3})),                           # TV13
    (Q6, "ABABC", sets({0, 1, 4}, {0, 3, 4}, {2, 3, 4}, {0, 2, 3, 4}, {0, 1, 2, 3, 4})),  # TV14
    (Q6, "AABBC", sets({0, 2, 4}, {1, 2, 4}, {0, 1, 2, 4}, {0, 3, 4}, {1, 3, 4},
                       {0, 1, 3, 4})),                                                # TV15
    (Q2, "ABCDDCBA", sets({0, 1, 2, 3}, {0, 1, 2, 4})),                               # TV17
    (Q1, "CBA", set()),                                                               # TV18
    ("SELECT * FROM S WHERE (A AS x ; B AS y)+", "ABAB",
     sets({0, 1}, {0, 3}, {2, 3}, {0, 1, 2, 3})),                                     # TV28
])
def test_letter_vectors(query, word, expected, abc_schema, backend):
    assert position_sets(query, abc_schema, letters(word), backend) == expected


def test_tv16_q5_on_aabbcc(abc_schema, backend):
    got = position_sets(Q5, abc_schema, letters("AABBCC"), backend)
    a_sets = [{0}, {1}, {0, 1}]
    b_sets = [{2}, {3}, {2, 3}]
    assert got == {frozenset(a | b | {c}) for a in a_sets for b in b_sets for c in (4, 5)}
    assert len(got) == 18


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_tv25_output_counts(k, abc_schema, backend):
    assert len(position_sets(Q1, abc_schema, letters("A" * k + "B" * k + "C"), backend)) == k * k
    assert len(position_sets(Q2, abc_schema, letters("A" * k + "B" * k + "C" * k + "D"),
                             backend)) == k ** 3
    assert len(position_sets(Q4, abc_schema, letters("A" * (k + 6) + "B"), backend)) \
        == 2 ** (k + 6) - 1
    assert len(position_sets(Q6, abc_schema, letters("AB" * k + "C"), backend)) \
        == [1, 5, 19, 67][k - 1]


def test_tv23_filter_disjunction_across_variables(abc_schema, backend):
    q = "SELECT * FROM S WHERE (A AS x ; B AS y) FILTER x[v > 5] OR y[v > 5]"
    got = position_sets(q, abc_schema, letters("AABB", [1, 9, 2, 7]), backend)
    assert got == sets({0, 3}, {1, 2}, {1, 3})


# ---- where CORE's set-valued variables differ from the Foundations paper ------------------
def test_tv19_filter_applies_to_every_position_of_the_variable(abc_schema, backend):
    """x collects A and every B of the iteration; x[v > 5] must hold for all of them.
    (Foundations re-binds x per iteration and would also report {0,1} and {0,1,2}.)"""
    q = "SELECT * FROM S WHERE (A AS x ; (B AS x)+) FILTER x[v > 5]"
    assert position_sets(q, abc_schema, letters("ABB", [6, 1, 9]), backend) == sets({0, 2})
    assert position_sets(q, abc_schema, letters("ABB", [5, 1, 9]), backend) == set()


def test_tv6_tv20_tv21_variable_reuse_collects_positions(abc_schema, backend):
    """Reusing a variable on both sides of ';' adds both positions to it: nothing is forced
    to one position, so these formulas match (Foundations calls them unsafe)."""
    assert position_sets("SELECT * FROM S WHERE A AS x ; A AS x", abc_schema,
                         letters("AA"), backend) == sets({0, 1})
    assert position_sets("SELECT * FROM S WHERE ((A AS x) OR (B AS y)) ; C AS x", abc_schema,
                         letters("ABC"), backend) == sets({0, 2}, {1, 2})
    assert position_sets("SELECT * FROM S WHERE (A AS x ; A AS x)+ ; B AS y", abc_schema,
                         letters("AAB"), backend) == sets({0, 1, 2})


def test_tv27_filters_must_see_their_variable(abc_schema):
    with pytest.raises(cercore.CEQLSemanticError, match="unknown variable 'y'"):
        cercore.compile("SELECT * FROM S WHERE (A AS x) FILTER y[v <= 30]", abc_schema)
    # TV22: x is bound outside the filtered sub-formula, where it holds no position.
    with pytest.raises(cercore.CEQLSemanticError, match="not bound inside"):
        cercore.compile("SELECT * FROM S WHERE A AS x ; (B AS y FILTER x[v > 0])+", abc_schema)
    # Accepted: x bound by the iteration (every iteration must pass) or by one OR branch
    # (the other branch binds nothing, so the filter holds vacuously there).
    assert position_sets("SELECT * FROM S WHERE (A AS x)+ FILTER x[v > 0]", abc_schema,
                         letters("AA", [1, 0])) == sets({0})
    assert position_sets("SELECT * FROM S WHERE ((A AS x) OR (B AS y)) FILTER x[v > 0]",
                         abc_schema, letters("AB", [0, 0])) == sets({1})
