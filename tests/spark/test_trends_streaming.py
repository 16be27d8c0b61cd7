"""Structured Streaming trend aggregation on a real local SparkSession: a Parquet file source
read one file per micro-batch, rows out of order within the watermark, a stop and a restart
from the checkpoint (the engines' state comes back pickled), and late rows. Everything the sink
received equals the local engine's rows for every window the final watermark closed: nothing
lost, nothing twice."""

from __future__ import annotations

import os
import random

import pytest
from spark_helpers import write_file

from cercore.trends import compile_trend

pytestmark = pytest.mark.spark

DDL = "event_type string, v long, g long, h long, t long, seq long"
SCHEMA = ("CREATE STREAM S { EVENT A { v:int, g:int, h:int, t:primary_time }, "
          "EVENT B { v:int, g:int, h:int, t:primary_time } }")
QUERY = ("RETURN g, COUNT(*), SUM(A.v), MAX(B.v), AVG(A.v) PATTERN (SEQ(A+, B))+ "
         "SEMANTICS {semantics} WHERE [h] AND A.v <= NEXT(B).v GROUP-BY g WITHIN 6 SLIDE 2")
DELAY = 5  # seconds of allowed lateness


def make_events(n: int, seed: int) -> list[tuple]:
    rng = random.Random(seed)
    t, out = 100, []
    for i in range(n):
        t += rng.choice([0, 1, 1, 2])
        out.append((rng.choice("AAB"), rng.randrange(4), rng.randrange(2), rng.randrange(2), t,
                    i))
    return out



def run_available(spark, base: str, q) -> None:
    from cercore.spark import aggregate

    source = (spark.readStream.schema(DDL).option("maxFilesPerTrigger", 1)
              .parquet(os.path.join(base, "in")))
    out = aggregate(source, q, exact="string", watermark=f"{DELAY} seconds", sequence="seq")
    stream = (out.writeStream.format("parquet").option("path", os.path.join(base, "out"))
              .option("checkpointLocation", os.path.join(base, "checkpoint"))
              .trigger(availableNow=True).start())
    stream.awaitTermination()


def local_rows(q, events: list[tuple]) -> list[dict]:
    return q.run([(e[0], {"v": e[1], "g": e[2], "h": e[3], "t": e[4]}) for e in events])


@pytest.mark.parametrize("semantics", ["skip-till-any-match", "skip-till-next-match"])
def test_stream_restart_equals_local(spark, tmp_path, semantics):
    q = compile_trend(QUERY.format(semantics=semantics), SCHEMA, time_unit="s")
    events = make_events(90, seed=11)
    base = str(tmp_path)
    os.makedirs(os.path.join(base, "in"))
    chunks = [events[0:25], events[25:45], events[45:70], events[70:90]]
    for i in range(3):  # the latest rows of a chunk arrive with the next one (within DELAY)
        chunks[i + 1] = chunks[i][-3:] + chunks[i + 1]
        chunks[i] = chunks[i][:-3]
    for rows in chunks:
        random.Random(len(rows)).shuffle(rows)
    write_file(spark, os.path.join(base, "in"), "b0", chunks[0], DDL)
    write_file(spark, os.path.join(base, "in"), "b1", chunks[1], DDL)
    run_available(spark, base, q)
    first = spark.read.parquet(os.path.join(base, "out")).collect()
    # after the restart: two rows far behind the watermark (late: dropped), and one far
    # ahead that pushes the watermark past every window of the other events
    too_late = [("A", 3, 0, 0, 101, 1000), ("B", 3, 0, 0, 102, 1001)]
    flush = [("A", 0, 0, 0, events[-1][4] + 100, 1002)]
    write_file(spark, os.path.join(base, "in"), "b2", chunks[2] + too_late, DDL)
    write_file(spark, os.path.join(base, "in"), "b3", chunks[3] + flush, DDL)
    run_available(spark, base, q)
    got = [r.asDict() for r in spark.read.parquet(os.path.join(base, "out")).collect()]

    closed = events[-1][4] + 100 - DELAY  # the final watermark, in seconds
    want = [r for r in local_rows(q, events + flush) if r["window_end"] <= closed]
    for r in got:
        for c in ("COUNT(*)", "SUM(A.v)"):
            r[c] = int(r[c])
    key = lambda r: (r["window_start"], r["g"])  # noqa: E731
    assert len(want) >= 10 and 0 < len(first) < len(got)  # output before and after restart
    assert sorted(got, key=key) == want


def test_streaming_aggregate_needs_a_watermark(spark, tmp_path):
    """As a streaming find: no guessed lateness (a default of 0 s would drop every row that
    arrives a moment out of order)."""
    import cercore
    from cercore.spark import aggregate

    q = compile_trend(QUERY.format(semantics="skip-till-any-match"), SCHEMA, time_unit="s")
    source = spark.readStream.schema(DDL).parquet(str(tmp_path))
    with pytest.raises(cercore.CercoreError, match='aggregate needs watermark=.*"10 seconds"'):
        aggregate(source, q, exact="string", sequence="seq")
