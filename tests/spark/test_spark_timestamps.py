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
