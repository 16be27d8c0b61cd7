"""The selection strategies STRICT, NEXT, LAST and MAX on the test vectors of
notes/seed-003-foundations.md §10 (complete answer sets per strategy), on both backends.

The strategies are compiled at the automaton level (cercore.automata.strategies), so these
vectors check the constructions against answers derived by hand from the definitions.
"""

from __future__ import annotations

import pytest
from support import F1_STREAM, letters, position_sets
from test_foundations_vectors import PHI1, PHI2, PHI3, PHI6_LP, Q1, Q2, Q3, Q4, Q5, Q6

import cercore


def sets(*ps):
    return {frozenset(p) for p in ps}


def with_strategy(query: str, strategy: str) -> str:
    return query.replace("SELECT *", f"SELECT {strategy} *", 1)


TV11 = "SELECT * FROM S WHERE (A AS x ; B AS y) OR (C AS z ; D AS w ; B AS y)"
TV22 = "SELECT * FROM S WHERE (A AS x FILTER x[v > 0]) ; (B AS y)+"
TV23 = "SELECT * FROM S WHERE (A AS x ; B AS y) FILTER x[v > 5] OR y[v > 5]"
TV26 = "SELECT * FROM S WHERE (A AS x ; B AS y) OR (A AS x ; B AS y)"

F1_VECTORS = [  # (query, {strategy: expected})
    (PHI1, {"STRICT": sets({1, 2}), "NEXT": sets({1, 2}, {1, 8}),                      # TV1
            "LAST": sets({1, 2}, {5, 8}), "MAX": sets({1, 2}, {1, 8}, {5, 8})}),
    (PHI2, {"STRICT": sets({1, 2}), "NEXT": sets({1, 2}, {2, 5}, {1, 8}),              # TV2
            "LAST": sets({1, 2}, {2, 5}, {5, 8}),
            "MAX": sets({1, 2}, {1, 8}, {2, 5}, {5, 8})}),
    (PHI3, {"STRICT": sets(), "NEXT": sets({3, 4, 6, 7}), "LAST": sets({3, 4, 6, 7}),  # TV3
            "MAX": sets({3, 4, 6, 7})}),
    (PHI6_LP, {"STRICT": sets({4, 5}, {5, 6}, {6, 7}),                                 # TV7
               "NEXT": sets({1, 4}, {1, 5}, {1, 6}, {6, 7}, {6, 8}),
               "LAST": sets({1, 4}, {4, 5}, {5, 6}, {6, 7}, {6, 8}),
               "MAX": sets({1, 4}, {1, 5}, {1, 6}, {4, 5}, {4, 6}, {5, 6}, {6, 7}, {6, 8})}),
]

