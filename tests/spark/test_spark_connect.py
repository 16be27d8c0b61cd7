"""Every public function of ``cercore.spark`` on a Spark Connect session (``connect``: a gRPC
client of the shared local JVM, see conftest.py), against the local engine: ``find`` in each
plan, ``explain``, ``aggregate`` / ``aggregate_rows``, a streaming ``find`` (restart from the
checkpoint, ``late_events``, ``stop_query``, ``state_partitions``), a streaming ``aggregate``,
PrePP's ``run_plan`` and the estimators, and the SQL table functions. One test starts a fresh
interpreter the way a user does, ``SparkSession.builder.remote("local[2]").getOrCreate()``.

A Connect session has no ``sparkContext``, ``_jvm`` or ``_jdf``: a path that touched one fails
here with ``JVM_ATTRIBUTE_NOT_SUPPORTED``.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from collections import Counter

import pytest
from spark_helpers import DDL, event_rows, local_complex_events, spark_complex_events, write_file

import cercore
from cercore.spark import (
    aggregate,
    aggregate_rows,
    estimate_pairwise,
    estimate_rates,
    events_dataframe,
    explain,
    find,
    late_events,
    run_plan,
    state_partitions,
    stop_query,
)
from cercore.spark.base.session import is_connect, parallelism

pytestmark = pytest.mark.spark

SCHEMA = ("CREATE STREAM S { EVENT A { v:int, w:double, s:string, b:bool, k:int, "
          "ts:primary_time }, EVENT B { v:int, k:int, ts:primary_time }, "
          "EVENT C { v:int, g:int, ts:primary_time } }")
QUERIES = {
    "keyed": "SELECT * FROM S WHERE A; B+; C PARTITION BY [k, g] WITHIN 6 SECONDS",
    "T-CER": "SELECT * FROM S WHERE A; B; C FILTER A[v > 0] WITHIN 3 SECONDS",
    "single": "SELECT * FROM S WHERE A; B; C WITHIN 3 SECONDS CONSUME BY ANY",
}


def stream(n: int, seed: int) -> list[tuple[str, dict]]:
    """Random events of SCHEMA (C carries g, A and B carry k), in time order."""
    rng = random.Random(seed)
    out, ts = [], 0
    for _ in range(n):
        ts += rng.choice([0, 1, 1, 2])
        t = rng.choice("AABBC")
        attrs = {"v": rng.randrange(-1, 3), "ts": ts}
        if t == "A":
            attrs.update(w=0.5, s="x", b=True, k=rng.randrange(2))
        elif t == "B":
            attrs["k"] = rng.randrange(2)
        else:
            attrs["g"] = rng.randrange(2)
        out.append((t, attrs))
    return out


def test_the_session_is_connect_and_its_parallelism_comes_from_its_conf(connect, spark):
    assert is_connect(connect) and not is_connect(spark)
    with pytest.raises(Exception, match="JVM_ATTRIBUTE_NOT_SUPPORTED"):
        connect.sparkContext  # noqa: B018 -- what every cercore path must avoid
    assert parallelism(connect) == 2


@pytest.mark.parametrize("plan", list(QUERIES))
def test_find_and_explain(connect, plan):
    text, events = QUERIES[plan], stream(100, seed=len(plan))
    df = connect.createDataFrame(event_rows(events), DDL)
    # (a schema inferred from df gives every type every column, so A would have both k and
    # g of the bracket [k, g]: the keyed query needs the declared schema)
    target = SCHEMA if plan == "keyed" else df
    assert explain(target, text, time="ts", sequence="seq").startswith(f"spark plan: {plan}")
    want = local_complex_events(text, SCHEMA, events)
    assert sum(want.values()) >= 3
    got = find(df, text, schema=SCHEMA, sequence="seq").collect()
    assert spark_complex_events(got) == want
    assert len({r["match_id"] for r in got}) == len(got)


TREND_SCHEMA = ("CREATE STREAM S { EVENT A { v:int, g:int, t:primary_time }, "
                "EVENT B { v:int, g:int, t:primary_time } }")
TREND_QUERY = ("RETURN g, COUNT(*), SUM(A.v), MAX(B.v) PATTERN SEQ(A+, B) "
               "SEMANTICS skip-till-any-match GROUP-BY g WITHIN 6 SLIDE 2")
TREND_DDL = "event_type string, v long, g long, t long, seq long"


def trend_events(n: int, seed: int) -> list[tuple]:
    rng = random.Random(seed)
    t, out = 100, []
    for i in range(n):
        t += rng.choice([0, 1, 1, 2])
        out.append((rng.choice("AAB"), rng.randrange(4), rng.randrange(2), t, i))
    return out


def test_aggregate(connect):
    import pandas as pd

    from cercore.trends import compile_trend

    q = compile_trend(TREND_QUERY, TREND_SCHEMA)
    rows = trend_events(80, seed=2)
    pdf = pd.DataFrame(rows, columns=["event_type", "v", "g", "t", "seq"]).drop(columns="seq")
    local = q.run(pdf)
    assert local
    assert aggregate_rows(pdf, q, spark=connect) == local
    df = aggregate(connect.createDataFrame(rows, TREND_DDL), q, sequence="seq")
    assert list(df.columns) == q.columns and df.count() == len(local)


def test_streaming_find_late_events_stop_and_state_partitions(connect, tmp_path):
    """A keyed stream in two runs over one checkpoint equals the batch ``find``; the late row
    is counted (read from the checkpoint: a Connect query does not tell its location)."""
    from cercore.spark.streaming.lifecycle import CONNECT_NO_CHECKPOINT

    query = QUERIES["keyed"].replace("6 SECONDS", "6 [ts]")
    events = [(t, a.get("v"), a.get("w"), a.get("s"), a.get("b"), a.get("k"), a.get("g"),
               a["ts"] + 100, i) for i, (t, a) in enumerate(stream(50, seed=3))]
    base = str(tmp_path)
    inbox, checkpoint = os.path.join(base, "in"), os.path.join(base, "checkpoint")
    os.makedirs(inbox)

    def start():
        source = connect.readStream.schema(DDL).option("maxFilesPerTrigger", 1).parquet(inbox)
        out = find(source, query, schema=SCHEMA, sequence="seq", watermark="5 seconds")
        return (out.writeStream.format("parquet").option("path", os.path.join(base, "out"))
                .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())

    write_file(connect, inbox, "b0", events[:15], DDL)
    # far behind the watermark the first micro-batch set: late, counted, not evaluated
    write_file(connect, inbox, "b1", events[15:25] + [("B", 0, None, None, None, 0, None, 1, 999)],
               DDL)
    with state_partitions(connect, 3) as n:
        assert n == 3 and connect.conf.get("spark.sql.shuffle.partitions") == "3"
        q = start()
    assert connect.conf.get("spark.sql.shuffle.partitions") == "2"
    q.awaitTermination()
    with pytest.raises(cercore.CercoreError, match="checkpointLocation"):
        late_events(q)
    assert "Connect" in CONNECT_NO_CHECKPOINT
    assert late_events(checkpoint, connect) == 1
    write_file(connect, inbox, "b2", events[25:] + [("C", 0, None, None, None, None, 9, 999,
                                                      1000)], DDL)
    q = start()
    q.awaitTermination()
    stop_query(q)  # already stopped: returns, raising nothing
    got = Counter((r["partition"], tuple(e["seq"] for e in r["events"]))
                  for r in connect.read.parquet(os.path.join(base, "out")).collect())
    flush = events + [("C", 0, None, None, None, None, 9, 999, 1000)]
    batch = find(connect.createDataFrame(flush, DDL), query, schema=SCHEMA,
                 sequence="seq").collect()
    want = Counter((r["partition"], tuple(e["seq"] for e in r["events"])) for r in batch)
    assert sum(want.values()) >= 3 and got == want
    assert late_events(checkpoint, connect) == 1


def test_streaming_aggregate(connect, tmp_path):
    from cercore.trends import compile_trend

    q = compile_trend(TREND_QUERY, TREND_SCHEMA)
    rows = trend_events(60, seed=4)
    base = str(tmp_path)
    inbox = os.path.join(base, "in")
    os.makedirs(inbox)
    flush = [("A", 0, 0, rows[-1][3] + 100, 10_000)]
    write_file(connect, inbox, "b0", rows[:30], TREND_DDL)
    write_file(connect, inbox, "b1", rows[30:] + flush, TREND_DDL)
    source = connect.readStream.schema(TREND_DDL).option("maxFilesPerTrigger", 1).parquet(inbox)
    out = aggregate(source, q, exact="string", watermark="5 seconds", sequence="seq")
    (out.writeStream.format("parquet").option("path", os.path.join(base, "out"))
     .option("checkpointLocation", os.path.join(base, "ck")).trigger(availableNow=True)
     .start().awaitTermination())
    got = sorted((r["window_start"], r["g"], int(r["COUNT(*)"]))
                 for r in connect.read.parquet(os.path.join(base, "out")).collect())
    local = compile_trend(TREND_QUERY, TREND_SCHEMA).run(
        [(t, {"v": v, "g": g, "t": tt}) for t, v, g, tt, _ in rows])
    last = rows[-1][3]
    want = sorted((r["window_start"], r["g"], r["COUNT(*)"]) for r in local
                  if r["window_end"] <= last)
    assert want and [w for w in got if w[0] + 6 <= last] == want


def test_prepp_plan_and_estimators(connect):
    from cercore.network import NetQuery, Network, Plan, Predicate, Step, seq
    from cercore.network.estimate import estimate_network
    from cercore.network.evaluate import centralised_matches
    from cercore.network.generators import generate_traces

    net = Network(("1", "2", "3"), {"A": ["1"], "B": ["2"], "C": ["3", "2"]},
                  {"A": 0.01, "B": 0.2, "C": 0.1})
    query = NetQuery(seq("C", "B", "A"), 30, (Predicate("A", "id", "==", "B", "id"),
                                              Predicate("B", "v", "<", "C", "v")))
    traces = generate_traces(net, "ABC", 1500, seed=5, id_domain=6)
    events = events_dataframe(traces, spark=connect)
    run = run_plan(events, query, plan=Plan("1", (Step((), "A"), Step("A", "BC"))),
                   network=net)
    assert run.matches and run.matches == centralised_matches(query, traces)
    assert run.request_rows > 0 and 0 < run.responses < sum(len(t) for t in traces.values())
    local = estimate_network(query, traces)
    assert estimate_rates(events).rates == pytest.approx(local.rates)
    assert set(estimate_pairwise(events, query)) == {frozenset("AB"), frozenset("BC")}


def test_a_fresh_process_with_remote_local(tmp_path):
    """What a user types: ``SparkSession.builder.remote("local[2]").getOrCreate()`` starts a
    local Connect server (the ``connect`` extra's packages), and ``find`` runs on it."""
    pytest.importorskip("pyspark.sql.connect.session")
    from spark_session import REPO

    script = textwrap.dedent("""
        import os, sys
        os.environ["PYSPARK_PYTHON"] = sys.executable
        from pyspark.sql import SparkSession
        from cercore.spark import find
        from cercore.spark.base.session import is_connect
        spark = (SparkSession.builder.remote("local[2]")
                 .config("spark.sql.shuffle.partitions", "2")
                 .config("spark.ui.enabled", "false")
                 .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
                 .getOrCreate())
        assert is_connect(spark)
        df = spark.createDataFrame([("A", 1, 1), ("B", 1, 2), ("A", 2, 3), ("B", 2, 4)],
                                   "event_type string, k long, ts long")
        rows = find(df, "SELECT * FROM S WHERE A; B PARTITION BY [k]", time="ts").collect()
        print("complex events", len(rows))
        spark.stop()
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "complex events 2" in done.stdout


def test_sql_table_functions(connect):
    """``register`` and ``spark.sql`` on Connect: ``cer_find`` equals ``find`` row for row (in
    one partition), ``cer_aggregate`` equals ``aggregate``, a bad query fails with its caret."""
    from cercore.spark import register
    from cercore.spark.base.hidden import sql_string

    register(connect)
    text = QUERIES["T-CER"]
    events = stream(60, seed=5)
    df = connect.createDataFrame(event_rows(events), DDL)
    df.createOrReplaceTempView("connect_events")
    want = sorted(map(repr, find(df, text, schema=SCHEMA, sequence="seq").collect()))
    got = sorted(map(repr, connect.sql(
        "SELECT * FROM cer_find(TABLE(connect_events) WITH SINGLE PARTITION ORDER BY (ts, seq),"
        f" {sql_string(text)}, {sql_string(SCHEMA)})").collect()))
    assert len(want) >= 3 and got == want
    rows = trend_events(60, seed=6)
    connect.createDataFrame(rows, TREND_DDL).createOrReplaceTempView("connect_trends")
    local = compile_trend_rows(rows)
    got = connect.sql(f"SELECT * FROM cer_aggregate(TABLE(connect_trends) PARTITION BY g "
                      f"ORDER BY (t, seq), {sql_string(TREND_QUERY)}, "
                      f"{sql_string(TREND_SCHEMA)}, sequence => 'seq', exact => 'string')"
                      ).collect()
    assert sorted((r["window_start"], r["g"], int(r["COUNT(*)"])) for r in got) == local
    with pytest.raises(Exception, match=r"(?s)CEQLSyntaxError.*line 1, column 23.*\^"):
        connect.sql("SELECT * FROM cer_find(TABLE(connect_events) WITH SINGLE PARTITION "
                    "ORDER BY (ts, seq), 'SELECT * FROM S WHERE ;', NULL, time => 'ts')"
                    ).collect()


def compile_trend_rows(rows: list[tuple]) -> list[tuple]:
    """(window_start, g, COUNT(*)) of TREND_QUERY by the local engine, sorted."""
    from cercore.trends import compile_trend

    out = compile_trend(TREND_QUERY, TREND_SCHEMA).run(
        [(t, {"v": v, "g": g, "t": tt}) for t, v, g, tt, _ in rows])
    return sorted((r["window_start"], r["g"], r["COUNT(*)"]) for r in out)
