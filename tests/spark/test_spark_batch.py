"""Batch ``cercore.spark.find`` on a real local SparkSession equals the local engine, as
multisets of (start, end, positions), on random queries and streams: partitioned (keyed),
unpartitioned with WITHIN (T-CER, every strategy and LIMIT, also with a tiny forced slice
advance so that many matches straddle slice borders), CONSUME BY (single pass or keyed). Rows are
shuffled before they reach Spark, so trusting Spark's row order would fail.

Spark jobs are slow (~1 s each), so example counts are modest.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st
from spark_helpers import DDL, event_rows, local_complex_events, spark_complex_events
from strategies import SCHEMAS, queries, queries_between_events, streams

import cercore
from cercore.ceql import printer
from cercore.spark import KEYED, SINGLE, TCER, explain, find
from cercore.spark.base.frames import prepare
from cercore.spark.ceql.batch import measure

pytestmark = pytest.mark.spark

SETTINGS = dict(deadline=None, derandomize=True)


def named_types(q) -> set[str]:
    from cercore.spark.base.frames import query_names

    return set(query_names(printer.format_query(q))[0])


def check(spark, schema, q, events, expected_plan=None, in_order=False, **kw):
    """``in_order``: the rows reach Spark in event order, in several partitions (the plans
    then number events from the read order, without a sort: ``read_order``); else shuffled."""
    text = printer.format_query(q)
    try:
        cercore.compile(text, schema)
    except cercore.CEQLSemanticError:
        assume(False)  # discarded, not passed
    if in_order:
        order = ["ts", "seq"] if schema.time_attribute else ["seq"]
        df = (spark.createDataFrame(event_rows(events, shuffle=False), DDL)
              .repartitionByRange(3, *order).sortWithinPartitions(*order))
        assert measure(prepare(df, text, schema, sequence="seq"), buckets=2)[1].in_order
    else:
        df = spark.createDataFrame(event_rows(events, seed=len(events)), DDL)
    plan_line = explain(schema, text).splitlines()[0]
    if expected_plan is not None:
        assert expected_plan in plan_line, (text, plan_line)
    got = spark_complex_events(find(df, text, schema=schema, sequence="seq", **kw).collect())
    want = local_complex_events(text, schema, events)
    event(plan_line + (" (some complex events)" if want else ""))
    assert got == want, text
    return got


@settings(max_examples=10, **SETTINGS)
@given(data=st.data())
def test_partitioned_queries_keyed(spark, data):
    schema = data.draw(st.sampled_from([SCHEMAS["seconds"], SCHEMAS["untimed"]]))
    q = data.draw(queries(schema, partitioned=True, full=True))
    if q.consume == "ANY" or q.within is not None and type(q.within).__name__ == "EventsWindow":
        q = dataclasses.replace(q, consume=None, within=None)
    check(spark, schema, q, data.draw(streams(schema, max_len=12, favour=named_types(q))), "keyed",
          in_order=data.draw(st.booleans()))


@settings(max_examples=10, **SETTINGS)
@given(data=st.data())
def test_unpartitioned_within_tcer(spark, data):
    schema = SCHEMAS["seconds"]
    q = data.draw(queries(schema, partitioned=False, windowed=True, full=True))
    q = dataclasses.replace(q, consume=None, strategy=data.draw(st.sampled_from(
        [q.strategy, "NEXT", "LAST", "MAX"])))
    # WITHIN n EVENTS counts events globally: which plan it gets depends on FROM and stream
    # tags; the plan choice for it is pinned elsewhere, here only time windows (T-CER)
    assume(type(q.within).__name__ != "EventsWindow")
    events = data.draw(streams(schema, max_len=12, favour=named_types(q)))
    advance = data.draw(st.sampled_from([None, 1, 2]))
    check(spark, schema, q, events, "T-CER", slice_advance=advance,
          in_order=data.draw(st.booleans()))


@settings(max_examples=8, **SETTINGS)
@given(data=st.data())
def test_history_dependent_queries(spark, data):
    """Strategies NEXT/LAST/MAX, CONSUME BY and LIMIT: keyed where exact, T-CER under WITHIN
    without CONSUME BY, else single pass."""
    schema = SCHEMAS["seconds"]
    q = data.draw(queries(schema, full=True))
    q = dataclasses.replace(q, strategy=data.draw(st.sampled_from(["NEXT", "LAST", "MAX",
                                                                     q.strategy])))
    check(spark, schema, q, data.draw(streams(schema, max_len=12, favour=named_types(q))))


def test_every_plan_agrees_on_one_query(spark):
    """A windowed, partitioned query with alternative keys ([k, g]: C is keyed by g): the
    auto plan (keyed) and the forced single pass agree with the local engine; forcing a plan
    other than the chosen one or the single pass is refused."""
    schema = SCHEMAS["seconds"]
    text = "SELECT * FROM S WHERE A; B+; C PARTITION BY [k, g] WITHIN 3 SECONDS"
    events = [(t, {"v": 0, "k": k, "g": k, "ts": ts, "s": "a", "w": 0.0, "b": True})
              for t, k, ts in [("A", 0, 1), ("A", 1, 1), ("B", 0, 2), ("B", 1, 2), ("B", 0, 2),
                               ("C", 0, 3), ("C", 1, 4), ("A", 0, 6), ("B", 0, 8), ("C", 0, 9)]]
    for t, attrs in events:  # the schema: C has g but no k; A, B have k
        if t == "C":
            attrs.pop("k"), attrs.pop("w"), attrs.pop("b")
        else:
            attrs.pop("g")
            if t == "B":
                attrs.pop("b")
    df = spark.createDataFrame(event_rows(events), DDL)
    want = local_complex_events(text, schema, events)
    assert sum(want.values()) >= 4
    for plan in ("auto", SINGLE):
        got = find(df, text, schema=schema, sequence="seq", plan=plan).collect()
        assert spark_complex_events(got) == want, plan
    with pytest.raises(cercore.CercoreError, match="not exact"):
        find(df, text, schema=schema, sequence="seq", plan=TCER)
    assert explain(schema, text).splitlines()[0].startswith(f"spark plan: {KEYED}")


@settings(max_examples=8, **SETTINGS)
@given(data=st.data())
def test_predicates_between_events_keyed_and_tcer(spark, data):
    """A predicate between events never makes a plan wrong: each engine checks the
    complex events it finds, keyed or in T-CER slices."""
    partitioned = data.draw(st.booleans())
    schema = SCHEMAS["seconds"]
    q = data.draw(queries_between_events(schema, partitioned=partitioned, windowed=True))
    q = dataclasses.replace(q, limit=None, consume=None, strategy=q.strategy if q.strategy in (
        None, "ALL", "STRICT") else None)  # (CONSUME BY needs the single ordered pass)
    assume(type(q.within).__name__ != "EventsWindow")
    events = data.draw(streams(schema, max_len=12, favour=named_types(q)))
    check(spark, schema, q, events, "keyed" if partitioned else "T-CER")