WORD_VECTORS = [  # (query, word, values, {strategy: expected})
    (Q1, "AABC", None, {"STRICT": sets({1, 2, 3}), "NEXT": sets({0, 2, 3}),              # TV8
                        "LAST": sets({1, 2, 3}), "MAX": sets({0, 2, 3}, {1, 2, 3})}),
    (Q4, "AAB", None, {"STRICT": sets({1, 2}, {0, 1, 2}), "NEXT": sets({0, 1, 2}),       # TV9
                       "LAST": sets({0, 1, 2}), "MAX": sets({0, 1, 2})}),
    (Q4, "ABAB", None, {"STRICT": sets({0, 1}, {2, 3}), "NEXT": sets({0, 1}, {0, 2, 3}),  # TV10
                        "LAST": sets({0, 1}, {0, 2, 3}), "MAX": sets({0, 1}, {0, 2, 3})}),
    (TV11, "ACDB", None, {"STRICT": sets({1, 2, 3}), "NEXT": sets({0, 3}),               # TV11
                          "LAST": sets({1, 2, 3}), "MAX": sets({0, 3}, {1, 2, 3})}),
    (Q3, "ABDCD", None, {"STRICT": sets({1, 2}, {3, 4}), "NEXT": sets({0, 2}, {0, 4}),   # TV12
                         "LAST": sets({1, 2}, {3, 4}),
                         "MAX": sets({0, 2}, {1, 2}, {0, 4}, {1, 4}, {3, 4})}),
    (Q5, "ABBC", None, {s: sets({0, 1, 2, 3}) for s in ("STRICT", "NEXT", "LAST", "MAX")}),  # TV13
    (Q6, "ABABC", None, {"STRICT": sets({2, 3, 4}, {0, 1, 2, 3, 4}),                     # TV14
                         "NEXT": sets({0, 1, 2, 3, 4}), "LAST": sets({0, 1, 2, 3, 4}),
                         "MAX": sets({0, 1, 2, 3, 4})}),
    (Q6, "AABBC", None, {"STRICT": sets(), "NEXT": sets({0, 1, 2, 4}),                   # TV15
                         "LAST": sets({0, 1, 3, 4}), "MAX": sets({0, 1, 2, 4}, {0, 1, 3, 4})}),
    (Q5, "AABBCC", None, {"STRICT": sets({0, 1, 2, 3, 4}, {1, 2, 3, 4}),                 # TV16
                          "NEXT": sets({0, 1, 2, 3, 4}, {0, 1, 2, 3, 5}),
                          "LAST": sets({0, 1, 2, 3, 4}, {0, 1, 2, 3, 5}),
                          "MAX": sets({0, 1, 2, 3, 4}, {0, 1, 2, 3, 5})}),
    (Q2, "ABCDDCBA", None, {"STRICT": sets({0, 1, 2, 3}),                                # TV17
                            "NEXT": sets({0, 1, 2, 3}, {0, 1, 2, 4}),
                            "LAST": sets({0, 1, 2, 3}, {0, 1, 2, 4}),
                            "MAX": sets({0, 1, 2, 3}, {0, 1, 2, 4})}),
    (Q1, "CBA", None, {s: sets() for s in ("STRICT", "NEXT", "LAST", "MAX")}),           # TV18
    (TV22, "ABB", [1, 0, 0], {"NEXT": sets({0, 1}, {0, 1, 2}),                           # TV22
                              "LAST": sets({0, 1}, {0, 1, 2})}),
    (TV23, "AABB", [1, 9, 2, 7], {"STRICT": sets({1, 2}), "NEXT": sets({1, 2}, {0, 3}),  # TV23
                                  "LAST": sets({1, 2}, {1, 3}),
                                  "MAX": sets({0, 3}, {1, 2}, {1, 3})}),
    (TV26, "AB", None, {s: sets({0, 1}) for s in ("STRICT", "NEXT", "LAST", "MAX")}),    # TV26
]


@pytest.mark.parametrize("strategy", ["STRICT", "NEXT", "LAST", "MAX"])
@pytest.mark.parametrize("query, expected", F1_VECTORS)
def test_paper_formulas(query, expected, strategy, ht_schema, backend):
    got = position_sets(with_strategy(query, strategy), ht_schema, F1_STREAM, backend)
    assert got == expected[strategy]


@pytest.mark.parametrize("query, word, values, expected", WORD_VECTORS)
def test_vectors(query, word, values, expected, abc_schema, backend):
    for strategy, want in expected.items():
        got = position_sets(with_strategy(query, strategy), abc_schema, letters(word, values),
                            backend)
        assert got == want, strategy


def test_tv26_no_duplicates(abc_schema, backend):
    q = cercore.compile(with_strategy(TV26, "NEXT"), abc_schema)
    assert [ce.positions for ce in q.engine(backend).process(letters("AB"))] == [(0, 1)]


def test_at_most_one_per_position_under_next_and_last(abc_schema, backend):
    for strategy in ("NEXT", "LAST"):
        q = cercore.compile(with_strategy(Q5, strategy), abc_schema)
        ends = [ce.end for ce in q.engine(backend).process(letters("AABBCCABC"))]
        assert len(ends) == len(set(ends)), strategy


def test_strategies_select_within_the_window(abc_schema, backend):
    # Only complex events that fit the window compete (docs/DESIGN.md): the earliest A of the
    # stream is outside the window of the B at 5, so NEXT takes the A at 4. Without a window,
    # every complex event of the stream competes and the A at 0 wins.
    for strategy in ("NEXT", "LAST", "MAX"):
        q = f"SELECT {strategy} * FROM S WHERE A ; B WITHIN 2 EVENTS"
        assert position_sets(q, abc_schema, letters("ACCCAB"), backend) == sets({4, 5})
    q = "SELECT NEXT * FROM S WHERE A ; B"
    assert position_sets(q, abc_schema, letters("ACCCAB"), backend) == sets({0, 5})


