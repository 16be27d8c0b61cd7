"""Equal times without ``sequence=``: batch ``find`` warns, naming how many events share their
time (they are then ordered by how Spark reads them). The count comes from the statistics job
``with_positions`` already runs: per sorted partition, the runs of equal times
(``partition_statistics``), joined across partition borders (``tied_rows``) — checked here
against a plain count over random partitionings, then on Spark.
"""

from __future__ import annotations

import warnings
from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cercore.spark import find
from cercore.spark.job import LOW_BITS, partition_statistics, tied_rows


def brute_tied(times: list[int | None]) -> int:
    counts = Counter(t for t in times if t is not None)
    return sum(c for c in counts.values() if c >= 2)


@st.composite
def partitioned_times(draw):
    """Sorted times (nulls first), cut into contiguous partitions, each cut into batches."""
    nulls = draw(st.integers(0, 3))
    times = sorted(draw(st.lists(st.integers(0, 12), max_size=40)))
    rows = [None] * nulls + times
    cuts = sorted(draw(st.lists(st.integers(0, len(rows)), max_size=5)))
    bounds = [0, *cuts, len(rows)]
    parts = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        inner = sorted(draw(st.lists(st.integers(a, b), max_size=4)))
        parts.append([rows[x:y] for x, y in zip([a, *inner], [*inner, b])])
    return rows, parts


def statistics(parts, timed=True):
    out = []
    for p, batches in enumerate(parts):
        rbs, k = [], 0
        for chunk in batches:
            ids = pa.array([(p << LOW_BITS) + k + i for i in range(len(chunk))], pa.int64())
            cols = [ids, pa.array(chunk, pa.int64())] if timed else [ids]
            rbs.append(pa.RecordBatch.from_arrays(cols, names=["id", "t"][:len(cols)]))
            k += len(chunk)
        out += [r for rb in partition_statistics(iter(rbs), timed) for r in rb.to_pylist()]
    return out


@settings(max_examples=300, deadline=None)
@given(partitioned_times())
def test_tied_rows_equal_a_plain_count(data):
    rows, parts = data
    stats = statistics(parts)
    assert tied_rows(stats) == brute_tied(rows)
    assert sum(s["n"] for s in stats) == len(rows)
    assert sum(s["nulls"] for s in stats) == rows.count(None)
    times = [t for t in rows if t is not None]
    lows = [s["lo"] for s in stats if s["lo"] is not None]
    highs = [s["hi"] for s in stats if s["hi"] is not None]
    assert (min(lows), max(highs)) == (min(times), max(times)) if times else not lows
    assert sorted(s["p"] for s in stats) == [p for p, b in enumerate(parts) if sum(map(len, b))]


def test_untimed_statistics_count_rows_only():
    stats = statistics([[[None, None], [None]], [], [[None]]], timed=False)
    assert [(s["p"], s["n"], s["lo"]) for s in stats] == [(0, 3, None), (2, 1, None)]
    assert tied_rows(stats) == 0


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
