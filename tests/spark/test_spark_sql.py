"""CER in Spark SQL (``cercore.spark.register``): ``cer_find`` over a TABLE argument equals
``find`` row for row -- ``match_id``, positions and events included -- on random queries and
streams (the exactness generators of test_spark_batch.py), keyed (``PARTITION BY`` the query's
key, global positions from ``position =>``) and unkeyed (``WITH SINGLE PARTITION``);
``cer_aggregate`` equals ``aggregate``; a malformed query fails at analysis with the CEQL error
and its caret inside Spark's error. Rows are shuffled before they reach Spark.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from spark_helpers import DDL, event_rows
from strategies import SCHEMAS, queries, streams
from test_spark_batch import SETTINGS, named_types

import cercore
from cercore.ceql import printer
from cercore.spark import aggregate_rows, find, register
from cercore.spark.base.frames import hidden_columns
from cercore.spark.base.hidden import sql_string
from cercore.spark.base.job import KEY

pytestmark = pytest.mark.spark

VIEW = "cer_sql_events"


@pytest.fixture(scope="module")
def sql(spark):
    register(spark)
    return spark


def row_key(r) -> tuple:
    """A complex event row as a hashable value (events as tuples)."""
    return (r["match_id"], r["partition"], r["start"], r["end"], r["start_time"], r["end_time"],
            tuple(r["positions"]), tuple(tuple(e) for e in r["events"]))


def cer_find_sql(spark, text: str, decl: str | None, *, keyed: bool, order: str,
                 options: str = "") -> str:
    """The ``cer_find`` statement over VIEW: keyed by the query's key (the SQL ``find``
    itself partitions by) with global positions, or in one partition."""
    if keyed:
        df = spark.table(VIEW)
        key = hidden_columns(df.schema, text, decl, sequence="seq").inlined()[KEY]
        table = (f"TABLE(SELECT *, row_number() OVER (ORDER BY {order}) - 1 AS pos FROM {VIEW})"
                 f" PARTITION BY {key} ORDER BY ({order})")
        options += ", position => 'pos'"
    else:
        table = f"TABLE({VIEW}) WITH SINGLE PARTITION ORDER BY ({order})"
    declaration = "NULL" if decl is None else sql_string(decl)
    return f"SELECT * FROM cer_find({table}, {sql_string(text)}, {declaration}{options})"


def check(spark, schema, q, events, *, keyed: bool) -> None:
    text = printer.format_query(q)
    try:
        cercore.compile(text, schema)
    except cercore.CEQLSemanticError:
        assume(False)
    df = spark.createDataFrame(event_rows(events, seed=len(events)), DDL)
    df.createOrReplaceTempView(VIEW)
    decl = schema.to_text()
    want = Counter(row_key(r) for r in find(df, text, schema=schema, sequence="seq").collect())
    order = "ts, seq" if schema.time_attribute else "seq"
    got = Counter(row_key(r) for r in spark.sql(
        cer_find_sql(spark, text, decl, keyed=keyed, order=order)).collect())
    assert got == want, text


@settings(max_examples=6, **SETTINGS)
@given(data=st.data())
def test_keyed_equals_find(sql, data):
    schema = data.draw(st.sampled_from([SCHEMAS["seconds"], SCHEMAS["untimed"]]))
    q = data.draw(queries(schema, partitioned=True, full=True))
    if q.consume == "ANY" or q.within is not None and type(q.within).__name__ == "EventsWindow":
        q = dataclasses.replace(q, consume=None, within=None)
    check(sql, schema, q, data.draw(streams(schema, max_len=12, favour=named_types(q))),
          keyed=True)


@settings(max_examples=6, **SETTINGS)
@given(data=st.data())
def test_single_partition_equals_find(sql, data):
    """Any query, strategies and CONSUME BY included: one engine over the ordered table."""
    schema = data.draw(st.sampled_from([SCHEMAS["seconds"], SCHEMAS["untimed"]]))
    q = data.draw(queries(schema, full=True))
    q = dataclasses.replace(q, strategy=data.draw(st.sampled_from(
        [q.strategy, "NEXT", "LAST", "MAX"])))
    check(sql, schema, q, data.draw(streams(schema, max_len=12, favour=named_types(q))),
          keyed=False)


STOCKS = ("CREATE STREAM S { EVENT BUY { name:string, price:double, ts:primary_time }, "
          "EVENT SELL { name:string, price:double, ts:primary_time } }")
TRADE = "SELECT * FROM S WHERE BUY AS b; SELL AS s FILTER s[price > 10] PARTITION BY [name] " \
    "WITHIN 30 SECONDS"


def trades(n: int, seed: int) -> list[tuple]:
    rng = random.Random(seed)
    ts, out = 0, []
    for i in range(n):
        ts += rng.choice([0, 1, 5])
        out.append((rng.choice(["BUY", "SELL"]), rng.choice(["INTC", "QQQ", "RIMM"]),
                    float(rng.randrange(5, 15)), ts, i))
    random.Random(seed + 1).shuffle(out)
    return out


def test_cer_find_partitioned_by_a_column(sql):
    """``PARTITION BY name ORDER BY (ts, seq)``: the complex events of ``find``, positions
    counted per name; the query's text and declaration as SQL literals, schema inferred
    when the declaration is NULL."""
    df = sql.createDataFrame(trades(120, seed=3),
                             "event_type string, name string, price double, ts long, seq long")
    df.createOrReplaceTempView("trades")
    want = Counter((r["partition"], tuple(e["seq"] for e in r["events"]))
                   for r in find(df, TRADE, schema=STOCKS, sequence="seq").collect())
    assert sum(want.values()) >= 20
    for decl, options in ((sql_string(STOCKS), ""), ("NULL", ", time => 'ts'")):
        rows = sql.sql(f"SELECT * FROM cer_find(TABLE(trades) PARTITION BY name "
                       f"ORDER BY (ts, seq), {sql_string(TRADE)}, {decl}{options})").collect()
        got = Counter((r["partition"], tuple(e["seq"] for e in r["events"])) for r in rows)
        assert got == want
        per_name = Counter(r[0] for r in df.collect())
        assert max(r["end"] for r in rows) < max(per_name.values())  # positions per name


def test_a_malformed_query_fails_with_the_ceql_error(sql):
    sql.createDataFrame(trades(5, seed=1), "event_type string, name string, price double, "
                        "ts long, seq long").createOrReplaceTempView("trades")
    bad = "SELECT * FROM S WHERE BUY AS b ;; SELL"
    with pytest.raises(Exception) as err:
        sql.sql(f"SELECT * FROM cer_find(TABLE(trades) PARTITION BY name ORDER BY (ts, seq), "
                f"{sql_string(bad)}, {sql_string(STOCKS)})").collect()
    text = str(err.value)
    assert "TABLE_VALUED_FUNCTION_FAILED_TO_ANALYZE_IN_PYTHON" in text
    assert "CEQLSyntaxError" in text and "(line 1, column 33)" in text
    assert "  SELECT * FROM S WHERE BUY AS b ;; SELL\n" + " " * 34 + "^" in text
    with pytest.raises(Exception, match="unknown event type|UNKNOWN|did you mean"):
        sql.sql(f"SELECT * FROM cer_find(TABLE(trades) WITH SINGLE PARTITION ORDER BY (ts), "
                f"'SELECT * FROM S WHERE BUYS', {sql_string(STOCKS)})").collect()


TREND_SCHEMA = ("CREATE STREAM S { EVENT A { v:int, g:int, h:int, t:primary_time }, "
                "EVENT B { v:int, g:int, h:int, t:primary_time }, "
                "EVENT C { v:int, g:int, h:int, t:primary_time } }")
TREND_QUERIES = [
    "RETURN g, COUNT(*), SUM(A.v), MIN(A.v), AVG(B.v) PATTERN (SEQ(A+, B))+ "
    "SEMANTICS skip-till-any-match WHERE [h] GROUP-BY g WITHIN 6 SLIDE 2",
    "RETURN g, COUNT(*), MAX(A.v) PATTERN SEQ(A+, B) SEMANTICS skip-till-next-match "
    "WHERE [h] AND A.v < NEXT(A).v GROUP-BY g WITHIN 5 SLIDE 5",
    "RETURN COUNT(*), COUNT(A) PATTERN SEQ(A, B+) SEMANTICS contiguous WHERE A.v > 0",
    "RETURN COUNT(*), MAX(A.v) PATTERN SEQ(A+, B) WITHIN 3 SLIDE 7",
]


@pytest.mark.parametrize("text", TREND_QUERIES)
def test_cer_aggregate_equals_aggregate(sql, text):
    rng = random.Random(len(text))
    t, rows = 0, []
    for i in range(120):
        t += rng.choice([0, 1, 1, 2])
        rows.append((rng.choice("AABC"), rng.randint(0, 5), rng.randint(0, 1),
                     rng.randint(0, 2), t, i))
    df = sql.createDataFrame(rows, "event_type string, v long, g long, h long, t long, "
                             "seq long")
    df.createOrReplaceTempView("readings")
    want = aggregate_rows(df.orderBy("seq"), text, schema=TREND_SCHEMA)
    assert want
    keyed = "GROUP-BY g" in text
    table = ("TABLE(readings) PARTITION BY g" if keyed else
             "TABLE(readings) WITH SINGLE PARTITION") + " ORDER BY (t, seq)"
    got = sql.sql(f"SELECT * FROM cer_aggregate({table}, {sql_string(text)}, "
                  f"{sql_string(TREND_SCHEMA)}, sequence => 'seq')").collect()
    columns = list(want[0])
    assert list(got[0].asDict()) == columns
    exact = [c for c in columns if c.startswith("COUNT") or c.startswith("SUM")]
    got_rows = [{c: (int(r[c]) if c in exact else r[c]) for c in columns} for r in got]
    head = [c for c in ("window_start", "g") if c in columns]
    assert sorted(got_rows, key=lambda r: [r[c] for c in head]) == want


def test_timestamps_and_an_inferred_schema(sql):
    """A timestamp time column (integer microseconds inside, a timestamp in ``events``) and no
    declaration: the schema is inferred from the table as ``find`` infers it."""
    from datetime import UTC, datetime

    rows = [(t, n, p, datetime.fromtimestamp(1_700_000_000 + ts, UTC).replace(tzinfo=None), i)
            for t, n, p, ts, i in trades(80, seed=9)]
    df = sql.createDataFrame(rows, "event_type string, name string, price double, "
                             "ts timestamp, seq long")
    df.createOrReplaceTempView("stamped")
    want = Counter(row_key(r) for r in find(df, TRADE, time="ts", sequence="seq").collect())
    got = Counter(row_key(r) for r in sql.sql(
        "SELECT * FROM cer_find(TABLE(stamped) WITH SINGLE PARTITION ORDER BY (ts, seq), "
        f"{sql_string(TRADE)}, NULL, time => 'ts', sequence => 'seq')").collect())
    assert sum(want.values()) >= 10 and got == want
