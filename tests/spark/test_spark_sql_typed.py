"""The typed ``cer_find`` (``cercore.spark.register(spark, events=...)``: an Arrow UDTF with a
fixed output schema, its hidden columns computed in Arrow) gives exactly the rows of the
untyped ``cer_find`` and of ``find`` -- ``match_id``, positions and events included -- keyed
(with ``position =>``), ``WITH SINGLE PARTITION``, with a timestamp time, a deadline and
``advance =>``, an inferred schema and a predicate between events; the partition text of a key
of every type is ``find``'s (a double that is no whole number is refused, clearly); a malformed
query fails with the CEQL error and its caret; a call that does not fit the registration says
why. Rows are shuffled before they reach Spark.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from datetime import UTC, datetime

import pytest
from test_spark_absence import DECL as ABSENCE_DECL
from test_spark_absence import HEARTBEAT, ROWS_DDL
from test_spark_sql import STOCKS, TRADE, TREND_QUERIES, TREND_SCHEMA, trades
from test_spark_sql import row_key as plain_key

import cercore
from cercore.spark import aggregate_rows, cercore_errors, find, register, register_aggregate
from cercore.spark.base.frames import hidden_columns
from cercore.spark.base.hidden import _json_string, sql_string
from cercore.spark.base.job import KEY

pytestmark = pytest.mark.spark

TRADES_DDL = "event_type string, name string, price double, ts long, seq long"
NUMBERED = "SELECT *, row_number() OVER (ORDER BY ts, seq) - 1 AS pos FROM {view}"


@pytest.fixture(scope="module")
def sql(spark):
    register(spark)  # the untyped cer_find
    spark.createDataFrame(trades(200, seed=11), TRADES_DDL).createOrReplaceTempView("trades")
    register(spark, events=TRADES_DDL, find="cer_find_typed")
    return spark


def row_key(r) -> tuple:
    """A complex event row as a hashable value (``test_spark_sql.row_key``), NaN read as one
    value (NaN equals nothing, itself included)."""
    key = plain_key(r)
    return (*key[:-1], tuple(tuple("NaN" if isinstance(v, float) and math.isnan(v) else v
                                   for v in e) for e in key[-1]))


def statement(function: str, table: str, partition: str, query: str, decl: str | None,
              options: str = "") -> str:
    declaration = "NULL" if decl is None else sql_string(decl)
    return (f"SELECT * FROM {function}(TABLE({table}) {partition} ORDER BY (ts, seq), "
            f"{sql_string(query)}, {declaration}{options})")


def three_ways(spark, view: str, query: str, decl: str | None, *, keyed: str | None,
               typed: str = "cer_find_typed", options: str = "", **find_kw) -> Counter:
    """``find``'s complex events over ``view``, checked equal to the untyped and the typed
    ``cer_find``'s (``keyed``: PARTITION BY that, with global positions; None: one
    partition)."""
    want = Counter(row_key(r) for r in find(spark.table(view), query, schema=decl,
                                            sequence="seq", **find_kw).collect())
    if keyed is None:
        table, partition = view, "WITH SINGLE PARTITION"
    else:
        table, partition = NUMBERED.format(view=view), f"PARTITION BY {keyed}"
        options += ", position => 'pos'"
    untyped = Counter(row_key(r) for r in spark.sql(
        statement("cer_find", table, partition, query, decl, options)).collect())
    got = Counter(row_key(r) for r in spark.sql(
        statement(typed, table, partition, query, decl, options)).collect())
    assert untyped == want
    assert got == want
    return want


def test_keyed_and_single_partition_equal_find(sql):
    want = three_ways(sql, "trades", TRADE, STOCKS, keyed="name")
    assert sum(want.values()) >= 20 and {p for _, p, *_ in want} == {
        '["INTC"]', '["QQQ"]', '["RIMM"]'}
    assert three_ways(sql, "trades", TRADE, STOCKS, keyed=None) == want


def test_the_schema_inferred_from_the_table(sql):
    """A NULL declaration: the schema is inferred from the registered events, as ``find``
    infers it from the DataFrame."""
    want = three_ways(sql, "trades", TRADE, None, keyed="name", options=", time => 'ts'",
                      time="ts")
    assert sum(want.values()) >= 20


def test_a_predicate_between_events(sql):
    """An equality between events partitions the query by name (implied): the table is
    partitioned by it; the other predicate is checked by each engine."""
    query = ("SELECT * FROM S WHERE BUY AS b; SELL AS s FILTER b.name = s.name AND "
             "b.price < s.price WITHIN 20 SECONDS")
    want = three_ways(sql, "trades", query, STOCKS, keyed="name")
    assert sum(want.values()) >= 20 and all(p.startswith('["') for _, p, *_ in want)


def test_timestamps(sql):
    """A timestamp time column, registered as the time (start_time and end_time are
    timestamps), keyed and in one partition, declared and inferred."""
    rows = [(t, n, p, datetime.fromtimestamp(1_700_000_000 + ts, UTC).replace(tzinfo=None), i)
            for t, n, p, ts, i in trades(150, seed=9)]
    df = sql.createDataFrame(rows, "event_type string, name string, price double, "
                             "ts timestamp, seq long")
    df.createOrReplaceTempView("stamped")
    register(sql, events=df, time="ts", find="cer_find_stamped")
    for keyed in ("name", None):
        want = three_ways(sql, "stamped", TRADE, None, keyed=keyed, typed="cer_find_stamped",
                          options=", time => 'ts'", time="ts")
        assert sum(want.values()) >= 10
        assert all(isinstance(r[4], datetime) for r in want)  # start_time


def test_a_deadline_advanced_to_a_column(sql):
    """``φ ; ABSENT(ψ) WITHIN T`` per key: with ``advance =>`` naming the input's latest read
    time, every key's pending complex events fire as in ``find``; without it, not all."""
    rng = random.Random(5)
    rows, ts = [], 0
    for i in range(60):
        ts += rng.choice([0, 1, 2])
        rows.append((rng.choice("AABC"), rng.randrange(3), rng.randrange(2), ts, i))
    rows += [("A", 0, 0, ts + 1, 60), ("C", 1, 0, ts + 10, 61)]  # only key 1 passes key 0's
    random.Random(1).shuffle(rows)
    sql.createDataFrame(rows, ROWS_DDL).createOrReplaceTempView("absences")
    register(sql, events=ROWS_DDL, find="cer_find_absence")
    latest = NUMBERED.format(view="absences").replace(" FROM", ", max(ts) OVER () AS latest FROM")
    sql.sql(latest).createOrReplaceTempView("absences_latest")
    want = Counter(row_key(r) for r in find(sql.table("absences"), HEARTBEAT,
                                            schema=ABSENCE_DECL, sequence="seq").collect())
    assert sum(want.values()) >= 5
    for function in ("cer_find", "cer_find_absence"):
        got = Counter(row_key(r) for r in sql.sql(statement(
            function, "absences_latest", "PARTITION BY id", HEARTBEAT, ABSENCE_DECL,
            ", position => 'pos', advance => 'latest'")).collect())
        assert got == want, function
    alone = Counter(row_key(r) for r in sql.sql(statement(
        "cer_find_absence", NUMBERED.format(view="absences"), "PARTITION BY id", HEARTBEAT,
        ABSENCE_DECL, ", position => 'pos'")).collect())
    assert alone != want and not alone - want  # some wait for another key's event


