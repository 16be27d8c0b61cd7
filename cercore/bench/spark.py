"""Spark find against the local engine, each plan, local[1] and local[N], Parquet in and out.

``cercore-bench spark [--events N] [--cores N] [--repeat R] [--plans keyed,tcer,single]``

Every run is end to end on the same generated stock trades (``cercore.bench.datasets.stocks``,
with a ``seq`` column), written once as Parquet in row groups of ``ROW_GROUP`` rows (Spark
reads one file's row groups in parallel; a single row group would be read by one task):

* **local engine** — read the Parquet file, ``engine.process_arrays``, write the complex
  events (with their events nested, as Spark writes them) to Parquet, in this process;
* **Spark local[k]** — ``cercore.spark.find(spark.read.parquet(...), query, sequence="seq")``
  written with ``.write.parquet``, default Spark settings (``spark.sql.shuffle.partitions``
  200, AQE on), one warm-up run per plan first.

Reported per plan: wall seconds (best of ``--repeat``), CPU seconds of this process and every
descendant (the JVM, the Python workers; from /proc), events/s, Spark/local throughput and
local[N]/local[1] speed-up. The results of every run (complex events; rows for the trend
plans, ``cercore.spark.aggregate`` against ``CompiledTrendQuery.run``) are checked equal to the
local engine's. Spark's own floor on each master, measured the same way: the Parquet copied by
Spark alone; copied through a Python ``mapInArrow`` that returns its input (no engine) -- no plan
that runs Python workers can be faster; and copied through the keyed plan's own exchange
(``repartition`` by a hash, ``sortWithinPartitions``) and that identity ``mapInArrow``, which is
what Spark charges any per-key plan before an engine runs; and that identity copy after the
one statistics job every CEQL plan runs first (``read_order.summarise``, for the global
positions); and, as a bound rather than a floor, the keyed query's engine run over each
partition as Spark reads it (no statistics job, no exchange, so not exact). Each plan's row
says its throughput ÷ the identity floor's, and its local[N]/local[1] speed-up ÷ the floor's;
each floor's line, its own ratio. Needs pyspark and Java.

``cercore-bench spark --sql [--events N] [--cores N] [--repeat R]`` instead times the keyed
query three ways on local[N], Parquet in and out: ``find``, the typed ``cer_find``
(``register(spark, events=...)``, an Arrow UDTF) and the untyped one (``register(spark)``,
rows one at a time), both as ``TABLE(events) PARTITION BY name ORDER BY (stock_time, seq)``
(positions counted per name), and the typed one again with ``position =>`` a
``row_number()`` over the whole table (global positions: ``find``'s rows, ``match_id``
included); all must give the same complex events (partition and the ``seq`` of their
events). Reported: wall seconds (best of ``--repeat``, after a warm-up) and each one's
throughput ÷ ``find``'s.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import cercore
from cercore.bench.datasets import schema, stocks

QUERIES = {
    "keyed": "SELECT * FROM S WHERE BUY AS b; SELL AS s FILTER b[volume >= 500] AND "
             "s[volume >= 500] PARTITION BY [name] WITHIN 1000 [stock_time]",
    "tcer": "SELECT * FROM S WHERE (SELL as T1; BUY as T2; BUY as T3) FILTER T1[name = "
            "'INTC'] AND T2[name = 'RIMM'] AND T3[name = 'QQQ'] WITHIN 1000 [stock_time]",
    "single": "SELECT * FROM S WHERE SELL as T1; BUY as T2 FILTER T1[name = 'INTC'] AND "
              "T2[name = 'RIMM'] WITHIN 1000 [stock_time] CONSUME BY ANY",
}

ROW_GROUP = 131_072
PLAN_NAMES = {"keyed": "keyed", "tcer": "T-CER", "single": "single"}  # as explain says
TRENDS = {  # trend aggregation (cercore.spark.aggregate): by GROUP BY value, by runs of windows
    "trends": "RETURN name, COUNT(*), SUM(B.volume) PATTERN SEQ(BUY B+, SELL S) SEMANTICS "
              "skip-till-next-match WHERE [name] GROUP-BY name WITHIN 10000 SLIDE 5000",
    "trends-ungrouped": "RETURN COUNT(*), MAX(B.price) PATTERN SEQ(BUY B+, SELL S) SEMANTICS "
                        "contiguous WITHIN 10000 SLIDE 5000",
}
# the keyed and T-CER queries again, told how the input is ordered (find's ordered=): True (in
# place after one pass without Python), False (always the shuffled plan); the plain names run
# the default (in place when the first pass finds the input in order)
ORDERED = {"keyed+ordered": ("keyed", True), "tcer+ordered": ("tcer", True),
           "keyed+sorted": ("keyed", False), "tcer+sorted": ("tcer", False)}
PLANS = [*QUERIES, *ORDERED, *TRENDS]


def query_of(plan: str) -> str:
    """The CEQL query a plan name runs (``QUERIES``, ``ORDERED``), or the name itself."""
    return QUERIES.get(ORDERED.get(plan, (plan,))[0], plan)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--events", type=int, default=1_000_000, help="stock trades (default 1M)")
    p.add_argument("--cores", type=int, default=os.cpu_count() or 2,
                   help="N of local[N] (default: this machine's CPUs)")
    p.add_argument("--repeat", type=int, default=2, help="runs per configuration (best kept)")
    p.add_argument("--plans", default=",".join(PLANS), help="of " + ", ".join(PLANS))
    p.add_argument("--json", default=None, help="also write the rows to this JSON file")
    p.add_argument("--sql", action="store_true",
                   help="time find, the typed and the untyped cer_find on the keyed query")


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds (user + system, with reaped children) of ``root`` and its descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stat: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        stat[int(entry)] = fields
        children.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid in stat:
            total += sum(int(x) for x in stat[pid][11:15])  # utime stime cutime cstime
        todo += children.get(pid, [])
    return total / tick


def session(master: str, app: str = "cercore-bench-spark", **conf: str):
    """A local SparkSession for benchmarks (UI off, loopback, UTC), with ``conf`` on top."""
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = (SparkSession.builder.master(master).appName(app)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.memory", "4g")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.sql.session.timeZone", "UTC"))
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def complex_event_keys(table: pa.Table) -> list[tuple]:
    return sorted(zip(table.column("start").to_pylist(), table.column("end").to_pylist(),
                      map(tuple, table.column("positions").to_pylist())))


def local_run(query: str, decl, in_file: str, out_file: str) -> tuple[float, float]:
    """(wall, CPU) seconds of the local engine: Parquet in, complex events with their events
    nested written to Parquet."""
    t0, c0 = time.perf_counter(), time.process_time()
    table = pq.read_table(in_file)
    m = cercore.compile(query, decl).engine().process_arrays(table.drop_columns(["seq"]), workers=1)
    offsets = pa.array(m.offsets, pa.int32())
    events = pa.ListArray.from_arrays(
        offsets, pa.StructArray.from_arrays(
            [c.combine_chunks() for c in table.take(pa.array(m.positions, pa.int64())).columns],
            names=table.column_names))
    out = m.to_arrow().append_column("events", events)
    pq.write_table(out, out_file)
    return time.perf_counter() - t0, time.process_time() - c0


def local_trend_run(query: str, decl, in_file: str, out_file: str) -> tuple[float, float]:
    """(wall, CPU) seconds of the local trend engine: Parquet in, result rows to Parquet."""
    from cercore.trends import compile_trend

    t0, c0 = time.perf_counter(), time.process_time()
    rows = compile_trend(query, decl).run(pq.read_table(in_file).drop_columns(["seq"]))
    pq.write_table(pa.Table.from_pylist(rows), out_file)
    return time.perf_counter() - t0, time.process_time() - c0


def result_keys(plan: str, table: pa.Table) -> list:
    """What two runs of ``plan`` must agree on: complex events' positions, or trend rows."""
    if plan in TRENDS:
        return sorted(tuple(str(v) for v in r.values()) for r in table.to_pylist())
    return complex_event_keys(table)


