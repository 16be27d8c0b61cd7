"""How many Spark partitions each plan runs in (``cercore.spark.base.partitions``): from the keys,
the slices and the cluster's parallelism, never ``spark.sql.shuffle.partitions`` (the tests
set it to Spark's default 200 to show it is ignored); AQE keeps the chosen number; results
stay equal to the local engine. T-CER slices are dealt round-robin through values Spark's
hash partitioning sends to known partitions, checked against Spark's own hash.
"""

from __future__ import annotations

import random
import re
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spark_helpers import DDL, event_rows, local_complex_events, spark_complex_events
from strategies import SCHEMAS

from cercore.errors import CercoreError
from cercore.spark import find, state_partitions
from cercore.spark.base.partitions import (
    PER_CORE,
    SHUFFLE_PARTITIONS,
    bucket_values,
    hash_partition,
    partition_count,
    spark_hash_int,
)
from cercore.spark.base.plan import KEYED, SINGLE, TCER, SparkPlan
from cercore.spark.ceql.batch import slice_range

SCHEMA = SCHEMAS["seconds"]


# ---- pure Python -----------------------------------------------------------------------------

def test_partition_count():
    assert partition_count(SINGLE, 8, 1000) == 1
    assert partition_count(KEYED, 2) == 2 * PER_CORE  # keys unknown
    assert partition_count(KEYED, 2, 1) == 1
    assert partition_count(KEYED, 2, 4) == 4
    assert partition_count(TCER, 2, 9) == 2 * PER_CORE
    assert partition_count(TCER, 16, 9) == 9
    assert partition_count(TCER, 2, 0) == 1  # no rows: one (empty) partition


@given(st.integers(1, 300))
def test_bucket_values_hash_to_their_partition(n):
    values = bucket_values(n)
    assert [hash_partition(v, n) for v in values] == list(range(n))
    assert min(values) >= 0 and max(values) < 2**31


@given(lo=st.integers(-50, 50), extent=st.integers(0, 60), advance=st.integers(1, 12),
       d_c=st.integers(1, 12))
