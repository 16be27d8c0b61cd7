"""The compiled trend aggregators (cercore_fast.trends) against the pure-Python reference on
streams too long for the brute-force oracle: identical rows, in the same order, including
windows whose int64 counts or sums overflow and are promoted to exact Python ints."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trends_strategies import SCHEMA, cases, query_text

from cercore.trends import compile_trend

fast = pytest.importorskip("cercore_fast.trends")

BIG = 2 ** 62


def run_both(text: str, events: list, schema: str = SCHEMA) -> tuple[list, list]:
    q = compile_trend(text, schema)
    return q.run(events, backend="python"), q.run(events, backend="cython")


def as_events(c) -> list:
    return [(e["type"], {k: e[k] for k in ("v", "g", "h", "t")}) for e in c["events"]]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(c=cases(max_events=90, values=st.one_of(st.integers(0, 3), st.integers(-BIG, BIG))))
def test_cython_equals_python_on_long_streams(c):
    py, cy = run_both(query_text(c), as_events(c))
    assert [repr(r) for r in cy] == [repr(r) for r in py], query_text(c)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(c=cases(max_events=90, values=st.one_of(st.integers(-4, 4), st.integers(-BIG, BIG)),
               arithmetic=True))
def test_cython_computes_arithmetic_between_adjacent_events_as_python(c):
    """Predicates on adjacent events with arithmetic on either side (int64 overflow handed
    to the reference's exact ints, truncating division, division by zero, doubles): the
    compiled kernel runs them itself and gives the reference's rows."""
    text = query_text(c)
    q = compile_trend(text, SCHEMA)
    assert fast.uncompiled_reason(q.plan) is None, text
    py, cy = run_both(text, as_events(c))
    assert [repr(r) for r in cy] == [repr(r) for r in py], text


def test_count_overflow_promotes_the_window_and_stays_exact():
    n = 70
    events = [("A", {"v": 1, "g": 0, "h": 0, "t": t}) for t in range(n)]
    q = compile_trend("RETURN COUNT(*), COUNT(A), SUM(A.v) PATTERN A+", SCHEMA)
    engine = q.engine("cython")
    rows = list(engine.process(events))
    (agg,) = engine.open[0].values()
    assert agg.mode == "objects"  # 2^70 - 1 does not fit int64: exact Python ints
    rows += engine.flush()
    assert rows == [{"COUNT(*)": 2 ** n - 1, "COUNT(A)": n * 2 ** (n - 1),
                     "SUM(A.v)": n * 2 ** (n - 1)}]
    assert rows == q.run(events, backend="python")


def test_windows_below_int64_stay_compiled():
    events = [("A", {"v": 1, "g": 0, "h": 0, "t": t}) for t in range(200)]
    engine = compile_trend("RETURN COUNT(*) PATTERN A+ WITHIN 10 SLIDE 5", SCHEMA).engine(
        "cython")
    list(engine.process(events))
    assert not any(a.promoted for parts in engine.open.values() for a in parts.values())


@pytest.mark.parametrize("semantics", ["skip-till-any-match", "skip-till-next-match",
                                       "contiguous"])
@pytest.mark.parametrize("where", ["", "WHERE A.v > NEXT(A).v", "WHERE [g] AND A.v <= 2",
                                   "WHERE A.v < NEXT(B).v AND B.v > NEXT(A).v"])
def test_random_walks_equal(semantics, where):
    """Thousands of events, sliding windows, event-grained waiting sets that fill and drain
    (the NEXT arena compaction), and sums that overflow in some windows."""
    rng = random.Random(hash((semantics, where)) & 0xFFFF)
    v, events = 0, []
    for t in range(3000):
        v += rng.choice((-1, 1))
        big = rng.random() < 0.01
        events.append((rng.choice("AAB"), {"v": BIG if big else v, "g": rng.randint(0, 2),
                                            "h": 0, "t": t // 2}))
    text = (f"RETURN COUNT(*), SUM(A.v), MIN(B.v), MAX(A.v) PATTERN SEQ(A+, B)+ "
            f"SEMANTICS {semantics} {where} WITHIN 64 SLIDE 16")
    py, cy = run_both(text, events)
    assert py and cy == py


def modes(engine) -> set:
    return {a.mode for parts in engine.open.values() for a in parts.values()}


@pytest.mark.parametrize("semantics", ["skip-till-any-match", "skip-till-next-match",
                                       "contiguous"])
@pytest.mark.parametrize("where", ["", "WHERE A.v < NEXT(A).v", "WHERE B.v > NEXT(A).v",
                                   "WHERE [g] AND A.v >= NEXT(A).v"])
def test_long_windows_continue_in_object_mode(semantics, where):
    """Windows long enough for counts beyond int64 go on with exact Python numbers in the
    compiled loop (predicates on adjacent events still compared in C): rows equal the
    reference's, and their types too (ints stay ints, double sums stay floats)."""
    schema = ("CREATE STREAM S { EVENT A { v:int, x:double, g:int, t:primary_time }, "
              "EVENT B { v:int, x:double, g:int, t:primary_time } }")
    rng = random.Random(hash((semantics, where)) & 0xFFFF)
    v, events = 0, []
    for t in range(1500):
        v += rng.choice((-1, 1))
        events.append((rng.choice("AAAB"), {"v": v, "x": rng.uniform(-1, 1),
                                             "g": rng.randint(0, 1), "t": t}))
    text = (f"RETURN COUNT(*), COUNT(A), SUM(A.v), SUM(A.x), MIN(A.x), MAX(B.v), AVG(A.v) "
            f"PATTERN (SEQ(A+, B))+ SEMANTICS {semantics} {where} WITHIN 300 SLIDE 100")
    q = compile_trend(text, schema)
    engine = q.engine("cython")
    cy = list(engine.process(events[:1000]))
    if semantics == "skip-till-any-match":
        assert "objects" in modes(engine)
    assert "reference" not in modes(engine)
    cy += list(engine.process(events[1000:])) + engine.flush()
    assert [repr(r) for r in cy] == [repr(r) for r in q.run(events, backend="python")]


def test_comparisons_beyond_2_53_hand_the_window_to_the_reference():
    events = [("A", {"v": v, "g": 0, "h": 0, "t": t})
              for t, v in enumerate([3, 2 ** 60, 2 ** 60 + 1, 5, 2 ** 60 + 3])]
    q = compile_trend("RETURN COUNT(*), SUM(A.v) PATTERN A+ WHERE A.v < NEXT(A).v", SCHEMA)
    engine = q.engine("cython")
    list(engine.process(events))
    assert modes(engine) == {"reference"}  # 2^60 and 2^60 + 1 are equal as doubles
    assert engine.flush() == q.run(events, backend="python")


def test_double_sums_are_equal_to_the_bit():
    schema = "CREATE STREAM S { EVENT A { x:double, t:primary_time } }"
    rng = random.Random(3)
    events = [("A", {"x": rng.uniform(-1, 1), "t": t}) for t in range(300)]
    py, cy = run_both("RETURN SUM(A.x), MIN(A.x) PATTERN A+ WITHIN 20 SLIDE 7", events,
                      schema)
    assert [repr(r) for r in cy] == [repr(r) for r in py]


DOUBLES = ("CREATE STREAM S { EVENT A { v:int, x:double, t:primary_time }, "
           "EVENT B { v:int, x:double, t:primary_time } }")
SPECIAL = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5, -2.5, 1e308, -1e308, 3.0,
           2.0 ** 60, None]


@settings(max_examples=60, deadline=None)
@given(cond=st.sampled_from(["A.x % 2 < NEXT(A).x", "A.x * 0 <= NEXT(A).x / 0",
                             "-A.x != NEXT(A).x % -1.5", "A.x + A.v > NEXT(A).x - NEXT(A).v",
                             "A.v % 3 = NEXT(A).v / -2", "A.x / A.v >= NEXT(A).x * 1e300"]),
       semantics=st.sampled_from(["skip-till-any-match", "skip-till-next-match",
                                  "contiguous"]),
       rows=st.lists(st.tuples(st.sampled_from("AAB"), st.sampled_from([0, 1, 1, 2]),
                               st.sampled_from([1, -3, 0, 2 ** 62, -2 ** 63]),
                               st.sampled_from(SPECIAL)), max_size=60))
def test_adjacent_arithmetic_on_special_doubles_is_the_references(cond, semantics, rows):
    """NaN, infinities, -0.0, overflowing doubles and missing values through arithmetic
    between adjacent events: the compiled kernel's rows are the reference's."""
    t, events = 0, []
    for typ, dt, v, x in rows:
        t += dt
        events.append((typ, {"v": v, "x": x, "t": t}))
    text = (f"RETURN COUNT(*), MAX(A.v) PATTERN SEQ(A+, B) SEMANTICS {semantics} "
            f"WHERE {cond} WITHIN 10 SLIDE 5")
    assert fast.uncompiled_reason(compile_trend(text, DOUBLES).plan) is None
    py, cy = run_both(text, events, DOUBLES)
    assert [repr(r) for r in cy] == [repr(r) for r in py], text
