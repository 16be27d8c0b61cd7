"""One calling convention on Spark, ``(df, query, *, options)``, and the deprecated paths kept
for one release: ``cercore.spark.api.find``, ``cercore.trends.spark``,
``cercore.trends.streaming`` and ``cercore.network.spark`` warn and give the same results
with their old argument orders; the new entry points take no extra positional argument."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cercore.network import NetQuery, Network, Plan, Predicate, Step, seq
from cercore.network.generators import generate_traces
from cercore.spark import (
    aggregate,
    aggregate_rows,
    estimate_pairwise,
    estimate_rates,
    events_dataframe,
    find,
    run_plan,
)
from cercore.trends import compile_trend

pytestmark = pytest.mark.spark

CEQL_DECL = "CREATE STREAM S { EVENT A { v:int, t:int }, EVENT B { v:int, t:int } }"
CEQL_QUERY = "SELECT * FROM S WHERE A AS a ; B AS b FILTER a[v > 0] WITHIN 5 [t]"
TREND_DECL = ("CREATE STREAM S { EVENT A { v:int, t:primary_time }, "
              "EVENT B { v:int, t:primary_time } }")
TREND_QUERY = "RETURN COUNT(*), SUM(A.v) PATTERN SEQ(A+, B) WITHIN 6 SLIDE 3"
ROWS = [("A", 1, 0), ("A", 2, 1), ("B", 0, 2), ("A", 0, 3), ("B", 5, 4), ("B", 1, 7),
        ("A", 3, 8), ("B", 2, 9)]

NET = Network(("1", "2"), {"A": ["1"], "B": ["2"]}, {"A": 0.1, "B": 0.2})
NET_QUERY = NetQuery(seq("A", "B"), 20, (Predicate("A", "id", "==", "B", "id"),))
PATTERN = "PATTERN SEQ(A a, B b) WHERE a.id = b.id WITHIN 20"
PLAN = Plan("1", (Step((), "A"), Step("A", "B")))
TRACES = generate_traces(NET, "AB", 400, seed=3, id_domain=4)


def pandas_events():
    import pandas as pd

    return pd.DataFrame([{"event_type": e, "v": v, "t": t} for e, v, t in ROWS])


def positions(rows) -> list[tuple]:
    return sorted(tuple(r["positions"]) for r in rows)


def test_new_entry_points_take_no_extra_positional_argument():
    with pytest.raises(TypeError):
        find(None, CEQL_QUERY, CEQL_DECL)
    with pytest.raises(TypeError):
        aggregate(None, TREND_QUERY, TREND_DECL)
    with pytest.raises(TypeError):
        aggregate_rows(None, TREND_QUERY, None)
    with pytest.raises(TypeError):
        run_plan(None, NET_QUERY, PLAN)
    with pytest.raises(TypeError):
        estimate_rates(None, 10.0)
    with pytest.raises(TypeError):
        events_dataframe(TRACES, None)


def test_importing_the_spark_package_and_the_aliases_imports_no_pyspark():
    code = ("import sys, warnings; warnings.simplefilter('error'); import cercore.spark, "
            "cercore.spark.api, cercore.trends.spark, cercore.trends.streaming, "
            "cercore.network.spark; assert not [m for m in sys.modules "
            "if m.startswith('pyspark')]")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_find_alias(spark):
    from cercore.spark import api

    df = spark.createDataFrame(ROWS, "event_type string, v long, t long")
    new = positions(find(df, CEQL_QUERY, schema=CEQL_DECL, backend="python").collect())
    assert new  # the query matches: the comparison means something
    with pytest.deprecated_call():
        old = api.find(df, CEQL_QUERY, CEQL_DECL, "python")
    assert positions(old.collect()) == new


def test_trend_aliases(spark):
    from cercore.trends import spark as old

    q = compile_trend(TREND_QUERY, TREND_DECL)
    pdf = pandas_events()
    local = q.run(pdf)
    assert local
    assert aggregate_rows(pdf, q, spark=spark) == local
    assert aggregate_rows(pdf, TREND_QUERY, schema=TREND_DECL, spark=spark) == local
    with pytest.deprecated_call():
        assert old.run_spark(q, pdf, spark) == local
    new_df = aggregate(pdf, q, spark=spark, exact="string")
    with pytest.deprecated_call():
        old_df = old.aggregate(q, pdf, spark, exact="string")
    assert sorted(map(tuple, old_df.collect())) == sorted(map(tuple, new_df.collect()))


def test_trend_streaming_alias_warns_on_access():
    pytest.importorskip("pyspark")
    from cercore.spark import trends_streaming
    from cercore.trends import streaming

    with pytest.deprecated_call():
        assert streaming.run_streaming is trends_streaming.run_streaming
    with pytest.raises(AttributeError):
        streaming.no_such_name  # noqa: B018


def test_network_aliases(spark):
    from cercore.network import spark as old

    events = events_dataframe(TRACES, spark=spark)
    with pytest.deprecated_call():
        old_events = old.events_dataframe(spark, TRACES)
    assert old_events.count() == events.count()
    run = run_plan(events, NET_QUERY, plan=PLAN, network=NET)
    assert run.matches
    assert run_plan(TRACES, PATTERN, plan=PLAN, spark=spark).matches == run.matches
    with pytest.deprecated_call():
        old_run = old.run_plan_spark(spark, NET_QUERY, PLAN, events, NET)
    assert (old_run.matches, old_run.transmitted) == (run.matches, run.transmitted)
    with pytest.deprecated_call():
        assert old.estimate_rates_spark(events).rates == estimate_rates(events).rates
    with pytest.deprecated_call():
        assert old.estimate_pairwise_spark(NET_QUERY, events) == \
            estimate_pairwise(events, NET_QUERY)
