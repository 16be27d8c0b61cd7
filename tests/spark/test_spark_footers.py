"""``find(..., ordered=True)`` over plain Parquet files: the read layout from the footers
(``cercore.spark.ceql.footers``), no Spark job before the user's own, each boundary evaluated
by the worker of the run after it (on the driver when Spark reads the files); checked against
Spark's own reading (rows per read partition), the local engine, and the shuffled plan's rows
(partition text included); files changed after ``find`` are an error.
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cercore.bench.datasets import schema, stocks
from cercore.errors import CercoreError
from cercore.spark.ceql import footers

KEYED = ("SELECT * FROM S WHERE SELL AS s ; BUY AS b FILTER b.price > s.price "
         "PARTITION BY [name] WITHIN 1000 [stock_time]")
TCER = ("SELECT * FROM S WHERE SELL AS s ; BUY AS b FILTER s[name = 'QQQ'] AND "
        "b[name = 'INTC'] WITHIN 2000 [stock_time]")
FILES = 3
ROWS = 6000


def test_each_row_group_is_read_by_one_range():
    """The midpoint rule puts every row group in exactly one of contiguous byte ranges."""
    import io

    sink = io.BytesIO()
    pq.write_table(stocks(3000), sink, row_group_size=170)
    meta = pq.ParquetFile(pa.BufferReader(sink.getvalue())).metadata
    size = len(sink.getvalue())
    for step in (1, 997, 4096, size // 3, size):
        seen = [g for lo in range(0, size, step)
                for g in footers._row_groups_in(meta, lo, min(lo + step, size))]
        assert seen == list(range(meta.num_row_groups)), step


@pytest.fixture(scope="module")
def trades(tmp_path_factory):
    """ROWS trades (with ``seq``) in event order over FILES files of small row groups
    (uncompressed, no dictionary: a file rewritten with other times keeps its size)."""
    table = stocks(ROWS)
    table = table.append_column("seq", pa.array(range(table.num_rows), pa.int64()))
    folder = tmp_path_factory.mktemp("footers")
    cuts = [0, 1500, 4100, ROWS]
    for i, (lo, hi) in enumerate(zip(cuts, cuts[1:])):
        pq.write_table(table.slice(lo, hi - lo), folder / f"part-{i}.parquet",
                       row_group_size=256, compression="none", use_dictionary=False)
    return table, folder


@pytest.fixture(params=[(1 << 30, 1 << 30), (40_000, 1 << 20), (40_000, 0)],
                ids=["file-per-partition", "files-split", "split-and-packed"])
def split_reads(spark, request):
    """Spark reading each file whole, each file in several byte ranges, and ranges of
    several files packed into one partition."""
    max_bytes, open_cost = request.param
    keys = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")
    before = [spark.conf.get(k) for k in keys]
    for k, v in zip(keys, (max_bytes, open_cost)):
        spark.conf.set(k, str(v))
    yield spark
    for k, v in zip(keys, before):
        spark.conf.set(k, v)


def jobs_run_by(spark, action):
    """The result of ``action()`` and the Spark jobs it ran."""
    sc = spark.sparkContext
    sc.setJobGroup("cercore-footers-test", "find")
    try:
        out = action()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return out, list(sc.statusTracker().getJobIdsForGroup("cercore-footers-test"))


def executed(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def rows_of(df) -> Counter:
    return Counter((r["partition"], r["start"], r["end"], tuple(r["positions"]))
                   for r in df.collect())


@pytest.mark.spark
def test_the_footers_say_what_spark_reads(split_reads, trades):
    """Rows per read partition from the footers = the rows Spark's tasks read."""
    from pyspark.sql import functions as F

    spark = split_reads
    df = spark.read.parquet(str(trades[1]))
    layout = footers.parquet_layout(df)
    assert layout is not None
    counted = {r["p"]: r["n"] for r in df.groupBy(F.spark_partition_id().alias("p"))
               .agg(F.count(F.lit(1)).alias("n")).collect()}
    said = {p: layout.rows(p) for p in layout.parts if layout.rows(p)}
    assert said == counted
    assert sum(said.values()) == ROWS