@pytest.mark.parametrize("strategy", ["LAST", "MAX"])
def test_a_longer_match_outside_the_window_does_not_hide_one_inside(strategy, abc_schema,
                                                                      backend):
    # Over the stream, B B B C has the longest match {0, 1, 2, 3}; it spans 3 events, so with
    # WITHIN 2 EVENTS the best that fits, {1, 2, 3}, is reported.
    q = f"SELECT {strategy} * FROM S WHERE B+ ; C WITHIN 2 EVENTS"
    assert position_sets(q, abc_schema, letters("BBBC"), backend) == sets({1, 2, 3})
    q = f"SELECT {strategy} * FROM S WHERE B+ ; C"
    assert position_sets(q, abc_schema, letters("BBBC"), backend) == sets({0, 1, 2, 3})


def test_limit_counts_the_selected_complex_events(abc_schema, backend):
    # MAX keeps {0, 2, 3} and {1, 2, 3} (neither contains the other); LIMIT 1 keeps the first
    # of them in enumeration order (latest start first), not a complex event MAX dropped.
    q = "SELECT MAX * FROM S WHERE A ; B+ ; C WITHIN 5 EVENTS LIMIT 1"
    got = [ce.positions for ce in cercore.compile(q, abc_schema).engine(backend)
           .process(letters("AABC"))]
    assert got == [(1, 2, 3)]


@pytest.mark.parametrize("strategy", ["NEXT", "LAST", "MAX"])
def test_strategies_keep_reporting_on_long_partitioned_streams(strategy, backend):
    # NEXT must not keep each key's first match forever: a key would stop reporting once that
    # match left the window, and every key would keep ranking state forever.
    schema = cercore.Schema.parse(
        "CREATE STREAM S { EVENT SELL { name:string, ts:int }, EVENT BUY { name:string, ts:int } }",
        time_attribute="ts")
    rounds, keys = 300, 50
    events = []
    for r in range(rounds):  # new keys every round, each round far past the last one's window
        for k in range(keys):
            t = r * 1000 + k
            events += [("SELL", {"name": f"r{r}k{k}", "ts": t}),
                       ("BUY", {"name": f"r{r}k{k}", "ts": t})]
    live = {}
    for name in (strategy, "ALL"):
        engine = cercore.compile(f"SELECT {name} * FROM S WHERE SELL ; BUY PARTITION BY [name] "
                                 "WITHIN 10 SECONDS", schema).engine(backend)
        got, most = [], 0
        for i in range(0, len(events), 1000):
            got += engine.process(events[i:i + 1000])
            most = max(most, engine.stats["partitions"])
        assert len(got) == rounds * keys
        assert [ce.positions for ce in got[-2:]] == [(len(events) - 4, len(events) - 3),
                                                     (len(events) - 2, len(events) - 1)]
        live[name] = most
    # a key's state expires with its window, as without a strategy: no ranking state is kept
    # for the 15,000 keys that came and went
    assert live[strategy] == live["ALL"] < rounds * keys / 2


def test_strategy_per_partition(abc_schema, backend):
    q = cercore.compile("SELECT NEXT * FROM S WHERE A ; B PARTITION BY [v]", abc_schema)
    got = {(ce.start, ce.positions) for ce in
           q.engine(backend).process(letters("AABB", [1, 2, 2, 1]))}
    assert got == {(1, (1, 2)), (0, (0, 3))}


def test_consume_restarts_the_strategy(abc_schema, backend):
    q = "SELECT NEXT * FROM S WHERE A ; B CONSUME BY ANY"
    got = [ce.positions for ce in cercore.compile(q, abc_schema).engine(backend)
           .process(letters("AABAB"))]
    assert got == [(0, 2), (3, 4)]


@pytest.mark.parametrize("query", [
    "SELECT NEXT * FROM S WHERE NOT(C) ; A ; B",
    "SELECT MAX y FROM S WHERE A AS x ; B AS y",
])
def test_unrankable_start_is_refused(query, abc_schema):
    with pytest.raises(cercore.CEQLSemanticError, match="no position to rank"):
        cercore.compile(query, abc_schema)
