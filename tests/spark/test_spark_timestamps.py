"""The same timestamps give the same complex events and times on Spark as locally: a Spark
``timestamp`` time column (from Python datetimes, naive or with a zone) through ``find`` (with
a declared unit, another unit, or no declaration) and ``cer_find``, against the local engine
over the datetimes themselves; the times come back as timestamps on every entry point."""

from __future__ import annotations

import datetime as dt
import random

import pytest

import cercore

pytestmark = pytest.mark.spark

DECL = ("CREATE STREAM S { EVENT BUY { name:string, price:double, ts:primary_time(ms) }, "
        "EVENT SELL { name:string, price:double, ts:primary_time(ms) } }")
QUERY = ("SELECT * FROM S WHERE SELL AS s ; BUY AS b FILTER b[price > 10] "
         "PARTITION BY [name] WITHIN 3 SECONDS")


@pytest.mark.parametrize("zone", [None, dt.UTC, dt.timezone(dt.timedelta(hours=-5))])
def test_timestamps_on_spark_equal_the_local_engine(spark, zone):
    from cercore.spark import find

    rng = random.Random(7)
    start = dt.datetime(2024, 3, 1, 9, 30, tzinfo=zone)
    t, events = start, []
    for _ in range(60):
        t += dt.timedelta(milliseconds=rng.choice([0, 250, 500, 1500]))
        events.append((rng.choice(["BUY", "SELL"]), {"name": rng.choice("AB"),
                                                     "price": float(rng.randint(5, 15)),
                                                     "ts": t}))
    local = cercore.compile(QUERY, DECL).run(events)
    assert local and isinstance(local[0].start_time, dt.datetime)
    rows = [{"event_type": k, **a} for k, a in events]
    df = spark.createDataFrame(rows, "event_type string, name string, price double, "
                                     "ts timestamp")
    def utc(t: dt.datetime) -> dt.datetime:  # as Spark hands timestamps back (session: UTC)
        return t.astimezone(dt.UTC).replace(tzinfo=None) if t.tzinfo else t

    expected = sorted((c.start, c.end, utc(c.start_time), utc(c.end_time)) for c in local)
    # complex events report timestamps as timestamps, whatever unit the schema counts in
    for decl in (DECL, DECL.replace("(ms)", "(us)")):
        found = find(df, QUERY, schema=decl)
        assert dict(found.dtypes)["start_time"] == "timestamp"
        got = found.collect()
        assert sorted((r["start"], r["end"], r["start_time"], r["end_time"]) for r in got) \
            == expected
    inferred = find(df, QUERY, time="ts").collect()  # no declaration: the same times
    assert sorted((r["start_time"], r["end_time"]) for r in inferred) == \
        sorted((s, e) for _, _, s, e in expected)
    if zone is None:  # the SQL table function reports them alike
        from cercore.spark import register

        register(spark)
        df.createOrReplaceTempView("stamped")
        sql = spark.sql(f"""SELECT * FROM cer_find(TABLE(stamped) WITH SINGLE PARTITION
                            ORDER BY (ts), '{QUERY}', '{DECL}')""").collect()
        assert sorted((r["start_time"], r["end_time"]) for r in sql) == \
            sorted((s, e) for _, _, s, e in expected)


NEW_YORK = "America/New_York"
# wall times around New York's clock changes of 2024: 02:00-03:00 on 10 March never happens,
# 01:00-02:00 on 3 November happens twice
DST_WALLS = [dt.datetime(2024, 3, 10, 1, 59, 59, 999_999), dt.datetime(2024, 3, 10, 2),
             dt.datetime(2024, 3, 10, 2, 30), dt.datetime(2024, 3, 10, 3),
             dt.datetime(2024, 11, 3, 0, 59), dt.datetime(2024, 11, 3, 1, 30),
             dt.datetime(2024, 11, 3, 2), dt.datetime(2024, 7, 1, 12), dt.datetime(1969, 12, 31)]


@pytest.fixture
def new_york(spark):
    spark.conf.set("spark.sql.session.timeZone", NEW_YORK)
    try:
        yield spark
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_a_wall_time_is_the_instant_spark_reads_it_as(new_york):
    """A timestamp_ntz time read by a worker with Arrow is the instant Spark's
    ``CAST(... AS TIMESTAMP)`` gives in the session time zone, skipped and doubled wall times
    included."""
    import pyarrow as pa

    from cercore.spark.base.hidden import _wall_time_instant

    df = new_york.createDataFrame([(w,) for w in DST_WALLS], "w timestamp_ntz")
    spark_micros = [r["m"] for r in df.selectExpr(
        "unix_micros(CAST(w AS TIMESTAMP)) AS m").collect()]
    for unit in ("us", "ns"):
        arrow = _wall_time_instant(pa.array(DST_WALLS, pa.timestamp("us")).cast(
            pa.timestamp(unit)), NEW_YORK)
        assert arrow.cast(pa.timestamp("us", NEW_YORK)).cast(pa.int64()).to_pylist() == \
            spark_micros, unit


def test_timestamp_ntz_parquet_in_place_equals_sparks_reading(new_york, tmp_path):
    """Parquet with a timestamp_ntz time around the clock changes, session zone New York:
    the workers' own reading (ordered=True, in place) gives the rows of Spark's (the sorted
    plan), times included."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from cercore.spark import find

    rng = random.Random(11)
    walls = []
    for day in (dt.datetime(2024, 3, 10, 1, 40), dt.datetime(2024, 11, 3, 0, 40)):
        t = day
        for _ in range(300):
            t += dt.timedelta(seconds=rng.choice([0, 5, 20, 40]))
            walls.append(t)
    table = pa.table({"event_type": [rng.choice(["BUY", "SELL"]) for _ in walls],
                      "name": [rng.choice("AB") for _ in walls],
                      "price": [float(rng.randint(5, 15)) for _ in walls],
                      "ts": pa.array(walls, pa.timestamp("us"))})
    pq.write_table(table, tmp_path / "part-0.parquet", row_group_size=128)
    df = new_york.read.parquet(str(tmp_path))
    assert dict(df.dtypes)["ts"] == "timestamp_ntz"
    query = QUERY.replace("3 SECONDS", "2 MINUTES")

    def rows(out):
        return sorted(tuple(r) for r in out.select("start", "end", "start_time",
                                                   "end_time").collect())

    sorted_rows = rows(find(df, query, schema=DECL, ordered=False))
    assert len(sorted_rows) > 20
    in_place = find(df, query, schema=DECL, ordered=True)
    assert "FileScan" not in in_place._jdf.queryExecution().executedPlan().toString()
    assert rows(in_place) == sorted_rows
