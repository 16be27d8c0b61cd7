"""Spark reads dictionary-encoded input like the local engine: a pandas frame with
``category`` columns and a Parquet file with dictionary pages give the local engine's
complex events."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cercore
from cercore.spark import find

pytestmark = pytest.mark.spark

DECL = "CREATE STREAM S { EVENT BUY { name:string, desk:int, price:double, ts:int, seq:int } }"
QUERY = ("SELECT * FROM S WHERE BUY AS a; BUY AS b FILTER a[name = 'INTC'] AND "
         "b[name LIKE '^Q'] PARTITION BY [desk] WITHIN 5 [ts]")
QUERY_UNKEYED = ("SELECT * FROM S WHERE BUY AS a; BUY AS b FILTER a[name = 'INTC'] AND "
                 "b[name LIKE '^Q'] WITHIN 5 [ts]")


def frame() -> pd.DataFrame:
    names = ["INTC", "QQQ", "INTC", "MSFT", "QQQ", "INTC", "QQQ", "QQQ"]
    return pd.DataFrame({"event_type": pd.Categorical(["BUY"] * len(names)),
                         "name": pd.Categorical(names),
                         "desk": [0, 0, 1, 1, 0, 1, 1, 0],
                         "price": [float(i) for i in range(len(names))],
                         "ts": list(range(len(names))), "seq": list(range(len(names)))})


def local(query: str, data) -> set:
    engine = cercore.compile(query, DECL).engine()
    return {(ce.start, ce.end, ce.positions) for ce in engine.process(data)}


@pytest.mark.parametrize("query", [QUERY, QUERY_UNKEYED])
def test_categorical_and_dictionary_parquet(spark, tmp_path, query):
    pdf = frame()
    want = local(query, pdf)
    assert want  # matches exist: not vacuous
    got = {(r["start"], r["end"], tuple(r["positions"]))
           for r in find(spark.createDataFrame(pdf), query, schema=DECL, time="ts",
                         sequence="seq").collect()}
    assert got == want
    path = tmp_path / "trades.parquet"
    pq.write_table(pa.Table.from_pandas(pdf, preserve_index=False), path)
    got = {(r["start"], r["end"], tuple(r["positions"]))
           for r in find(spark.read.parquet(str(path)), query, schema=DECL, time="ts",
                         sequence="seq").collect()}
    assert got == want


def test_a_string_type_column_crosses_to_the_workers_once(spark):
    """With a declared schema the engine reads the user's string type column itself; a copy
    (the hidden TYPE column) is made only where the type must change: an inferred schema maps
    undeclared types to one catch-all, a non-string column is cast."""
    from cercore.spark.base.frames import prepare
    from cercore.spark.base.job import TYPE
    from cercore.spark.ceql.batch import worker_columns

    df = spark.createDataFrame(frame().astype({"event_type": str, "name": str}))
    prep = prepare(df, QUERY, DECL, sequence="seq")
    assert prep.job.type_source == "event_type" and TYPE not in prep.df.columns
    assert TYPE not in worker_columns(prep, prep.df.columns)
    inferred = prepare(df, QUERY, None, time="ts", sequence="seq")
    assert inferred.job.type_source == TYPE and TYPE in inferred.df.columns
    got = {(r["start"], r["end"], tuple(r["positions"]))
           for r in find(df, QUERY, schema=DECL, sequence="seq").collect()}
    assert got == local(QUERY, frame()) and got
