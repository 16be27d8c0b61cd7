"""Structured Streaming ``find`` against the local engine and an empty stateful processor:
generated stock trades (``cercore.bench.datasets``) split into Parquet files of ``--batch`` rows
(a comma-separated list: one run per size), read one file per micro-batch
(``maxFilesPerTrigger=1``, ``trigger(availableNow=True)``), complex events written to a Parquet
sink, on ``--master`` (local[2]) with ``--partitions`` state partitions.

    python bench/bench_spark_streaming.py [--events N] [--batch ROWS[,ROWS...]]
                                          [--master local[2]] [--partitions P]
                                          [--plans keyed,tcer,single]

Per micro-batch size, first the floor: ``empty processor`` -- the keyed query's operator input
(the same hidden columns, watermark and null masks, grouped by the same key) through a
``transformWithStateInPandas`` processor that reads its rows and does nothing
(``cercore.bench.empty_processor``); no stateful plan can be faster. Then per plan:

* ``local engine`` — ``cercore.compile(q).engine().process_arrays(table)`` over the same events
  in memory (best of 3, the same run, the same machine);
* ``Spark streaming`` — wall time from ``start()`` to the end of the last micro-batch (the first
  micro-batch includes starting the Python workers), and the steady rate: rows over the summed
  duration of the micro-batches that read a file, past the first. One warm-up run of each comes
  first (JVM, Python workers, imports), not reported.

The last file also holds one event far in the future, so the watermark releases every other
event; the streamed complex events are checked equal to the local engine's (by the ``seq`` of
their events: streaming positions count per key).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import cercore  # noqa: E402
from cercore.bench.datasets import schema, stocks  # noqa: E402
from cercore.bench.spark import session as spark_session  # noqa: E402

QUERIES = {
    "keyed": "SELECT * FROM S WHERE BUY AS b; SELL AS s FILTER b[volume >= 500] AND "
             "s[volume >= 500] PARTITION BY [name] WITHIN 1000 [stock_time]",
    "tcer": "SELECT * FROM S WHERE (SELL as T1; BUY as T2; BUY as T3) FILTER T1[name = "
            "'INTC'] AND T2[name = 'RIMM'] AND T3[name = 'QQQ'] WITHIN 1000 [stock_time]",
}
QUERIES["single"] = QUERIES["tcer"]  # the same query in one state (the streaming default)
OPTIONS = {"tcer": {"plan": "tcer"}}
WATERMARK = "10 seconds"


def session(master: str, partitions: int):
    return spark_session(master, "cercore-bench-spark-streaming", **{
        "spark.sql.shuffle.partitions": str(partitions),
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"})


def write_batches(table: pa.Table, folder: str, rows: int) -> int:
    """``table`` as Parquet files of ``rows`` rows with increasing modification times (the
    file source reads them in that order), the last with one far-future event appended (a
    keyed BUY that matches nothing: an event without a key would not move the watermark)."""
    os.makedirs(folder)
    last = table.slice(table.num_rows - 1).to_pylist()[0]
    flush = dict(last, event_type="BUY", volume=0, stock_time=last["stock_time"] + 10**9,
                 seq=table.num_rows)
    table = pa.concat_tables([table, pa.Table.from_pylist([flush], schema=table.schema)])
    stamp = time.time() - 10_000
    files = 0
    for lo in range(0, table.num_rows, rows):
        path = os.path.join(folder, f"part-{files:05d}.parquet")
        pq.write_table(table.slice(lo, rows), path)
        os.utime(path, (stamp + files, stamp + files))
        files += 1
    return files


def local_run(query: str, decl, table: pa.Table) -> tuple[float, Counter]:
    best = float("inf")
    events = table.drop_columns(["seq"])  # not an attribute: the engine refuses it
    for _ in range(3):
        engine = cercore.compile(query, decl).engine()
        t0 = time.perf_counter()
        m = engine.process_arrays(events)
        best = min(best, time.perf_counter() - t0)
    seq = table.column("seq").to_numpy()
    want = Counter(tuple(seq[m.positions[m.offsets[i]:m.offsets[i + 1]]].tolist())
                   for i in range(len(m)))
    return best, want


def empty_stream(source, query: str, decl):
    """The keyed ``query``'s operator input through ``EmptyProcessor``."""
    from cercore.bench.empty_processor import EmptyProcessor
    from cercore.spark.base.frames import prepare
    from cercore.spark.base.job import KEY, TIME, WM
    from cercore.spark.ceql.front import output_schema
    from cercore.spark.streaming.run import operator_input, with_event_time

    prep = prepare(source, query, decl, sequence="seq", streaming=True)
    df = with_event_time(prep.df.filter(prep.df[KEY].isNotNull()), TIME,
                         prep.schema.time_unit, WATERMARK).drop(WM)
    df, _ = operator_input(df)
    return df.groupBy(KEY).transformWithStateInPandas(
        EmptyProcessor(), output_schema(source.schema), "Append", "EventTime")


