"""The test vectors of notes/seed-002-cogra.md §5 (paper tables 6-8 and the derived
examples), the paper's queries q1-q4, granularity choices, on both backends."""

from __future__ import annotations

import pytest

from cercore.trends import compile_trend

SCHEMA = ("CREATE STREAM S { EVENT A { v:int, x:int, y:int, t:primary_time }, "
          "EVENT B { v:int, x:int, y:int, t:primary_time }, "
          "EVENT C { v:int, x:int, y:int, t:primary_time } }")
RUNNING = dict(a1=5, b2=3, a3=2, a4=7, c5=0, b6=4, a7=1, b8=6)  # §5 example 5 values


def stream(spec: dict, **extra) -> list:
    """{'a1': v, ...} -> events of type A at time 1 with v, plus extra attributes."""
    out = []
    for name, v in spec.items():
        attrs = {"v": v, "x": 0, "y": 0, "t": int(name[1:])}
        attrs.update(extra.get(name, {}))
        out.append((name[0].upper(), attrs))
    return out


def run(text, events, backend, schema=SCHEMA, **kw):
    return compile_trend(text, schema, **kw).run(events, backend=backend)


def only(rows):
    assert len(rows) == 1
    return rows[0]


SEM = {"any": "skip-till-any-match", "next": "skip-till-next-match", "cont": "contiguous"}
PAT = "(SEQ(A+, B))+"


@pytest.mark.parametrize("sem, count", [("any", 43), ("next", 8), ("cont", 2)])
def test_running_example_counts(sem, count, backend):
    """Tables 6 (43), 8 (8) and Ex. 2.7/6.2 (2)."""
    r = only(run(f"RETURN COUNT(*) PATTERN {PAT} SEMANTICS {SEM[sem]}", stream(RUNNING),
                 backend))
    assert r["COUNT(*)"] == count


@pytest.mark.parametrize("prefix, expected", [(2, 1), (6, 11), (8, 43)])
def test_table6_final_count_after_each_b(prefix, expected, backend):
    events = [e for e in stream(RUNNING) if e[1]["t"] <= prefix]
    assert only(run(f"RETURN COUNT(*) PATTERN {PAT}", events, backend))["COUNT(*)"] == expected


@pytest.mark.parametrize("prefix, expected", [(2, 1), (6, 4), (8, 8)])
def test_table8_next_final_after_each_b(prefix, expected, backend):
    events = [e for e in stream(RUNNING) if e[1]["t"] <= prefix]
    r = only(run(f"RETURN COUNT(*) PATTERN {PAT} SEMANTICS skip-till-next-match", events,
                 backend))
    assert r["COUNT(*)"] == expected


def test_table7_mixed_granularity(backend):
    """θ restricts b -> a: θ(b2, a) holds for a3, a4, a7; θ(b6, a7) fails. 33 trends."""
    events = stream(RUNNING, b2={"x": 1}, b6={"x": 10}, a3={"y": 5}, a4={"y": 5},
                    a7={"y": 5}, a1={"y": 5})
    text = f"RETURN COUNT(*) PATTERN {PAT} WHERE B.x < NEXT(A).y"
    q = compile_trend(text, SCHEMA)
    assert q.granularity == "mixed"
    assert [q.plan.vars[i].name for i in q.plan.event_grained] == ["B"]
    assert only(q.run(events, backend=backend))["COUNT(*)"] == 33


ALL_AGGS = ("COUNT(*), COUNT(A), SUM(A.v), AVG(A.v), MIN(A.v), MAX(A.v), COUNT(B), SUM(B.v), "
            "MIN(B.v), MAX(B.v)")


def test_example5_aggregates_any(backend):
    r = only(run(f"RETURN {ALL_AGGS} PATTERN {PAT}", stream(RUNNING), backend))
    assert r == {"COUNT(*)": 43, "COUNT(A)": 100, "SUM(A.v)": 388, "AVG(A.v)": 3.88,
                 "MIN(A.v)": 1, "MAX(A.v)": 7, "COUNT(B)": 66, "SUM(B.v)": 314,
                 "MIN(B.v)": 3, "MAX(B.v)": 6}


def test_example6_aggregates_next_and_cont(backend):
    r = only(run(f"RETURN {ALL_AGGS} PATTERN {PAT} SEMANTICS skip-till-next-match",
                 stream(RUNNING), backend))
    assert (r["COUNT(*)"], r["COUNT(A)"], r["SUM(A.v)"], r["MIN(A.v)"]) == (8, 17, 69, 1)
    assert r["AVG(A.v)"] == pytest.approx(69 / 17)
    r = only(run(f"RETURN {ALL_AGGS} PATTERN {PAT} SEMANTICS contiguous", stream(RUNNING),
                 backend))
    assert (r["COUNT(*)"], r["COUNT(A)"], r["SUM(A.v)"], r["MIN(A.v)"]) == (2, 2, 6, 1)


