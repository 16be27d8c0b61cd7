"""The plan choice (``cercore.spark.base.plan``): which queries run keyed, by T-CER slices or in one
ordered pass, and why (pure Python, no JVM). The exactness of each choice is checked against
the local engine in test_spark_batch.py and test_spark_tcer_slices.py.
"""

from __future__ import annotations

import pytest
from strategies import SCHEMAS

import cercore
from cercore.spark import KEYED, SINGLE, TCER, choose_plan, explain
from cercore.spark.base.plan import streaming_tcer

SCHEMA = SCHEMAS["seconds"]  # types A, B, C (stream S), C, D (stream T); time attribute ts

CASES = [
    # (query, streaming, plan, coordinate, span limit, words in the reason)
    ("SELECT * FROM S WHERE A; B PARTITION BY [k]", False, KEYED, None, None, "PARTITION BY"),
    ("SELECT NEXT * FROM S WHERE A; B PARTITION BY [k] WITHIN 3 SECONDS", False, KEYED, None,
     None, "nothing in the query crosses keys"),
    ("SELECT * FROM S WHERE A; B PARTITION BY [k] WITHIN 3 SECONDS LIMIT 1", False, KEYED,
     None, None, "PARTITION BY"),
    ("SELECT * FROM S WHERE A; B PARTITION BY [k] WITHIN 3 SECONDS CONSUME BY PARTITION", False,
     KEYED, None, None, "PARTITION BY"),
    ("SELECT * FROM S WHERE A; B WITHIN 3 SECONDS", False, TCER, "time", 4, "WITHIN bounds"),
    ("SELECT * FROM S WHERE A; B WITHIN 3 [ts]", False, TCER, "time", 4, "ts difference ≤ 3"),
    ("SELECT STRICT * FROM S WHERE A; B WITHIN 0 SECONDS", False, TCER, "time", 1, "WITHIN"),
    ("SELECT * FROM S, T WHERE A; B WITHIN 2 EVENTS", False, TCER, "position", 3, "EVENTS"),
    ("SELECT * FROM S, T WHERE A; B PARTITION BY [k] WITHIN 2 EVENTS", False, TCER,
     "position", 3, "counts the events of all keys"),
    ("SELECT * FROM S WHERE A; B WITHIN 2 EVENTS", False, SINGLE, None, None, "FROM reads"),
    ("SELECT * FROM T WHERE C; D WITHIN 2 EVENTS", False, SINGLE, None, None, "FROM reads"),
    ("SELECT * FROM S WHERE A; B WITHIN 3 [v]", False, SINGLE, None, None,
     "not the ordering time"),
    ("SELECT * FROM S WHERE A; B", False, SINGLE, None, None, "no WITHIN"),
    # strategies select within the window, LIMIT counts per triggering event: window-local
    ("SELECT LAST * FROM S WHERE A; B WITHIN 3 SECONDS", False, TCER, "time", 4, "WITHIN"),
    ("SELECT MAX * FROM S WHERE A; B WITHIN 3 SECONDS", False, TCER, "time", 4, "WITHIN"),
    ("SELECT NEXT * FROM S, T WHERE A; B WITHIN 2 EVENTS", False, TCER, "position", 3,
     "EVENTS"),
    ("SELECT * FROM S WHERE A; B WITHIN 3 SECONDS LIMIT 2", False, TCER, "time", 4, "WITHIN"),
    ("SELECT NEXT * FROM S WHERE A; B", False, SINGLE, None, None, "no WITHIN"),
    ("SELECT * FROM S WHERE A; B WITHIN 3 SECONDS CONSUME BY ANY", False, SINGLE, None, None,
     "CONSUME BY ANY"),
    ("SELECT * FROM S WHERE A; B PARTITION BY [k] WITHIN 3 SECONDS CONSUME BY ANY", False,
     SINGLE, None, None, "every key"),
    ("SELECT * FROM S WHERE A; B PARTITION BY [k] WITHIN 3 SECONDS", True, KEYED, None, None,
     "PARTITION BY"),
    # streaming: one state for the stream unless T-CER by event time is asked for
    ("SELECT * FROM S WHERE A; B WITHIN 3 SECONDS", True, SINGLE, None, None,
     "T-CER slices by event time are exact here (plan='tcer')"),
    ("SELECT LAST * FROM S WHERE A; B WITHIN 3 SECONDS", True, SINGLE, None, None,
     "plan='tcer'"),
    ("SELECT * FROM S, T WHERE A; B WITHIN 2 EVENTS", True, SINGLE, None, None,
     "cannot number without one engine"),
    ("SELECT * FROM S WHERE A; B WITHIN 3 SECONDS CONSUME BY ANY", True, SINGLE, None, None,
     "CONSUME BY ANY"),
    ("SELECT * FROM S WHERE A; B", True, SINGLE, None, None, "no WITHIN"),
]


@pytest.mark.parametrize(("query", "streaming", "kind", "coordinate", "span", "why"), CASES)
def test_plan_choice(query, streaming, kind, coordinate, span, why):
    analysed = cercore.compile(query, SCHEMA).analysed
    plan = choose_plan(analysed, "ts", streaming=streaming)
    assert (plan.kind, plan.coordinate, plan.span_limit) == (kind, coordinate, span)
    assert why in plan.reason


def test_a_stream_slices_by_event_time_only_when_asked():
    """streaming_tcer: the batch T-CER plan where it slices by time (find(..., plan="tcer")
    on a stream), none where batch would slice by position or not at all."""
    def sliced(query):
        return streaming_tcer(cercore.compile(query, SCHEMA).analysed, "ts")

    plan = sliced("SELECT MAX * FROM S WHERE A; B WITHIN 3 SECONDS")
    assert (plan.kind, plan.coordinate, plan.span_limit) == (TCER, "time", 4)
    assert sliced("SELECT * FROM S, T WHERE A; B WITHIN 2 EVENTS") is None
    assert sliced("SELECT * FROM S WHERE A; B WITHIN 3 SECONDS CONSUME BY ANY") is None
    assert sliced("SELECT * FROM S WHERE A; B WITHIN 3 [v]") is None