def stream_run(spark, work: Path, query: str | None, decl, **options
               ) -> tuple[float, float, int, Counter]:
    """(wall s, steady events/s, micro-batches, complex events by the seqs of their events);
    ``query`` None: the empty processor over the keyed query's input."""
    from cercore.spark import find

    out_path, checkpoint = str(work / "out"), str(work / "checkpoint")
    shutil.rmtree(out_path, ignore_errors=True)
    shutil.rmtree(checkpoint, ignore_errors=True)
    source = (spark.readStream.schema(spark.read.parquet(str(work / "in")).schema)
              .option("maxFilesPerTrigger", 1).parquet(str(work / "in")))
    if query is None:
        out = empty_stream(source, QUERIES["keyed"], decl)
    else:
        out = find(source, query, schema=decl, sequence="seq", watermark=WATERMARK, **options)
    t0 = time.perf_counter()
    q = (out.writeStream.format("parquet").option("path", out_path)
         .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    q.awaitTermination()
    wall = time.perf_counter() - t0
    progress = [p for p in q.recentProgress if p["numInputRows"]]
    progress = progress[1:] or progress  # steady state: past the first micro-batch
    busy = sum(p["durationMs"]["triggerExecution"] for p in progress) / 1000
    rows = sum(p["numInputRows"] for p in progress)
    if query is None:
        return wall, rows / busy, len(q.recentProgress), Counter()
    got = pq.read_table(out_path, columns=["events"]).column("events").to_pylist()
    return wall, rows / busy, len(q.recentProgress), Counter(
        tuple(e["seq"] for e in events) for events in got)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--batch", default="10000,100000,1000000",
                    help="micro-batch sizes in rows, comma-separated (one run each)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--plans", default=",".join(QUERIES))
    args = ap.parse_args(argv)

    decl = schema("stocks")
    table = stocks(args.events)
    table = table.append_column("seq", pa.array(range(table.num_rows), pa.int64()))
    spark = session(args.master, args.partitions)
    print(f"# {args.events:,} events, Parquet files of --batch rows (one per micro-batch), "
          f"{args.master}, {args.partitions} state partitions, watermark {WATERMARK}, "
          f"{os.cpu_count()} CPUs, {platform.python_version()}, pyspark {spark.version}, "
          f"{time.strftime('%Y-%m-%d')}")
    print("| micro-batch rows | plan | run | complex events | wall s | events/s | "
          "steady events/s | steady ÷ empty processor's |")
    print("|--:|---|---|--:|--:|--:|--:|--:|")
    local = {plan: local_run(QUERIES[plan], decl, table) for plan in args.plans.split(",")}
    work = Path(tempfile.mkdtemp(prefix="cercore-bench-spark-streaming-"))
    try:
        write_batches(table.slice(0, 20_000), str(work / "in"), 10_000)  # warm-up, unreported
        stream_run(spark, work, None, decl)
        for plan in args.plans.split(","):
            stream_run(spark, work, QUERIES[plan], decl, **OPTIONS.get(plan, {}))
        for rows in (int(b) for b in args.batch.split(",")):
            shutil.rmtree(work, ignore_errors=True)
            files = write_batches(table, str(work / "in"), rows)
            wall, floor, batches, _ = stream_run(spark, work, None, decl)
            print(f"| {rows:,} | floor | empty processor, {batches} micro-batches | | "
                  f"{wall:.2f} | {args.events / wall / 1e3:,.1f} k | {floor / 1e3:,.1f} k | 1 |",
                  flush=True)
            for plan in args.plans.split(","):
                lwall, want = local[plan]
                wall, steady, batches, got = stream_run(spark, work, QUERIES[plan], decl,
                                                        **OPTIONS.get(plan, {}))
                if got != want:
                    raise SystemExit(f"{plan}: streamed complex events differ from the local "
                                     f"engine's ({sum(got.values())} vs {sum(want.values())})")
                print(f"| {rows:,} | {plan} | Spark streaming, {batches} micro-batches "
                      f"({files} files) | {sum(got.values()):,} | {wall:.2f} | "
                      f"{args.events / wall / 1e3:,.1f} k | {steady / 1e3:,.1f} k | "
                      f"{steady / floor:.2f}× |", flush=True)
        for plan, (lwall, want) in local.items():
            print(f"- local engine, {plan}: {sum(want.values()):,} complex events, "
                  f"{args.events / lwall / 1e3:,.0f} k events/s (process_arrays, in memory)")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
