"""Stream tags on Spark: ``find(..., stream_column=)`` reads each row's stream from a column,
as the local engine does, under every plan; an unknown stream or one that does not carry the
row's type is an error (or a counted skip), as locally."""

from __future__ import annotations

import pytest

import cercore
from cercore.spark import find

pytestmark = pytest.mark.spark

ATTRS = "{ v:int, ts:primary_time }"
DECL = (f"CREATE STREAM S {{ EVENT A {ATTRS}, EVENT B {ATTRS} }} "
        f"CREATE STREAM T {{ EVENT A {ATTRS}, EVENT C {ATTRS} }}")
ROWS = [("A", 0, 1, "T"), ("A", 1, 2, "S"), ("A", 2, 3, "T"), ("C", 3, 4, "T"),
        ("A", 4, 5, None), ("B", 5, 6, "S"), ("A", 6, 7, "S"), ("C", 7, 9, "T"),
        ("A", 8, 9, "T")]
DDL = "event_type string, v long, ts long, src string"


def local(query: str) -> list:
    import pyarrow as pa

    table = pa.table({"event_type": [r[0] for r in ROWS], "v": [r[1] for r in ROWS],
                      "ts": [r[2] for r in ROWS], "src": [r[3] for r in ROWS]})
    engine = cercore.compile(query, DECL).engine("python", stream_column="src")
    return sorted(tuple(ce.positions) for ce in engine.process(table))


@pytest.mark.parametrize("query", [
    "SELECT * FROM S, T WHERE S>A ; T>A",
    "SELECT * FROM T WHERE A ; C WITHIN 4 [ts]",
    "SELECT * FROM S, T WHERE A ; C PARTITION BY [v]",
    "SELECT * FROM S WHERE A ; B",
])
def test_stream_column_equals_local(spark, query):
    df = spark.createDataFrame(ROWS, DDL)
    got = sorted(tuple(r["positions"]) for r in
                 find(df, query, schema=DECL, stream_column="src", sequence="v").collect())
    want = local(query)
    assert got == want
    assert want or "PARTITION" in query  # most queries have matches: not a vacuous check


def test_bad_stream_tags(spark):
    from pyspark.errors import PythonException

    df = spark.createDataFrame(ROWS + [("A", 9, 10, "U")], DDL)
    with pytest.raises(PythonException, match="unknown stream 'U'"):
        find(df, "SELECT * FROM S, T WHERE A ; C", schema=DECL, stream_column="src",
             sequence="v").collect()
    rows = find(df, "SELECT * FROM S, T WHERE A ; C", schema=DECL, stream_column="src",
                sequence="v", on_error="skip").collect()
    assert sorted(tuple(r["positions"]) for r in rows) == local("SELECT * FROM S, T WHERE A ; C")