def spark_run(spark, in_path: str, out_path: str, plan: str, decl) -> tuple[float, float]:
    """(wall, CPU of the whole process tree) seconds of ``find`` (``aggregate`` for a trend
    plan) written to Parquet; ``plan`` names one of ``QUERIES`` or is a CEQL query's text."""
    from cercore.spark import aggregate, find

    shutil.rmtree(out_path, ignore_errors=True)
    cpu0, t0 = tree_cpu_seconds(os.getpid()), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = spark.read.parquet(in_path)
        if plan in TRENDS:
            out = aggregate(df, TRENDS[plan], schema=decl, sequence="seq", exact="string")
        else:
            out = find(df, query_of(plan), schema=decl, sequence="seq",
                       ordered=ORDERED.get(plan, (None, None))[1])
        out.write.parquet(out_path)
    return time.perf_counter() - t0, tree_cpu_seconds(os.getpid()) - cpu0


FLOORS = ("Spark alone", "Spark through a Python identity mapInArrow",
          "Spark through a hash exchange, a sort and that identity mapInArrow",
          "Spark through that identity mapInArrow after the statistics job every CEQL plan "
          "runs first (read_order.summarise over the ordering columns)",
          "the keyed query's engine run in place over each partition Spark reads -- no "
          "statistics job, no exchange; not exact (no global positions, no complex event "
          "across partitions): what a keyed plan without both could reach")
