"""Structured Streaming ``find`` on a real local SparkSession: a Parquet file source read one
file per micro-batch, rows out of order within the watermark, a stop and a restart from the
checkpoint, and late rows beyond the watermark. The union of everything the sink received must
equal the batch ``find`` over the same (non-late) events: nothing lost, nothing twice. The late
rows are counted in the query's state: the total read after the restart (from the query or its
checkpoint) is the late rows of both runs. A streaming ``find`` needs ``watermark=``.

Complex events are compared by the ``seq`` of their events (streaming positions count per key,
batch positions globally).
"""

from __future__ import annotations

import os
import random
from collections import Counter

import pytest
from spark_helpers import write_file

import cercore
from cercore.spark import explain, find, late_events

pytestmark = pytest.mark.spark

SCHEMA_TEXT = "CREATE STREAM S { EVENT A { id:int, v:int, ts:int }, EVENT B { id:int, v:int, " \
    "ts:int }, EVENT C { id:int, v:int, ts:int } }"

DDL = "event_type string, id long, v long, ts long, seq long"
QUERIES = {
    "keyed": "SELECT * FROM S WHERE A; B+; C FILTER B[v >= 0] PARTITION BY [id] WITHIN 10 [ts]",
    "tcer": "SELECT * FROM S WHERE A; B; C WITHIN 6 [ts]",
    "single": "SELECT * FROM S WHERE A; B; C WITHIN 6 [ts] CONSUME BY ANY",
}
# a stream slices only when asked; WS = 10: every event in two or three slices
OPTIONS = {"tcer": {"plan": "tcer", "slice_advance": 4}}


def make_events(n: int, seed: int) -> list[tuple]:
    rng = random.Random(seed)
    ts, out = 100, []
    for i in range(n):
        ts += rng.choice([0, 1, 1, 2])
        out.append((rng.choice("AABBC"), rng.randrange(2), rng.randrange(-1, 3), ts, i))
    return out



def start_available(spark, base: str, query: str, **options):
    """Start the query over every file of base/in not yet processed (one per micro-batch), to
    the Parquet sink base/out with the checkpoint base/checkpoint; it stops when done."""
    source = (spark.readStream.schema(DDL).option("maxFilesPerTrigger", 1)
              .parquet(os.path.join(base, "in")))
    out = find(source, query, time="ts", sequence="seq", time_unit="s", watermark="6 seconds",
               **options)
    return (out.writeStream.format("parquet").option("path", os.path.join(base, "out"))
            .option("checkpointLocation", os.path.join(base, "checkpoint"))
            .trigger(availableNow=True).start())


def run_available(spark, base: str, query: str, **options) -> int:
    """``start_available`` to the end; the late rows."""
    q = start_available(spark, base, query, **options)
    q.awaitTermination()
    return late_events(q)


def by_events(rows, keyed: bool = True) -> Counter:
    """Complex events by their events' seq (and the key: streaming T-CER names the slice in
    ``partition`` where batch has none)."""
    return Counter((r["partition"] if keyed else None, tuple(e["seq"] for e in r["events"]))
                   for r in rows)


@pytest.mark.parametrize("plan", ["keyed", "tcer", "single"])
def test_stream_restart_equals_batch(spark, tmp_path, plan):
    """(The T-CER stream keeps one state per slice, cleared once the watermark passes the
    slice: slices of WA 4, WS 10, so most events lie in two or three slices.)"""
    query, options = QUERIES[plan], OPTIONS.get(plan, {})
    assert explain(SCHEMA_TEXT, query, time="ts", streaming=True).startswith(
        "spark plan: " + {"keyed": "keyed", "tcer": "single", "single": "single"}[plan])
    events = make_events(70, seed=7)
    base = str(tmp_path)
    os.makedirs(os.path.join(base, "in"))
    # arrival: chunks of consecutive events, each shuffled, and the three latest events of
    # each chunk held back to the next micro-batch (behind the newest time Spark has seen, but
    # within the 6 s watermark delay)
    chunks = [events[0:20], events[20:35], events[35:55], events[55:70]]
    for i in range(3):
        chunks[i + 1] = chunks[i][-3:] + chunks[i + 1]
        chunks[i] = chunks[i][:-3]
    for rows in chunks:
        random.Random(len(rows)).shuffle(rows)
    write_file(spark, os.path.join(base, "in"), "b0", chunks[0], DDL)
    # one row far behind the watermark before the restart (late: counted, not evaluated)
    late_before = [("B", 1, 0, 50, 999)]
    write_file(spark, os.path.join(base, "in"), "b1", chunks[1] + late_before, DDL)
    late_1 = run_available(spark, base, query, **options)
    first = spark.read.parquet(os.path.join(base, "out")).collect()
    assert late_events(os.path.join(base, "checkpoint")) == late_1
    # after the restart: more rows, two far too late (their time is long behind the
    # watermark) and one far in the future that pushes the watermark past everything else
    too_late = [("A", 0, 2, 101, 1000), ("C", 0, 2, 102, 1001)]
    flush = [("C", 9, 0, events[-1][3] + 100, 1002)]
    write_file(spark, os.path.join(base, "in"), "b2", chunks[2] + too_late, DDL)
    write_file(spark, os.path.join(base, "in"), "b3", chunks[3] + flush, DDL)
    late_2 = run_available(spark, base, query, **options)
    rows = spark.read.parquet(os.path.join(base, "out")).collect()

    batch = find(spark.createDataFrame(events + flush, DDL), query, time="ts",
                 sequence="seq").collect()
    want = by_events(batch, plan == "keyed")
    got = by_events(rows, plan == "keyed")
    if plan == "tcer":
        assert {r["partition"].split()[0] for r in rows} == {"slice"}
        assert len({r["partition"] for r in rows}) >= 5  # many slices reported
    assert sum(want.values()) >= 10  # the comparison is not vacuous
    assert len(first) > 0 and len(rows) > len(first)  # output before and after the restart
    assert got == want
    assert max(got.values()) == 1
    assert late_1 == 1 and late_2 == 1 + 2  # the count survived the restart
    assert late_events(os.path.join(base, "checkpoint"), spark) == 3


def test_streaming_find_needs_a_watermark(spark, tmp_path):
    source = spark.readStream.schema(DDL).parquet(str(tmp_path))
    with pytest.raises(cercore.CercoreError, match='watermark="10 seconds"'):
        find(source, QUERIES["keyed"], time="ts", sequence="seq", time_unit="s")
    batch = spark.createDataFrame(make_events(10, seed=1), DDL)
    find(batch, QUERIES["keyed"], time="ts", sequence="seq")  # batch: no watermark needed
