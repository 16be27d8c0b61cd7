"""T-CER on Spark at the window's edges, on timestamps and real-looking data, and the errors
users get for bad input.

Boundary cases: a match spanning exactly ε (WITHIN is inclusive), ε + 1 (excluded), ε − 1,
equal timestamps, and slice advances that make matches straddle slice borders (WA = 1, the
minimal slice; WA = D_C; WA not dividing anything). Every case runs through Spark and must
equal the local engine.
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

import pytest
from spark_helpers import spark_complex_events

import cercore
from cercore.spark import explain, find
from cercore.spark.base.frames import infer_schema

pytestmark = pytest.mark.spark

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DDL = "event_type string, id long, ts long, seq long"
# runs of events far apart in time (no window reaches from one to the next), each a case
CASES = [
    [("A", 0), ("B", 10)],             # span exactly ε = 10: reported
    [("A", 0), ("B", 11)],             # ε + 1: not reported
    [("A", 0), ("B", 9)],              # ε − 1
    [("A", 0), ("A", 0), ("B", 0), ("B", 0)],        # equal timestamps, ties by seq
    [("B", 0), ("A", 0), ("B", 0)],    # equal timestamps: only A before the second B
    [("A", 0), ("A", 3), ("B", 7), ("A", 8), ("B", 10), ("B", 13), ("B", 18), ("B", 21)],
]


def case_stream():
    rows, base = [], 1_000
    for case in CASES:
        rows += [(t, 1, base + dt, len(rows) + i) for i, (t, dt) in enumerate(case)]
        base += 1_000
    return rows


@pytest.mark.parametrize("advance", [None, 1, 3, 11])
def test_window_edges_through_spark(spark, advance):
    query = "SELECT * FROM S WHERE A; B WITHIN 10 [ts]"
    rows = case_stream()
    df = spark.createDataFrame(list(reversed(rows)), DDL)
    schema = infer_schema(df.schema, query, time="ts", exclude=("seq",))
    want = cercore.run(query, schema, [(t, {"id": i, "ts": ts}) for t, i, ts, _ in rows])
    got = spark_complex_events(find(df, query, time="ts", sequence="seq",
                                    slice_advance=advance).collect())
    assert got == {(ce.start, ce.end, tuple(ce.positions)): 1 for ce in want}
    spans = {rows[e][2] - rows[s][2] for s, e, _ in got}
    assert 10 in spans and 11 not in spans and 9 in spans and 0 in spans


def test_timestamps_and_the_example_data(spark):
    """The example pipeline's query and data (a CSV with a timestamp column, no sequence
    column: ties keep file order), keyed and by T-CER slices, equal the local engine."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        from spark_pipeline import CSV_SCHEMA, DEFAULT_QUERY
    finally:
        sys.path.remove(str(EXAMPLES))
    df = spark.read.csv(str(EXAMPLES / "data" / "trades.csv"), header=True, schema=CSV_SCHEMA)
    local = [(r.event_type, {"name": r.name, "price": r.price, "volume": r.volume,
                             "ts": int(r.ts.replace(tzinfo=datetime.UTC).timestamp() * 10**6)})
             for r in df.toPandas().itertuples()]
    local.sort(key=lambda e: e[1]["ts"])  # stable: equal times keep file order
    unkeyed = DEFAULT_QUERY.replace("PARTITION BY [name]", "").replace("30 SECONDS",
                                                                       "8 SECONDS")
    for query, plan in ((DEFAULT_QUERY, "keyed"), (unkeyed, "T-CER")):
        assert explain(df, query, time="ts").startswith(f"spark plan: {plan}")
        schema = infer_schema(df.schema, query, time="ts")
        assert schema.time_unit == "us"
        want = cercore.run(query, schema, local)
        assert len(want) > 20
        rows = find(df, query, time="ts", slice_advance=3_000_000).collect()
        assert spark_complex_events(rows) == {(ce.start, ce.end, tuple(ce.positions)): 1
                                              for ce in want}
        first = min(rows, key=lambda r: (r.end, r.start, r.positions))
        assert [e.event_type for e in first.events] == ["BUY", "BUY", "SELL"]
        # a timestamp time column: times come back as timestamps (UTC session, naive)
        assert first.end_time == datetime.datetime.fromtimestamp(
            local[first.end][1]["ts"] / 10**6, datetime.UTC).replace(tzinfo=None)


def test_bad_input_gives_clear_errors(spark):
    df = spark.createDataFrame([("A", 1, None, 0), ("B", 1, 5, 1)], DDL)
    query = "SELECT * FROM S WHERE A; B WITHIN 10 [ts]"
    with pytest.raises(cercore.CercoreError, match="no event type column 'kind'"):
        find(df, query, type_column="kind", time="ts")
    with pytest.raises(cercore.CercoreError, match="no sequence column"):
        find(df, query, time="ts", sequence="sequ")
    with pytest.raises(cercore.EventError, match="null"):
        find(df, query, time="ts", sequence="seq")
    with pytest.warns(UserWarning, match="skipped 1 event"):
        out = find(df, query, time="ts", sequence="seq", on_error="skip")
    assert out.count() == 0
    with pytest.raises(cercore.CercoreError, match="declares attributes"):
        find(df, query, schema="CREATE STREAM S { EVENT A { x:int, ts:int }, EVENT B { ts:int } }",
             time="ts")
    with pytest.raises(cercore.CercoreError, match="unknown plan"):
        find(df, query, time="ts", plan="fast")