@pytest.mark.parametrize("sem, alg, count", [("next", "exact", 2), ("next", "paper", 1),
                                             ("any", "exact", 4), ("cont", "exact", 1)])
def test_example7_next_gap_without_predicates(sem, alg, count, backend):
    events = stream(dict(a1=0, b2=0, a3=0, b4=0, c5=0))
    r = only(run(f"RETURN COUNT(*) PATTERN SEQ(A+, B, C) SEMANTICS {SEM[sem]}", events,
                 backend, next_algorithm=alg))
    assert r["COUNT(*)"] == count


@pytest.mark.parametrize("sem, alg, count", [("any", "exact", 5), ("next", "exact", 5),
                                             ("cont", "exact", 4), ("next", "paper", 4)])
def test_example8_next_gap_with_adjacent_predicate(sem, alg, count, backend):
    events = stream(dict(a1=10, a2=12, a3=8))
    r = only(run(f"RETURN COUNT(*) PATTERN A+ SEMANTICS {SEM[sem]} WHERE A.v > NEXT(A).v",
                 events, backend, next_algorithm=alg))
    assert r["COUNT(*)"] == count


def test_example9_small_sum_trace(backend):
    r = only(run("RETURN COUNT(*), COUNT(A), SUM(A.v), AVG(A.v), MIN(A.v), MAX(A.v) "
                 "PATTERN SEQ(A+, B)", stream(dict(a1=1, a2=2, b3=0)), backend))
    assert r == {"COUNT(*)": 3, "COUNT(A)": 4, "SUM(A.v)": 6, "AVG(A.v)": 1.5, "MIN(A.v)": 1,
                 "MAX(A.v)": 2}


def test_example10_min_guard(backend):
    r = only(run("RETURN MIN(B.v), MAX(B.v) PATTERN SEQ(A, B+)",
                 stream(dict(b1=1, a2=0, b3=5)), backend))
    assert r == {"MIN(B.v)": 5, "MAX(B.v)": 5}


def test_example11_unrolled_minimum_length(backend):
    r = only(run("RETURN COUNT(*) PATTERN SEQ(A A1, A A2+)", stream(dict(a1=0, a2=0, a3=0)),
                 backend))
    assert r["COUNT(*)"] == 4


@pytest.mark.parametrize("n", [3, 10, 20, 64, 70])
def test_example12_exponential_counts_are_exact(n, backend):
    """2^n - 1 trends; at n = 64 the count exceeds int64: no silent wrap."""
    events = [("A", {"v": 1, "x": 0, "y": 0, "t": i}) for i in range(n)]
    r = only(run("RETURN COUNT(*), SUM(A.v), COUNT(A) PATTERN A+", events, backend))
    assert r["COUNT(*)"] == 2 ** n - 1
    assert r["SUM(A.v)"] == r["COUNT(A)"] == n * 2 ** (n - 1)


def test_example12_big_sum_overflow_double(backend):
    """A double SUM beyond int64 counts stays a double: no overflow error, no wrap."""
    schema = "CREATE STREAM S { EVENT A { d:double, t:primary_time } }"
    events = [("A", {"d": 0.5, "t": i}) for i in range(70)]
    r = only(run("RETURN SUM(A.d) PATTERN A+", events, backend, schema=schema))
    assert r["SUM(A.d)"] == pytest.approx(0.5 * 70 * 2.0 ** 69)


def test_example13_equal_timestamps(backend):
    events = [("A", {"v": 0, "x": 0, "y": 0, "t": 1})] * 2
    assert only(run("RETURN COUNT(*) PATTERN A+", events, backend))["COUNT(*)"] == 2


@pytest.mark.parametrize("sem, counts", [("any", [3, 4, 1]), ("next", [2, 2, 1]),
                                         ("cont", [2, 2, 1])])
def test_example14_sliding_windows(sem, counts, backend):
    events = stream(dict(a1=0, a2=0, b3=0, a4=0, b5=0))
    rows = run(f"RETURN COUNT(*) PATTERN SEQ(A+, B) SEMANTICS {SEM[sem]} WITHIN 4 SLIDE 2",
               events, backend)
    assert [(r["window_start"], r["window_end"], r["COUNT(*)"]) for r in rows] == [
        (0, 4, counts[0]), (2, 6, counts[1]), (4, 8, counts[2])]