@pytest.mark.spark
@pytest.mark.parametrize("query", [KEYED, TCER], ids=["keyed", "tcer"])
def test_ordered_parquet_runs_in_place_without_a_job_first(split_reads, trades, query):
    """ordered=True, and the default, over plain Parquet in order: no Spark job inside find
    (layout from the footers -- the default reads every row's time there to prove the order
    --), one stage whose workers read their runs and the boundary before each, and the same
    rows as the sorting plan, partition text included."""
    spark = split_reads
    df = spark.read.parquet(str(trades[1]))
    want = rows_of(find(df, query, ordered=False))  # (and the session's one executor probe)
    assert len(want) > 30
    for flag in (True, None):
        out, jobs = jobs_run_by(spark, lambda flag=flag: find(df, query, ordered=flag))
        assert jobs == [], flag
        plan = executed(out)
        assert "FileScan" not in plan  # the workers read the row groups
        assert "Union" not in plan and "LocalTableScan" not in plan  # no boundary stage
        assert rows_of(out) == want, flag


@pytest.mark.spark
@pytest.mark.parametrize("query", [KEYED, TCER], ids=["keyed", "tcer"])
@pytest.mark.parametrize("runs", [1, 3, 7])
def test_each_worker_finds_what_crosses_the_boundary_before_its_run(spark, trades, query,
                                                                    runs):
    """The rows cut into 1, 3 or 7 runs (one per core): the complex events crossing the
    boundaries between runs are found by the workers, none lost or repeated."""
    df = spark.read.parquet(str(trades[1]))
    want = rows_of(find(df, query, ordered=False))
    spark.conf.set("spark.default.parallelism", str(runs))
    try:
        out = find(df, query, ordered=True)
        assert "FileScan" not in executed(out)
        assert rows_of(out) == want
    finally:
        spark.conf.unset("spark.default.parallelism")


@pytest.mark.spark
def test_files_the_workers_cannot_read_as_spark_does_take_sparks_reader(spark, trades,
                                                                        tmp_path):
    """A column stored as INT96 (Spark reads it with its own calendar rules): the in-place
    plan reads through Spark's scan, with the same rows."""
    folder = trades[1]
    df = spark.read.parquet(str(int96_copy(folder, tmp_path)))
    out = find(df, KEYED, ordered=True)
    assert "FileScan" in executed(out)
    assert rows_of(out) == rows_of(find(spark.read.parquet(str(folder)), KEYED))


@pytest.mark.spark
def test_parquet_out_of_order_is_sorted_by_default(spark, trades, tmp_path):
    """The default over Parquet files not in event order (one row group's rows swapped): the
    footers' proof fails, and the sorting plan gives the sorted stream's complex events."""
    table, folder = trades
    for f in folder.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    first = pq.read_table(tmp_path / "part-0.parquet")
    swapped = pa.concat_tables([first.slice(0, 300), first.slice(301, 1), first.slice(300, 1),
                                first.slice(302)])
    pq.write_table(swapped, tmp_path / "part-0.parquet", row_group_size=256)
    df = spark.read.parquet(str(tmp_path))
    layout = footers.parquet_layout(df)
    assert layout is not None
    out, jobs = jobs_run_by(spark, lambda: find(df, KEYED))
    assert jobs  # (the statistics pass, then the sorting plan)
    assert rows_of(out) == rows_of(find(spark.read.parquet(str(folder)), KEYED))


def int96_copy(folder, tmp_path):
    """The files of ``folder`` again, with a ``stamp`` column stored as INT96 (which Spark
    reads with its own calendar rules: the workers leave such files to Spark's reader)."""
    for f in sorted(folder.iterdir()):
        t = pq.read_table(f)
        stamp = pa.compute.cast(t.column("stock_time"), pa.timestamp("ms"))
        pq.write_table(t.append_column("stamp", stamp), tmp_path / f.name, row_group_size=256,
                       use_deprecated_int96_timestamps=True)
    return tmp_path