IDENTITY = 1  # the floor the plans are compared with


def floor_run(spark, in_path: str, out_path: str, floor: int) -> tuple[float, float]:
    """(wall, CPU of the process tree) seconds of copying the Parquet input with Spark, as
    ``FLOORS[floor]`` says: without Python, through a Python ``mapInArrow`` that returns its
    batches unchanged, through the keyed plan's exchange and sort first, after the
    statistics job, or through the keyed query's engine in place (a bound, not a plan)."""
    from pyspark.sql import functions as F

    from cercore.spark.base.partitions import partition_cap
    from cercore.spark.base.session import parallelism
    from cercore.spark.ceql.read_order import SUMMARY_DDL, summarise

    shutil.rmtree(out_path, ignore_errors=True)
    if floor == 4:
        df = _engine_in_place(spark, spark.read.parquet(in_path))  # (the plan built untimed)
    cpu0, t0 = tree_cpu_seconds(os.getpid()), time.perf_counter()
    if floor == 4:
        df.write.parquet(out_path)
        return time.perf_counter() - t0, tree_cpu_seconds(os.getpid()) - cpu0
    df = spark.read.parquet(in_path)
    if floor == 2:
        df = (df.repartition(partition_cap(parallelism(spark)), F.xxhash64("name"))
              .sortWithinPartitions(F.xxhash64("name"), "seq"))
    if floor == 3:  # the job cercore.spark.ceql.batch.measure runs before any plan
        stats = df.select(F.monotonically_increasing_id(), F.col("stock_time").cast("long"),
                          F.col("seq").cast("long"), F.lit(None).cast("long"))
        stats.mapInArrow(summarise, SUMMARY_DDL).collect()
    if floor >= 1:
        df = df.mapInArrow(_same_batches, df.schema)
    df.write.parquet(out_path)
    return time.perf_counter() - t0, tree_cpu_seconds(os.getpid()) - cpu0


def _same_batches(batches):
    yield from batches


def _engine_in_place(spark, df):
    """The keyed query's engine over each Spark partition as it is read, numbered by the read
    order (``FLOORS[4]``)."""
    from functools import partial

    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema

    from cercore.spark.base.frames import prepare
    from cercore.spark.base.job import GROUP, POS, run_sorted_groups
    from cercore.spark.ceql.batch import worker_columns
    from cercore.spark.ceql.front import output_schema

    prep = prepare(df, QUERIES["keyed"], schema("stocks"), sequence="seq")
    rows = prep.df.withColumns({POS: F.monotonically_increasing_id(),
                                GROUP: F.spark_partition_id().cast("long")})
    out = output_schema(df.schema)
    body = partial(run_sorted_groups, job=prep.job, slices=None,
                   out_schema=to_arrow_schema(out, timezone="UTC"))
    return rows.select(*worker_columns(prep, rows.columns)).mapInArrow(body, out)