def test_example14_whole_stream_is_not_the_sum_of_windows(backend):
    events = stream(dict(a1=0, a2=0, b3=0, a4=0, b5=0))
    assert only(run("RETURN COUNT(*) PATTERN SEQ(A+, B)", events, backend))["COUNT(*)"] == 10


def test_example15_local_predicates_filter_before_contiguity(backend):
    events = stream(dict(a1=5, a2=-1, b3=0))
    r = only(run("RETURN COUNT(*) PATTERN SEQ(A, B) SEMANTICS contiguous WHERE A.v > 0",
                 events, backend))
    assert r["COUNT(*)"] == 1


# ---- the paper's queries, verbatim --------------------------------------------------------
PAPER_SCHEMA = """CREATE STREAM Cluster {
  EVENT Start { job:int, mapper:int, ts:primary_time },
  EVENT Load { job:int, mapper:int, cpu:double, ts:primary_time },
  EVENT End { job:int, mapper:int, ts:primary_time } }
CREATE STREAM Uber {
  EVENT Pickup { driver:int, rider:int, district:int, ts:primary_time },
  EVENT Trip { driver:int, rider:int, district:int, speed:double, ts:primary_time },
  EVENT Dropoff { driver:int, rider:int, district:int, ts:primary_time } }
CREATE STREAM Market { EVENT Stock { company:int, sector:int, price:double, ts:primary_time } }
CREATE STREAM Health { EVENT Activity { patient:int, rate:int, type:string, ts:primary_time } }"""
Q1 = ("RETURN mapper, SUM(L.cpu) PATTERN SEQ(Start S, Load L+, End E) SEMANTICS contiguous "
      "WHERE [job,mapper] AND L.cpu < NEXT(L).cpu GROUP-BY job,mapper WITHIN 1 minute SLIDE "
      "30 seconds")
Q2 = ("RETURN district, COUNT(*), AVG(T.speed) PATTERN SEQ(Pickup P, Trip T+, Dropoff D) "
      "SEMANTICS skip-till-next-match WHERE [driver, rider, district] GROUP-BY district "
      "WITHIN 30 minutes SLIDE 1 minute")
Q3 = ("RETURN sector, COUNT(*) PATTERN Stock S+ SEMANTICS skip-till-any-match WHERE "
      "[company, sector] AND S.price > NEXT(S).price GROUP-BY sector WITHIN 10 minutes SLIDE "
      "10 seconds")
Q4 = ("RETURN patient, COUNT(*) PATTERN SEQ(Activity S, Activity A+, Activity F) SEMANTICS "
      "contiguous WHERE [patient] AND S.rate < 60 AND F.rate > 100 AND A.type = passive "
      "GROUP-BY patient WITHIN 10 minutes SLIDE 30 seconds")


def test_q1_cluster(backend):
    ev = [("Start", {"job": 1, "mapper": 2, "ts": 0}),
          ("Load", {"job": 1, "mapper": 2, "cpu": 1.0, "ts": 1}),
          ("Load", {"job": 1, "mapper": 2, "cpu": 3.0, "ts": 2}),
          ("End", {"job": 1, "mapper": 2, "ts": 3})]
    q = compile_trend(Q1, PAPER_SCHEMA)
    assert q.granularity == "pattern-grained"
    rows = q.run(ev, backend=backend)
    # one trend (S, L1, L2, E): contiguous rules out (S, L1, E) and (S, L2, E); it lies in
    # the windows [-30, 30) and [0, 60)
    assert rows == [{"window_start": w, "window_end": w + 60, "job": 1, "mapper": 2,
                     "SUM(L.cpu)": 4.0} for w in (-30, 0)]


def test_q2_uber_rolls_partitions_up_to_district(backend):
    ev = []
    for d in (1, 2):  # two drivers in district 7: two partitions, one group
        ev += [("Pickup", {"driver": d, "rider": 9, "district": 7, "ts": 10 * d}),
               ("Trip", {"driver": d, "rider": 9, "district": 7, "speed": 10.0 * d,
                         "ts": 10 * d + 1}),
               ("Dropoff", {"driver": d, "rider": 9, "district": 7, "ts": 10 * d + 2})]
    ev.sort(key=lambda e: e[1]["ts"])
    rows = run(Q2, ev, backend, schema=PAPER_SCHEMA)
    assert rows[0]["district"] == 7 and rows[0]["COUNT(*)"] == 2
    assert rows[0]["AVG(T.speed)"] == 15.0
    assert compile_trend(Q2, PAPER_SCHEMA).granularity == "type-grained"