@pytest.mark.spark
def test_many_boundary_rows_take_a_spark_stage(spark, trades, tmp_path, monkeypatch):
    """Files Spark reads (INT96): the boundary stage runs on the driver from the footers,
    and beyond DRIVER_ROWS as a Spark stage, with the same rows."""
    df = spark.read.parquet(str(int96_copy(trades[1], tmp_path)))
    want = rows_of(find(df, KEYED, ordered=False))
    spark.conf.set("spark.sql.files.openCostInBytes", str(1 << 30))
    try:
        out = find(df, KEYED, ordered=True)
        assert "FileScan" in executed(out) and "Exchange" not in executed(out)
        assert rows_of(out) == want
        monkeypatch.setattr(footers, "DRIVER_ROWS", 0)
        out = find(df, KEYED, ordered=True)
        assert "Exchange" in executed(out)
        assert rows_of(out) == want
    finally:
        spark.conf.unset("spark.sql.files.openCostInBytes")


@pytest.mark.spark
def test_input_that_is_not_plain_parquet_takes_the_pass(spark, trades):
    """A filter (or any plan but a scan) leaves the footers out: one job finds the layout,
    and the rows are still the sorting plan's."""
    from pyspark.sql import functions as F

    df = spark.read.parquet(str(trades[1])).filter(F.col("volume") > 100)
    assert footers.parquet_layout(df) is None
    out, jobs = jobs_run_by(spark, lambda: find(df, KEYED, ordered=True))
    assert jobs
    assert rows_of(out) == rows_of(find(df, KEYED, ordered=False))


@pytest.mark.spark
def test_files_changed_after_find_are_an_error(spark, trades, tmp_path):
    """A file rewritten between find and the job (same size, other times): the task that
    reads it stops the job, never a wrong answer, and the error names the change (the
    footers' check, or the order check when the new times go back at the file's start)."""
    from cercore.spark import cercore_errors

    table, folder = trades
    for f in folder.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    out = find(spark.read.parquet(str(tmp_path)), KEYED, ordered=True)
    first = pq.read_table(tmp_path / "part-0.parquet")
    shifted = first.set_column(first.schema.get_field_index("stock_time"), "stock_time",
                               pa.compute.add(first.column("stock_time"), 1))
    pq.write_table(shifted, tmp_path / "part-0.parquet", row_group_size=256,
                   compression="none", use_dictionary=False)
    size = (folder / "part-0.parquet").stat().st_size
    assert (tmp_path / "part-0.parquet").stat().st_size == size
    with pytest.raises(CercoreError, match="changed since"), cercore_errors():
        out.collect()


def find(df, query, **options):
    from cercore.spark import find as spark_find

    return spark_find(df, query, schema=schema("stocks"), sequence="seq", **options)


@pytest.mark.spark
def test_the_workers_write_the_key_text_as_spark_does(spark):
    """In place, the workers write the partition text of complex events from their end rows
    (``EngineJob.key``), not Spark for every row: the same text as Spark's SQL, for an int and
    a string key with JSON escapes, and for an event type without the key (no partition)."""
    import cercore

    decl = cercore.Schema.parse("CREATE STREAM S { EVENT A { ts:int, k:int, s:string }, "
                                "EVENT B { ts:int, k:int, s:string }, EVENT C { ts:int } }",
                                time_attribute="ts")
    names = ['plain', 'quote"d', "back\\slash", "new\nline", "tab\t", "ctl\x01", "ünï"]
    rows = [(("A", "B", "C")[i % 3], i, i % 4, names[i % len(names)], i) for i in range(400)]
    df = spark.createDataFrame(rows, "event_type string, ts long, k long, s string, seq long")
    query = "SELECT * FROM S WHERE A ; B PARTITION BY [k], [s] WITHIN 40 [ts]"
    from cercore.spark import find as spark_find

    got = [rows_of(spark_find(df, query, schema=decl, sequence="seq", ordered=flag))
           for flag in (True, False)]
    assert len(got[1]) > 20 and got[0] == got[1]
    assert any('\\"' in p and p.startswith("[") for p, *_ in got[0])
