"""The same timestamps give the same complex events and times on Spark as locally: a Spark
``timestamp`` time column (from Python datetimes, naive or with a zone) through ``find`` with
a declared unit, against the local engine over the datetimes themselves."""

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
    got = find(df, QUERY, schema=DECL).collect()

    def millis(t: dt.datetime) -> int:
        return int(t.replace(tzinfo=t.tzinfo or dt.UTC).timestamp() * 1000)

    assert sorted((r["start"], r["end"], r["start_time"], r["end_time"]) for r in got) == \
        sorted((c.start, c.end, millis(c.start_time), millis(c.end_time)) for c in local)
