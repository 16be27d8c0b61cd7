"""Equal times without ``sequence=``: batch ``find`` warns, naming how many events share their
time (they are then ordered by how Spark reads them); the count comes from the statistics job
that counts rows per bucket anyway. A ``sequence=`` column may tie too: read order breaks
those ties, so positions stay a numbering of every event. And each engine run's first position
(``starts_of``) is the number of rows before it.
"""

from __future__ import annotations

import warnings
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spark_helpers import local_complex_events

import cercore
from cercore.spark import find
from cercore.spark.ceql.batch import starts_of


@given(st.dictionaries(st.integers(-5, 30), st.integers(0, 9)), st.integers(-8, 20),
       st.integers(0, 12))
def test_a_group_starts_after_the_rows_of_the_groups_before_it(counts, first, length):
    starts = starts_of(counts, first, first + length)
    assert list(starts) == list(range(first, first + length + 1))
    for g, start in starts.items():
        assert start == sum(n for h, n in counts.items() if h < g)


DDL = "event_type string, v long, ts long, seq long"
QUERY = "SELECT * FROM S WHERE A; B WITHIN 5 [ts]"


@pytest.mark.spark
def test_ties_without_sequence_warn(spark):
    # 9 events; times 1, 1, 2, 3, 3, 3, 7, 8, 8: 7 events share their time
    times = [1, 1, 2, 3, 3, 3, 7, 8, 8]
    rows = [("AB"[i % 2], i, t, i) for i, t in enumerate(times)]
    df = spark.createDataFrame(rows[::-1], DDL).repartition(3)
    with pytest.warns(UserWarning, match=r"7 of 9 events \(78%\) share their 'ts'.*sequence="):
        find(df, QUERY, time="ts").collect()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        find(df, QUERY, time="ts", sequence="seq").collect()  # ordered: no warning
        distinct = spark.createDataFrame([(t, i, i, i) for i, t in enumerate("ABABA")], DDL)
        find(distinct, QUERY, time="ts").collect()  # no ties: no warning


@pytest.mark.spark
def test_a_tying_sequence_still_numbers_every_event_once(spark):
    """sequence= ties as well as time: read order breaks the ties, and every plan numbers
    each event exactly once (positions 0 .. n-1), its complex events those of the local
    engine over the events in that order."""
    schema = cercore.Schema.parse("CREATE STREAM S { EVENT A { v:int, ts:int, k:int }, "
                                  "EVENT B { v:int, ts:int, k:int } }", time_attribute="ts")
    rows = [("AB"[i % 2], i, i // 4, 0, i % 3) for i in range(40)]  # (type, v, ts, seq, k)
    df = spark.createDataFrame(rows, "event_type string, v long, ts long, seq long, k long") \
        .coalesce(1)
    events = [(t, {"v": v, "ts": ts, "k": k}) for t, v, ts, _, k in rows]
    for query in ("SELECT * FROM S WHERE A ; B WITHIN 2 [ts]",
                  "SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 2 [ts]",
                  "SELECT * FROM S WHERE A ; B WITHIN 3 EVENTS",
                  "SELECT * FROM S WHERE A ; B WITHIN 2 [ts] CONSUME BY ANY"):
        got = find(df, query, schema=schema, sequence="seq").collect()
        assert Counter((r["start"], r["end"], tuple(r["positions"])) for r in got) == \
            local_complex_events(query, schema, events), query
        assert all(e["v"] == p for r in got for e, p in zip(r["events"], r["positions"]))