KEYS_DDL = ("event_type string, ks string, ki long, kd double, kf float, kb boolean, ts long, "
            "seq long")
ODD = 'a"b\\c\nd\te\x01f\x1fg\x7fh é\u2028'  # JSON escapes (Spark's to_json: Jackson's)
KEY_VALUES = {
    "ks": ["INTC", ODD, "", "1"],
    "ki": [1, -7, 2 ** 62, 0],
    "kd": [1.0, -0.0, 3.0, -5.0, 2.0 ** 53, 1e18, math.nan, math.inf, -math.inf],
    "kf": [1.0, -2.0, 16777216.0, math.inf],
    "kb": [True, False],
}


def key_rows(n: int, values: dict[str, list]) -> list[tuple]:
    rng = random.Random(n)
    rows = [(rng.choice("AB"), *(rng.choice(values[k]) for k in values), i // 3, i)
            for i in range(n)]
    random.Random(n + 1).shuffle(rows)
    return rows


def key_query(column: str) -> str:
    return f"SELECT * FROM S WHERE A AS a; B AS b PARTITION BY [{column}] WITHIN 4 [ts]"


def test_every_key_type_gives_finds_partition_text(sql):
    """String (escaped as Spark's to_json escapes it), int, double (whole numbers as
    integers, NaN and the infinities as the JVM writes them), float and bool keys: the typed
    function's partition text is ``find``'s."""
    df = sql.createDataFrame(key_rows(240, KEY_VALUES), KEYS_DDL)
    df.createOrReplaceTempView("keys")
    register(sql, events=KEYS_DDL, find="cer_find_keys")
    texts = {}
    for column in KEY_VALUES:
        # PARTITION BY the key text: by the double column itself, pyspark would cut a
        # table partition at every NaN (it compares partition values with Python's !=)
        key = hidden_columns(df.schema, key_query(column), None, time="ts",
                             sequence="seq").inlined()[KEY]
        want = three_ways(sql, "keys", key_query(column), None, keyed=key,
                          typed="cer_find_keys", options=", time => 'ts'", time="ts")
        texts[column] = {p for _, p, *_ in want}
    assert texts["ks"] == {f"[{_json_string(v)}]" for v in KEY_VALUES["ks"]}
    assert '["a\\"b\\\\c\\nd\\te\\u0001f\\u001Fg\x7fh é\u2028"]' in texts["ks"]
    assert texts["ki"] == {'["1"]', '["-7"]', f'["{2 ** 62}"]', '["0"]'}
    assert texts["kd"] == {'["1"]', '["0"]', '["3"]', '["-5"]', f'["{2 ** 53}"]',
                           f'["{10 ** 18}"]', '["NaN"]', '["Infinity"]', '["-Infinity"]'}
    assert texts["kf"] == {'["1"]', '["-2"]', '["16777216"]', '["Infinity"]'}
    assert texts["kb"] == {'["1"]', '["0"]'}


def test_a_double_key_that_is_no_whole_number_is_refused(sql):
    """Spark writes it with the JVM's Double.toString (JDK 17: not always the shortest
    digits): the typed function refuses it, naming the value, rather than write another
    text; the untyped one gives find's."""
    values = dict(KEY_VALUES, kd=[1.0, 2.5])
    sql.createDataFrame(key_rows(60, values), KEYS_DDL).createOrReplaceTempView("halves")
    register(sql, events=KEYS_DDL, find="cer_find_halves")
    query = key_query("kd")
    want = Counter(row_key(r) for r in find(sql.table("halves"), query, time="ts",
                                            sequence="seq").collect())
    assert '["2.5"]' in {p for _, p, *_ in want}
    untyped = Counter(row_key(r) for r in sql.sql(statement(
        "cer_find", NUMBERED.format(view="halves"), "PARTITION BY kd", query, None,
        ", time => 'ts', position => 'pos'")).collect())
    assert untyped == want
    with pytest.raises(cercore.CercoreError, match=r"'kd' holds 2\.5, a double that is no "
                       r"whole number.*Double\.toString.*untyped"), cercore_errors():
        sql.sql(statement("cer_find_halves", "halves", "PARTITION BY kd", query, None,
                          ", time => 'ts'")).collect()


def test_a_malformed_query_fails_with_the_ceql_error(sql):
    bad = "SELECT * FROM S WHERE BUY AS b ;; SELL"
    with pytest.raises(Exception) as err:
        sql.sql(statement("cer_find_typed", "trades", "PARTITION BY name", bad,
                          STOCKS)).collect()
    text = str(err.value)
    assert "cercore.errors.CEQLSyntaxError" in text and "(line 1, column 33)" in text
    assert "  SELECT * FROM S WHERE BUY AS b ;; SELL\n" + " " * 34 + "^" in text
    with pytest.raises(cercore.CEQLSyntaxError, match=r"\(line 1, column 33\)"), \
            cercore_errors():
        sql.sql(statement("cer_find_typed", "trades", "WITH SINGLE PARTITION", bad,
                          STOCKS)).collect()
    with pytest.raises(cercore.CercoreError, match="BUYS"), cercore_errors():
        sql.sql(statement("cer_find_typed", "trades", "WITH SINGLE PARTITION",
                          "SELECT * FROM S WHERE BUYS", STOCKS)).collect()


def test_a_call_that_does_not_fit_the_registration(sql):
    """The output schema is fixed when the function is registered: a table of other columns,
    or a time column of another type than registered, fails saying so; so does a
    registration the functions cannot take."""
    sql.createDataFrame(key_rows(20, KEY_VALUES), KEYS_DDL).createOrReplaceTempView("others")
    with pytest.raises(cercore.CercoreError, match="not the events cer_find was registered"), \
            cercore_errors():
        sql.sql(statement("cer_find_typed", "others", "WITH SINGLE PARTITION",
                          key_query("ks"), None, ", time => 'ts'")).collect()
    stamped = "event_type string, name string, price double, ts timestamp, seq long"
    register(sql, events=stamped, find="cer_find_unstamped")  # no time=: integer times
    sql.createDataFrame([("BUY", "A", 1.0, datetime(2024, 1, 1), 0)], stamped) \
        .createOrReplaceTempView("one_stamp")
    with pytest.raises(cercore.CercoreError, match="registered to report times as integers.*"
                       r"time='ts'"), cercore_errors():
        sql.sql(statement("cer_find_unstamped", "one_stamp", "WITH SINGLE PARTITION",
                          TRADE, None, ", time => 'ts'")).collect()
    with pytest.raises(cercore.CercoreError, match="reserved"):
        register(sql, events="event_type string, __cer_x long", find="cer_find_bad")
    with pytest.raises(cercore.CercoreError, match="not one of the events' columns"):
        register(sql, events=TRADES_DDL, time="when", find="cer_find_bad")
    with pytest.raises(cercore.CercoreError, match="give events="):
        register(sql, time="ts")


READINGS_DDL = "event_type string, v long, g long, h long, t long, seq long"


@pytest.mark.parametrize("text", TREND_QUERIES)
def test_typed_aggregate_equals_aggregate_and_cer_aggregate(sql, text):
    """``register_aggregate``: one Arrow UDTF per trend query, compiled at registration; its
    rows are ``aggregate``'s and the untyped ``cer_aggregate``'s."""
    rng = random.Random(len(text))
    t, rows = 0, []
    for i in range(150):
        t += rng.choice([0, 1, 1, 2])
        rows.append((rng.choice("AABC"), rng.randint(0, 5), rng.randint(0, 1),
                     rng.randint(0, 2), t, i))
    random.Random(2).shuffle(rows)
    df = sql.createDataFrame(rows, READINGS_DDL)
    df.createOrReplaceTempView("typed_readings")
    want = aggregate_rows(df, text, schema=TREND_SCHEMA, sequence="seq")
    assert want
    register_aggregate(sql, "trend_typed", text, TREND_SCHEMA, events=READINGS_DDL,
                       sequence="seq")
    table = ("TABLE(typed_readings) PARTITION BY g" if "GROUP-BY g" in text else
             "TABLE(typed_readings) WITH SINGLE PARTITION") + " ORDER BY (t, seq)"
    columns = list(want[0])
    exact = [c for c in columns if c.startswith("COUNT") or c.startswith("SUM")]
    head = [c for c in ("window_start", "g") if c in columns]

    def rows_of(statement: str) -> list[dict]:
        got = sql.sql(statement).collect()
        assert list(got[0].asDict()) == columns
        return sorted(({c: (int(r[c]) if c in exact else r[c]) for c in columns} for r in got),
                      key=lambda r: [r[c] for c in head])

    typed = rows_of(f"SELECT * FROM trend_typed({table})")
    untyped = rows_of(f"SELECT * FROM cer_aggregate({table}, {sql_string(text)}, "
                      f"{sql_string(TREND_SCHEMA)}, sequence => 'seq')")
    assert typed == untyped == sorted(want, key=lambda r: [r[c] for c in head])


def test_a_typed_aggregate_checks_its_query_when_registered(sql):
    with pytest.raises(cercore.CercoreError, match="line 1"):
        register_aggregate(sql, "trend_bad", "RETURN COUNT(*) PATTERN SEQ(A+, ", TREND_SCHEMA,
                           events=READINGS_DDL)
    with pytest.raises(cercore.CercoreError, match="no column 'seq2'"):
        register_aggregate(sql, "trend_bad", TREND_QUERIES[0], TREND_SCHEMA,
                           events=READINGS_DDL, sequence="seq2")


def test_on_spark_connect(sql, connect):
    """Registered and called on a Spark Connect session."""
    df = connect.createDataFrame(trades(80, seed=4), TRADES_DDL)
    df.createOrReplaceTempView("trades_connect")
    register(connect, events=df, find="cer_find_connect")
    want = Counter(row_key(r) for r in find(df, TRADE, schema=STOCKS, sequence="seq")
                   .collect())
    got = Counter(row_key(r) for r in connect.sql(statement(
        "cer_find_connect", "trades_connect", "WITH SINGLE PARTITION", TRADE,
        STOCKS)).collect())
    assert sum(want.values()) >= 5 and got == want