def run(args: argparse.Namespace) -> int:
    if args.sql:
        return sql_run(args)
    plans = args.plans.split(",")
    unknown = [p for p in plans if p not in PLANS]
    if unknown:
        raise cercore.CercoreError(f"unknown plan(s) {unknown}; use {', '.join(PLANS)}")
    decl = schema("stocks")
    from cercore.spark import explain

    for plan in (p for p in plans if p in QUERIES):  # each query runs as the plan it names
        chosen = explain(decl, QUERIES[plan]).split("\n")[0]
        if PLAN_NAMES[plan] not in chosen:
            raise cercore.CercoreError(f"the {plan} query runs as {chosen!r}")
    work = Path(tempfile.mkdtemp(prefix="cercore-bench-spark-"))
    try:
        return _run(args, plans, decl, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(args, plans: list[str], decl, work: Path) -> int:
    table = stocks(args.events)
    in_path = work / "events"
    in_path.mkdir()
    in_file = str(in_path / "part-0.parquet")
    pq.write_table(table.append_column("seq", pa.array(range(table.num_rows), pa.int64())),
                   in_file, row_group_size=ROW_GROUP)
    rows: dict[str, dict] = {}
    for plan in plans:
        local = str(work / "local.parquet")
        best = min(local_trend_run(TRENDS[plan], decl, in_file, local) if plan in TRENDS
                   else local_run(query_of(plan), decl, in_file, local)
                   for _ in range(args.repeat))
        want = result_keys(plan, pq.read_table(local))
        rows[plan] = {"plan": plan, "results": len(want), "local_wall": best[0],
                      "local_cpu": best[1], "want": want}
    masters = [f"local[{k}]" for k in dict.fromkeys([1, args.cores])]
    floors: dict[str, list[tuple[float, float]]] = {}
    for master in masters:
        spark = session(master)
        try:
            floors[master] = [
                min(floor_run(spark, str(in_path), str(work / "spark"), floor)
                    for _ in range(args.repeat + 1))  # the first run warms the JVM up
                for floor in range(len(FLOORS))]
            for plan in plans:
                _spark_plan(spark, master, plan, rows[plan], decl, str(in_path),
                            str(work / "spark"), args.repeat)
        finally:
            spark.stop()
    print(f"# cercore-bench spark: {args.events:,} stock trades, Parquet in and out, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d')}; events/s (wall), CPU s of the process tree")
    cols = ["local engine", *masters]
    last_master = masters[-1]
    floor_wall = floors[last_master][IDENTITY][0]
    floor_speedup = floors[masters[0]][IDENTITY][0] / floor_wall
    print("| plan | results | " + " | ".join(cols) + " | Spark ÷ local | "
          f"{last_master} ÷ local[1] | ÷ floor | speed-up ÷ floor's |")
    print("|---|--:|" + "--:|" * (len(cols) + 4))
    for plan in plans:
        r = rows.pop(plan)
        r.pop("want")
        cells = [f"{args.events / r['local_wall'] / 1e3:,.0f} k ({r['local_cpu']:.1f} s)"]
        cells += [f"{args.events / r[m]['wall'] / 1e3:,.0f} k ({r[m]['cpu']:.1f} s)"
                  for m in masters]
        last = r[last_master]["wall"]
        speedup = r[masters[0]]["wall"] / last
        r["vs_floor"], r["speedup_vs_floor"] = floor_wall / last, speedup / floor_speedup
        print(f"| {plan} | {r['results']:,} | "
              + " | ".join(cells)
              + f" | {r['local_wall'] / last:.2f}× | {speedup:.2f}× | {r['vs_floor']:.2f}× | "
              f"{r['speedup_vs_floor']:.2f}× |")
        rows[plan] = r
    for i, label in enumerate(FLOORS):
        print(f"- floor, Parquet copied by {label}: " + ", ".join(
            f"{m} {args.events / floors[m][i][0] / 1e3:,.0f} k ({floors[m][i][1]:.1f} s)"
            for m in masters) + f"; ÷ identity floor on {last_master}: "
            f"{floor_wall / floors[last_master][i][0]:.2f}×")
    if args.json:
        Path(args.json).write_text(json.dumps(list(rows.values()), indent=1))
    return 0


def _spark_plan(spark, master: str, plan: str, row: dict, decl, in_path: str, out_path: str,
                repeat: int) -> None:
    spark_run(spark, in_path, out_path, plan, decl)  # warm-up: JVM, workers
    runs = []
    for _ in range(repeat):
        runs.append(spark_run(spark, in_path, out_path, plan, decl))
        if result_keys(plan, pq.read_table(out_path)) != row["want"]:
            raise cercore.CercoreError(f"{plan} on {master}: Spark's results differ from the "
                                       "local engine's")
    wall, cpu = min(runs)
    row[master] = {"wall": wall, "cpu": cpu}


SQL_WAYS = ("find", "typed cer_find", "typed cer_find, global positions", "untyped cer_find")


def sql_run(args: argparse.Namespace) -> int:
    """``--sql``: the keyed query through ``find`` and the two ``cer_find`` registrations."""
    work = Path(tempfile.mkdtemp(prefix="cercore-bench-sql-"))
    try:
        table = stocks(args.events)
        table = table.append_column("seq", pa.array(range(table.num_rows), pa.int64()))
        in_path = work / "events"
        in_path.mkdir()
        pq.write_table(table, str(in_path / "part-0.parquet"), row_group_size=ROW_GROUP)
        spark = session(f"local[{args.cores}]", "cercore-bench-sql")
        try:
            return _sql_ways(spark, args, str(in_path), str(work / "out"))
        finally:
            spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _sql_ways(spark, args, in_path: str, out_path: str) -> int:
    from cercore.spark import find, register
    from cercore.spark.base.hidden import sql_string

    decl = schema("stocks")
    query = QUERIES["keyed"]
    events = spark.read.parquet(in_path)
    events.createOrReplaceTempView("bench_events")
    register(spark, find="cer_find_untyped")
    register(spark, events=events, find="cer_find_typed")

    def statement(function: str, positioned: bool) -> str:
        table = ("SELECT *, row_number() OVER (ORDER BY stock_time, seq) - 1 AS pos "
                 "FROM bench_events" if positioned else "bench_events")
        return (f"SELECT * FROM {function}(TABLE({table}) PARTITION BY name "
                f"ORDER BY (stock_time, seq), {sql_string(query)}, "
                f"{sql_string(decl.to_text())}, sequence => 'seq'"
                + (", position => 'pos')" if positioned else ")"))

    def output(way: str):
        if way == "find":
            return find(spark.read.parquet(in_path), query, schema=decl, sequence="seq")
        return spark.sql(statement("cer_find_typed" if way.startswith("typed")
                                   else "cer_find_untyped", "global" in way))

    def timed(way: str) -> float:
        shutil.rmtree(out_path, ignore_errors=True)
        t0 = time.perf_counter()
        output(way).write.parquet(out_path)
        return time.perf_counter() - t0

    def result() -> list:
        t = pq.read_table(out_path, columns=["partition", "events"])
        return sorted(zip(t.column("partition").to_pylist(),
                          (tuple(e["seq"] for e in es) for es in t.column("events").to_pylist())))

    seconds, want = {}, None
    for way in SQL_WAYS:
        timed(way)  # warm-up: JVM, workers
        got = result()
        if want is None:
            want = got
        elif got != want:
            raise cercore.CercoreError(f"{way} gives other complex events than find")
        seconds[way] = min(timed(way) for _ in range(args.repeat))
    print(f"# cercore-bench spark --sql: the keyed query over {args.events:,} stock trades on "
          f"local[{args.cores}], Parquet in and out, {len(want):,} complex events, Python "
          f"{platform.python_version()}, {time.strftime('%Y-%m-%d')}; best of {args.repeat}")
    print("| way | wall s | throughput ÷ find's |")
    print("|---|--:|--:|")
    for way in SQL_WAYS:
        print(f"| {way} | {seconds[way]:.2f} | {seconds['find'] / seconds[way]:.2f}× |")
    if args.json:
        Path(args.json).write_text(json.dumps({"events": args.events, "cores": args.cores,
                                               "results": len(want), "seconds": seconds},
                                              indent=1))
    return 0