def test_q3_stock_is_event_grained(backend):
    q = compile_trend(Q3, PAPER_SCHEMA)
    assert q.granularity == "mixed"
    assert "GRETA fallback" in q.explain()
    ev = [("Stock", {"company": 1, "sector": 3, "price": p, "ts": i})
          for i, p in enumerate([10.0, 12.0, 8.0])]
    rows = q.run(ev, backend=backend)
    assert {r["COUNT(*)"] for r in rows if r["window_start"] == 0} == {5}


def test_q4_repeated_type_renamed(backend):
    q = compile_trend(Q4, PAPER_SCHEMA)
    ev = [("Activity", {"patient": 1, "rate": r, "type": ty, "ts": i})
          for i, (r, ty) in enumerate([(50, "active"), (80, "passive"), (90, "passive"),
                                       (120, "active")])]
    rows = [r for r in q.run(ev, backend=backend) if r["window_start"] == 0]
    # S=50; A+ over the passive 80, 90 (contiguous: both); F=120 -> 1 trend
    assert rows == [{"window_start": 0, "window_end": 600, "patient": 1, "COUNT(*)": 1}]


def test_ceql_form_equals_cogra_form(backend):
    ceql = ("SELECT district, COUNT(*), AVG(T.speed) FROM Uber WHERE Pickup AS P ; Trip+ AS T "
            "; Dropoff AS D SEMANTICS next PARTITION BY [driver], [rider], [district] "
            "GROUP BY district WINDOW 30 minutes SLIDE 1 minute")
    ev = [("Pickup", {"driver": 1, "rider": 9, "district": 7, "ts": 0}),
          ("Trip", {"driver": 1, "rider": 9, "district": 7, "speed": 10.0, "ts": 1}),
          ("Trip", {"driver": 1, "rider": 9, "district": 7, "speed": 20.0, "ts": 2}),
          ("Dropoff", {"driver": 1, "rider": 9, "district": 7, "ts": 3})]
    assert run(ceql, ev, backend, schema=PAPER_SCHEMA) == run(Q2, ev, backend,
                                                              schema=PAPER_SCHEMA)


def test_explain_names_granularity_and_reason():
    text = compile_trend(f"RETURN COUNT(*) PATTERN {PAT}", SCHEMA).explain()
    assert "granularity: type-grained" in text and "Thm 4.2" in text
    text = compile_trend(f"RETURN COUNT(*) PATTERN {PAT} SEMANTICS contiguous",
                         SCHEMA).explain()
    assert "granularity: pattern-grained" in text
    text = compile_trend(f"RETURN COUNT(*) PATTERN {PAT} WHERE B.x < NEXT(A).y",
                         SCHEMA).explain()
    assert "granularity: mixed" in text and "T_e (event-grained): {B}" in text
    assert "state per (window, partition): 2 aggregate vectors + the stored T_e events" in text
    assert "counts: exact" in compile_trend(f"RETURN COUNT(*) PATTERN {PAT}", SCHEMA).explain(
        "python")


@pytest.mark.parametrize("where, compiled", [("", True), ("WHERE B.x < NEXT(A).y", True),
                                             ("WHERE NEXT(A).y > B.x", True),
                                             ("WHERE B.x + 1 < NEXT(A).y", True),
                                             ("WHERE -(NEXT(A).y * 2) / 3 >= B.x % 4", True),
                                             ("WHERE B.x * 1.5 < NEXT(A).y", True),
                                             ("WHERE B.x + NEXT(A).y < 3", False),
                                             ("WHERE B.x < NEXT(A).y + B.x", False)])
def test_cython_kernel_compiles_adjacent_predicates(where, compiled):
    """The kernel compiles a comparison of arithmetic over the predecessor's attributes with
    arithmetic over its successor's; what it does not compile runs on the reference, and
    says so."""
    fast = pytest.importorskip("cercore_fast.trends")
    q = compile_trend(f"RETURN COUNT(*) PATTERN {PAT} {where}", SCHEMA)
    assert (fast.uncompiled_reason(q.plan) is None) == compiled
    engine = q.engine("cython")
    assert engine.backend == ("cython" if compiled else "python")
    assert (engine.stats["backend_note"] is None) == compiled
    assert isinstance(engine.aggregators, fast.Kernel) == compiled
    assert ("backend: cython" in q.explain("cython")) == compiled
    if not compiled:
        assert "does not cover a predicate on adjacent events" in q.explain("cython")
    events = stream(RUNNING, b2={"x": 1}, b6={"x": 10}, a3={"y": 5}, a4={"y": 5},
                    a7={"y": 5}, a1={"y": 5})
    assert q.run(events, backend="cython") == q.run(events, backend="python")