def test_slice_range_is_the_first_and_last_slice_holding_an_event(lo, extent, advance, d_c):
    plan = SparkPlan(TCER, "test", coordinate="time", span_limit=d_c)
    size = plan.slice_size(advance)
    hi = lo + extent
    holding = {k for c in range(lo, hi + 1) for k in range(c // advance - size, c // advance + 1)
               if k * advance <= c < k * advance + size}
    assert slice_range(plan, lo, hi, extent + 1, advance) == (min(holding), max(holding))
    assert slice_range(plan, None, None, 0, advance) == (0, -1)


# ---- on Spark --------------------------------------------------------------------------------

@pytest.mark.spark
def test_spark_hash_int_is_sparks_hash(spark):
    from pyspark.sql import functions as F

    values = [0, 1, -1, 7, 42, 2**31 - 1, -(2**31), *random.Random(0).sample(range(-10**9,
                                                                                  10**9), 50)]
    df = spark.createDataFrame([(v,) for v in values], "v int")
    got = {r["v"]: r["h"] for r in df.select("v", F.hash("v").alias("h")).collect()}
    assert got == {v: spark_hash_int(v) for v in values}


@pytest.mark.spark
def test_bucket_values_land_in_their_partition(spark):
    from pyspark.sql import functions as F

    n = 7
    values = bucket_values(n)
    df = spark.range(n).select(F.element_at(F.array(*[F.lit(v) for v in values]),
                                            (F.col("id") + 1).cast("int")).alias("b"), "id")
    rows = df.repartition(n, "b").select("id", F.spark_partition_id().alias("p")).collect()
    assert {r["id"]: r["p"] for r in rows} == {j: j for j in range(n)}


def events(n_keys: int, n: int = 60, seed: int = 1):
    rng = random.Random(seed)
    ts, out = 0, []
    for _ in range(n):
        ts += rng.choice([0, 1, 2])
        t = rng.choice("AB")
        attrs = {"v": rng.randrange(3), "w": 0.5, "s": "x", "k": rng.randrange(n_keys),
                 "ts": ts}
        out.append((t, {**attrs, "b": True} if t == "A" else attrs))
    return out


def run(spark, capsys, query, evs, **kw):
    """(complex events, partitions of the result, the executed physical plan), with
    spark.sql.shuffle.partitions at Spark's default 200."""
    df = spark.createDataFrame(event_rows(evs), DDL)
    with state_partitions(spark, 200):
        out = find(df, query, schema=SCHEMA, sequence="seq", **kw)
        rows = out.collect()
        capsys.readouterr()
        out.explain()
        plan = capsys.readouterr().out
    assert spark_complex_events(rows) == local_complex_events(query, SCHEMA, evs)
    return rows, out.rdd.getNumPartitions(), plan


KEYED_QUERY = "SELECT * FROM S WHERE A; B FILTER A[v >= 1] PARTITION BY [k] WITHIN 6 [ts]"
TCER_QUERY = "SELECT * FROM S WHERE A; B FILTER A[v >= 1] WITHIN 6 [ts]"
SINGLE_QUERY = "SELECT * FROM S WHERE A; B FILTER A[v >= 1] WITHIN 6 [ts] CONSUME BY ANY"


@pytest.mark.spark
@pytest.mark.parametrize("keys", [1, 3, 40])
def test_keyed_partitions_follow_the_cores(spark, capsys, keys):
    """PER_CORE × cores whatever the number of keys (counting them cost more than the empty
    partitions), never spark.sql.shuffle.partitions."""
    assert spark.sparkContext.defaultParallelism == 2
    want = PER_CORE * 2
    rows, n, plan = run(spark, capsys, KEYED_QUERY, events(keys))
    assert rows
    assert n == want
    # AQE ran (final plan) and kept the exchange at n: an explicit repartition is not coalesced
    assert "isFinalPlan=true" in plan
    assert "hashpartitioning(__cer_grp#" in plan and f", {want}), REPARTITION_BY_NUM" in plan
    # (expression ids such as #200L and plan ids such as plan_id=20200 are names, not counts)
    assert "200" not in re.sub(r"#\d+L?|plan_id=\d+", "", plan)


@pytest.mark.spark
@pytest.mark.parametrize("advance", [None, 3, 40, 1000])
def test_tcer_partitions_follow_the_slices(spark, capsys, advance):
    evs = events(2)
    rows, n, plan = run(spark, capsys, TCER_QUERY, evs, slice_advance=advance)
    assert rows
    lo, hi = evs[0][1]["ts"], evs[-1][1]["ts"]
    if advance is None:  # about 4 slices per core
        want = PER_CORE * 2
    else:  # slices: ⌊(lo − WS) / WA⌋ + 1 to ⌊hi / WA⌋, WS = WA + ε
        want = min(hi // advance - (lo - advance - 6) // advance, PER_CORE * 2)
    assert n == want
    assert f", {want}), REPARTITION_BY_NUM" in plan or want == 1 and "SinglePartition" in plan


@pytest.mark.spark
def test_single_pass_is_one_partition_and_num_partitions_overrides(spark, capsys):
    _, n, plan = run(spark, capsys, SINGLE_QUERY, events(3))
    assert n == 1 and "SinglePartition" in plan
    _, n, _ = run(spark, capsys, KEYED_QUERY, events(40), num_partitions=3)
    assert n == 3
    _, n, _ = run(spark, capsys, TCER_QUERY, events(2), num_partitions=5, slice_advance=3)
    assert n == 5
    with pytest.raises(ValueError):
        run(spark, capsys, KEYED_QUERY, events(3), num_partitions=0)


@pytest.mark.spark
def test_trend_aggregation_partitions(spark):
    from cercore.spark import aggregate, aggregate_rows
    from cercore.trends import compile_trend

    decl = "CREATE STREAM S { EVENT A { v:int, g:int, t:primary_time }, " \
           "EVENT B { v:int, g:int, t:primary_time } }"
    rng = random.Random(5)
    import pandas as pd

    pdf = pd.DataFrame([{"event_type": rng.choice("AAB"), "v": rng.randrange(5),
                         "g": rng.randrange(4), "t": t // 2} for t in range(80)])
    for text, want in [("RETURN g, COUNT(*) PATTERN SEQ(A+, B) WHERE [g] GROUP-BY g "
                        "WITHIN 6 SLIDE 3", PER_CORE * 2),
                       # no GROUP BY: 8 runs of 2 windows each, dealt round-robin
                       ("RETURN COUNT(*) PATTERN SEQ(A+, B) WITHIN 6 SLIDE 3", PER_CORE * 2),
                       ("RETURN COUNT(*) PATTERN SEQ(A+, B)", 1)]:
        q = compile_trend(text, decl)
        with state_partitions(spark, 200):
            df = aggregate(spark.createDataFrame(pdf), q)
            assert df.rdd.getNumPartitions() == want
            assert aggregate_rows(pdf, q, spark=spark) == q.run(pdf)


@pytest.mark.spark
def test_state_partitions_restores_the_setting_and_default_warns(spark):
    before = spark.conf.get(SHUFFLE_PARTITIONS)
    with state_partitions(spark) as n:
        assert n == PER_CORE * spark.sparkContext.defaultParallelism
        assert spark.conf.get(SHUFFLE_PARTITIONS) == str(n)
    assert spark.conf.get(SHUFFLE_PARTITIONS) == before
    source = spark.readStream.format("rate").load().selectExpr(
        "'A' AS event_type", "value AS v", "value AS ts")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the session sets the number: no warning
        find(source, TCER_QUERY.replace("[v >= 1]", "[v >= 0]"), time="ts",
             watermark="5 seconds")
    spark.conf.unset(SHUFFLE_PARTITIONS)
    try:
        assert SHUFFLE_PARTITIONS not in spark.conf.getAll
        with pytest.warns(UserWarning, match="state_partitions"):
            find(source, "SELECT * FROM S WHERE A; A WITHIN 6 [ts]", time="ts",
                 watermark="5 seconds")
    finally:
        spark.conf.set(SHUFFLE_PARTITIONS, before)
    with pytest.raises(CercoreError, match="state_partitions"):
        find(source, "SELECT * FROM S WHERE A; A WITHIN 6 [ts]", time="ts", num_partitions=2,
             watermark="5 seconds")