def test_without_an_ordering_time_time_windows_are_not_sliced():
    analysed = cercore.compile("SELECT * FROM S WHERE A; B WITHIN 3 [ts]", SCHEMA).analysed
    assert choose_plan(analysed, None).kind == SINGLE


def test_skipping_bad_events_disables_position_slices():
    analysed = cercore.compile("SELECT * FROM S, T WHERE A; B WITHIN 2 EVENTS",
                               SCHEMA).analysed
    assert choose_plan(analysed, "ts").kind == TCER
    assert choose_plan(analysed, "ts", on_error="skip").kind == SINGLE


def test_slice_size_is_the_smallest_that_holds_every_match():
    plan = choose_plan(cercore.compile("SELECT * FROM S WHERE A; B WITHIN 9 SECONDS",
                                       SCHEMA).analysed, "ts")
    assert plan.span_limit == 10  # note §4 example 11: WITHIN ε is D_C = ε + 1
    assert [plan.slice_size(a) for a in (1, 5, 10)] == [10, 14, 19]  # WS = WA + D_C − 1


def test_explain_names_the_plan_the_reason_and_the_slices():
    text = explain(SCHEMA, "SELECT * FROM S WHERE A; B WITHIN 9 SECONDS", slice_advance=5)
    assert text.startswith("spark plan: T-CER")
    assert "WA = 5, slice size WS = 14, ≤ 3 slices per event" in text
    assert "window: 9" in text  # followed by the compiled query's own explanation
    assert "kept by the slice ⌊(end − ε) / WA⌋ only" in text
    assert "then one shuffle; each slice's worker numbers its rows" in text
    keyed = explain(SCHEMA, "SELECT * FROM S WHERE A; B PARTITION BY [k] WITHIN 3 SECONDS")
    assert "two shuffles: one numbers the rows per bucket of the ordering time, one groups " \
        "them by key; nothing checkpointed" in keyed
    assert "in event order, positions from the read order and one shuffle grouping the rows " \
        "by key" in keyed
    single = explain(SCHEMA, "SELECT LAST * FROM S WHERE A; B")
    assert single.startswith("spark plan: single ordered pass")
    assert "history-dependent: selection strategy LAST without WITHIN" in single
    consume = explain(SCHEMA, "SELECT * FROM S WHERE A; B WITHIN 3 SECONDS CONSUME BY ANY")
    assert "history-dependent: CONSUME BY ANY discards runs" in consume


def test_explain_says_how_equal_times_are_ordered():
    query = "SELECT * FROM S WHERE A; B WITHIN 9 SECONDS"
    assert "order: by 'ts', equal times by the sequence column 'seq'" in explain(
        SCHEMA, query, sequence="seq")
    unordered = explain(SCHEMA, query)
    assert "equal times in the order the rows are read (no sequence=" in unordered
    assert "find warns when times tie" in unordered
    assert "equal times in the order the rows arrive (no sequence=)" in explain(
        SCHEMA, "SELECT * FROM S WHERE A; B PARTITION BY [k] WITHIN 9 SECONDS", streaming=True)
    assert "order: by the sequence column 'seq'" in explain(SCHEMAS["untimed"], query.replace(
        "9 SECONDS", "3 EVENTS"), sequence="seq")
    assert "partitions: one per slice, at most 3 × defaultParallelism" in unordered


@pytest.mark.spark
def test_explain_of_a_dataframe_takes_sequence(spark):
    df = spark.createDataFrame([("A", 1, 10, 0)], "event_type string, v long, ts long, seq long")
    query = "SELECT * FROM S WHERE A; B WITHIN 9 [ts]"
    text = explain(df, query, time="ts", sequence="seq")
    assert "equal times by the sequence column 'seq'" in text
    assert "seq:" not in text.split("schema (inferred")[1].split("\n\n")[0]  # not an attribute
    assert "seq:" in explain(df, query, time="ts").split("schema (inferred")[1]
    with pytest.raises(cercore.CercoreError, match="no sequence column 'sq'"):
        explain(df, query, time="ts", sequence="sq")


@pytest.mark.spark
def test_explain_takes_finds_arguments(spark):
    """``explain(df, q, schema=..., ...)`` as ``find(df, q, schema=..., ...)`` (it refused
    ``schema`` as an unknown engine option)."""
    df = spark.createDataFrame([("A", 1, 10), ("B", 2, 11)], "event_type string, k long, ts long")
    decl = ("CREATE STREAM S { EVENT A { k:int, ts:primary_time }, "
            "EVENT B { k:int, ts:primary_time } }")
    query = "SELECT * FROM S WHERE A; B PARTITION BY [k] WITHIN 9 [ts]"
    text = explain(df, query, schema=decl, time="ts", event_types=("A", "B"), plan="single",
                   num_partitions=4, watermark="5 seconds")
    assert text.startswith(f"spark plan: {SINGLE}")
    assert "schema (inferred" not in text
    assert "partitions: 4 (num_partitions=)" in explain(df, query, schema=decl, time="ts",
                                                        num_partitions=4)
    assert explain(decl, query, plan="single").startswith(f"spark plan: {SINGLE}")
    with pytest.raises(cercore.CercoreError, match="two schemas"):
        explain(decl, query, schema=decl)
    with pytest.raises(cercore.CercoreError, match="not exact"):
        explain(df, "SELECT * FROM S WHERE A; B", schema=decl, plan="tcer")
