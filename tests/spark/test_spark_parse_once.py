"""The driver parses and compiles a Spark query once: ``hidden_columns`` (behind ``find``,
``explain`` and the SQL functions) parses the text once, infers the schema from that AST,
compiles it once, and the job carries that compiled query; a worker gets the text and
compiles it again (the pickled job carries no compiled query)."""

from __future__ import annotations

import pickle

import pytest

import cercore.ceql.parser as parser
import cercore.spark.base.frames as frames
from cercore.spark.base.frames import hidden_columns

pytestmark = pytest.mark.spark

DECL = "CREATE STREAM S { EVENT A { k:int, ts:int }, EVENT B { k:int, ts:int } }"
QUERY = "SELECT * FROM S WHERE A; B FILTER A.k = B.k WITHIN 5 [ts]"


def user_schema():
    from pyspark.sql import types as T

    return T.StructType([T.StructField("event_type", T.StringType()),
                         T.StructField("k", T.LongType()), T.StructField("ts", T.LongType())])


@pytest.mark.parametrize("schema", [None, DECL])
def test_one_parse_one_compile_on_the_driver(monkeypatch, schema):
    calls = []

    def counting(text):
        calls.append(text)
        return real(text)

    real = parser.parse_query
    monkeypatch.setattr(parser, "parse_query", counting)
    monkeypatch.setattr(frames, "parse_query", counting)
    cols = hidden_columns(user_schema(), QUERY, schema, time="ts")
    assert calls == [QUERY]
    compiled = cols.job.compiled()
    assert cols.job.compiled() is compiled and calls == [QUERY]  # not compiled again
    assert compiled.analysed.partition_by == (("k",),)
    shipped = pickle.loads(pickle.dumps(cols.job))  # what a worker receives
    assert shipped._compiled is None and shipped.query == QUERY
    assert shipped.compiled().analysed.partition_by == compiled.analysed.partition_by
