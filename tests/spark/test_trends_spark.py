"""The Spark batch path of trend aggregation equals the local engine (window assignment,
per-(partition, window) aggregation, roll-up to GROUP BY)."""

from __future__ import annotations

import random

import pytest

from cercore.trends import compile_trend

pytestmark = pytest.mark.spark

SCHEMA = ("CREATE STREAM S { EVENT A { v:int, g:int, h:int, t:primary_time }, "
          "EVENT B { v:int, g:int, h:int, t:primary_time }, "
          "EVENT C { v:int, g:int, h:int, t:primary_time } }")
QUERIES = [
    "RETURN g, COUNT(*), SUM(A.v), MIN(A.v), AVG(B.v) PATTERN (SEQ(A+, B))+ "
    "SEMANTICS skip-till-any-match WHERE [h] GROUP-BY g WITHIN 6 SLIDE 2",
    "RETURN g, COUNT(*), MAX(A.v) PATTERN SEQ(A+, B) SEMANTICS skip-till-next-match "
    "WHERE [h] AND A.v < NEXT(A).v GROUP-BY g WITHIN 5 SLIDE 5",
    "RETURN COUNT(*), COUNT(A) PATTERN SEQ(A, B+) SEMANTICS contiguous WHERE A.v > 0",
    "RETURN COUNT(*) PATTERN A+ WITHIN 80 SLIDE 80",  # 2^k counts beyond int64
    "RETURN COUNT(*), MAX(A.v) PATTERN SEQ(A+, B) WITHIN 3 SLIDE 7",  # times in no window
]


def events(n: int, seed: int):
    import pandas as pd

    rng = random.Random(seed)
    t, rows = 0, []
    for _ in range(n):
        t += rng.choice([0, 1, 1, 2])
        rows.append({"event_type": rng.choice("AABC"), "v": rng.randint(0, 5),
                     "g": rng.randint(0, 1), "h": rng.randint(0, 2), "t": t})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("text", QUERIES)
def test_spark_equals_local(spark, text):
    from cercore.spark import aggregate_rows

    q = compile_trend(text, SCHEMA)
    pdf = events(120, seed=len(text))
    local = q.run(pdf)
    assert local  # the stream has trends, so the comparison means something
    assert aggregate_rows(pdf, q, spark=spark) == local


def test_aggregate_returns_a_typed_dataframe(spark):
    from decimal import Decimal

    from cercore.spark import aggregate

    q = compile_trend(QUERIES[0], SCHEMA)
    pdf = events(120, seed=3)
    df = aggregate(spark.createDataFrame(pdf), q)  # a Spark DataFrame: read order breaks ties
    types = dict(df.dtypes)
    assert list(types) == q.columns
    assert types["COUNT(*)"] == "decimal(38,0)" and types["SUM(A.v)"] == "decimal(38,0)"
    assert types["MIN(A.v)"] == "bigint" and types["AVG(B.v)"] == "double"
    got = sorted((r.asDict() for r in df.collect()),
                 key=lambda r: (r["window_start"], r["g"]))
    local = q.run(pdf)
    assert got == [{k: Decimal(v) if k in ("COUNT(*)", "SUM(A.v)") else v
                    for k, v in r.items()} for r in local]


def test_counts_beyond_decimal_38_are_an_error_or_text(spark):
    import pandas as pd
    from pyspark.errors import PythonException

    from cercore.spark import aggregate

    q = compile_trend("RETURN COUNT(*) PATTERN A+", SCHEMA)
    pdf = pd.DataFrame([{"event_type": "A", "v": 1, "g": 0, "h": 0, "t": t}
                        for t in range(130)])  # 2^130 - 1 trends: 40 digits
    with pytest.raises(PythonException, match="more than 38 digits"):
        aggregate(pdf, q, spark=spark).collect()
    (row,) = aggregate(pdf, q, spark=spark, exact="string").collect()
    assert int(row["COUNT(*)"]) == 2 ** 130 - 1


def test_null_aggregated_attribute_is_a_clear_error(spark):
    import pandas as pd
    from pyspark.errors import PythonException

    from cercore.spark import aggregate

    q = compile_trend("RETURN SUM(A.v) PATTERN A+", SCHEMA)
    pdf = pd.DataFrame([{"event_type": "A", "v": v, "g": 0, "h": 0, "t": t}
                        for t, v in enumerate([1, None, 3])])
    with pytest.raises(PythonException, match="A event has no 'v' value"):
        aggregate(pdf, q, spark=spark).collect()


def test_a_timestamp_time_column_and_bracket_alternatives(spark):
    """aggregate reads a Spark timestamp time column in the schema's unit, as find does
    (windows are computed on integers, not on the timestamp); and PARTITION BY [a, b] naming
    one key differently per type reads as in CEQL, on Spark as locally."""
    import datetime as dt

    import pandas as pd

    from cercore.spark import aggregate_rows

    q = compile_trend(QUERIES[1], SCHEMA)
    pdf = events(120, seed=5)
    local = q.run(pdf)
    base = dt.datetime(2024, 3, 1, 9, 30)
    stamped = pdf.assign(t=[base + dt.timedelta(seconds=int(s)) for s in pdf["t"]])
    shift = int(base.replace(tzinfo=dt.UTC).timestamp())
    got = aggregate_rows(spark.createDataFrame(stamped), q)
    assert shift % 5 == 0  # the windows (WITHIN 5 SLIDE 5) line up with the local ones
    assert [{**r, "window_start": r["window_start"] - shift,
             "window_end": r["window_end"] - shift} for r in got] == local
    alternatives = ("CREATE STREAM S { EVENT LOAD { plug:int, t:primary_time }, "
                    "EVENT ALARM { household:int, t:primary_time } }")
    trend = compile_trend("SELECT COUNT(*) FROM S WHERE LOAD AS L ; ALARM AS A "
                          "PARTITION BY [plug, household] WINDOW 10 SLIDE 10", alternatives)
    rows = pd.DataFrame([{"event_type": "LOAD", "plug": 1, "household": None, "t": 1},
                         {"event_type": "LOAD", "plug": 2, "household": None, "t": 2},
                         {"event_type": "ALARM", "plug": None, "household": 1, "t": 3}])
    assert trend.run(rows) == [{"window_start": 0, "window_end": 10, "COUNT(*)": 1}]
    assert aggregate_rows(rows, trend, spark=spark) == trend.run(rows)


def test_worker_errors_reach_the_user_as_cercore_errors(spark):
    """An error cercore raises in a worker comes back as that CercoreError, the message on
    top: from aggregate_rows, and from any action inside cercore.spark.cercore_errors()."""
    import pandas as pd

    import cercore
    from cercore.spark import aggregate, aggregate_rows, cercore_errors

    q = compile_trend("RETURN SUM(A.v) PATTERN A+", SCHEMA)
    pdf = pd.DataFrame([{"event_type": "A", "v": v, "g": 0, "h": 0, "t": t}
                        for t, v in enumerate([1, None, 3])])
    with pytest.raises(cercore.EventError, match=r"^event 1: A event has no 'v' value"):
        aggregate_rows(pdf, q, spark=spark)
    big = compile_trend("RETURN COUNT(*) PATTERN A+", SCHEMA)
    many = pd.DataFrame([{"event_type": "A", "v": 1, "g": 0, "h": 0, "t": t}
                         for t in range(130)])
    with pytest.raises(cercore.CercoreError, match="more than 38 digits") as err:
        with cercore_errors():
            aggregate(many, big, spark=spark).collect()
    assert "exact='string'" in str(err.value) and "Traceback" not in str(err.value)
