"""One calling convention on Spark, ``(df, query, *, options)``: every entry point takes the
DataFrame and the query positionally and nothing else (options are keyword-only), and importing
``cercore.spark`` does not import pyspark."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cercore.network import NetQuery, Network, Plan, Predicate, Step, seq
from cercore.network.generators import generate_traces
from cercore.spark import (
    aggregate,
    aggregate_rows,
    estimate_rates,
    events_dataframe,
    find,
    run_plan,
)

pytestmark = pytest.mark.spark

CEQL_DECL = "CREATE STREAM S { EVENT A { v:int, t:int }, EVENT B { v:int, t:int } }"
CEQL_QUERY = "SELECT * FROM S WHERE A AS a ; B AS b FILTER a[v > 0] WITHIN 5 [t]"
TREND_DECL = ("CREATE STREAM S { EVENT A { v:int, t:primary_time }, "
              "EVENT B { v:int, t:primary_time } }")
TREND_QUERY = "RETURN COUNT(*), SUM(A.v) PATTERN SEQ(A+, B) WITHIN 6 SLIDE 3"

NET = Network(("1", "2"), {"A": ["1"], "B": ["2"]}, {"A": 0.1, "B": 0.2})
NET_QUERY = NetQuery(seq("A", "B"), 20, (Predicate("A", "id", "==", "B", "id"),))
PLAN = Plan("1", (Step((), "A"), Step("A", "B")))
TRACES = generate_traces(NET, "AB", 400, seed=3, id_domain=4)


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


def test_importing_the_spark_package_imports_no_pyspark():
    code = ("import sys, warnings; warnings.simplefilter('error'); import cercore.spark; "
            "assert not [m for m in sys.modules if m.startswith('pyspark')]")
    subprocess.run([sys.executable, "-c", code], check=True)
