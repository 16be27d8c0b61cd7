"""``read_order``: one pass over the ordering columns says whether Spark's partitions are each in
event order and follow each other without overlap -- then positions are the rows of the earlier
partitions + the index in the partition, and the plans number events without a sort. Checked
against a brute-force reading of the same rows (no JVM needed)."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from cercore.spark.base.job import LOW_BITS
from cercore.spark.ceql.read_order import layout, summarise

ROW = st.tuples(st.integers(0, 12), st.integers(0, 3))  # (time, sequence)


def summaries(parts: list[list[tuple[int, int]]], with_second: bool, batch: int = 3):
    out = []
    for part, rows in enumerate(parts):
        rid = [(part << LOW_BITS) + i for i in range(len(rows))]
        batches = [pa.RecordBatch.from_arrays(
            [pa.array(rid[lo:lo + batch], pa.int64()),
             pa.array([t for t, _ in rows[lo:lo + batch]], pa.int64()),
             pa.array([s if with_second else None for _, s in rows[lo:lo + batch]], pa.int64()),
             pa.array([t for t, _ in rows[lo:lo + batch]], pa.int64())],
            names=["r", "a", "b", "c"]) for lo in range(0, len(rows), batch)]
        out += [r for rb in summarise(iter(batches)) for r in rb.to_pylist()]
    return out


@settings(deadline=None)
@given(st.lists(st.lists(ROW, max_size=8), max_size=5), st.booleans(),
       st.integers(1, 4), st.booleans())
def test_layout_against_brute_force(parts, with_second, batch, sort_each):
    if sort_each:
        parts = [sorted(p) if with_second else sorted(p, key=lambda r: r[0]) for p in parts]
    read = layout(summaries(parts, with_second, batch), buckets=3)
    rows = [((r[0], r[1] if with_second else 0), part, i)
            for part, p in enumerate(parts) for i, r in enumerate(p)]
    order = sorted(rows)  # event order: (time, sequence), then read order (partition, index)
    rank = {(part, i): pos for pos, (_, part, i) in enumerate(order)}
    local = all(rank[(part, i)] == read.starts[part] + i for _, part, i in rows) \
        if read.in_order else None
    # in order exactly when every partition is a contiguous, sorted stretch of the event order
    contiguous = all(
        [rank[(part, i)] for i in range(len(p))] == list(range(rank[(part, 0)],
                                                                 rank[(part, 0)] + len(p)))
        for part, p in enumerate(parts) if p)
    assert read.in_order == contiguous
    if read.in_order:
        assert local
        times = Counter(r[0] for p in parts for r in p)
        assert read.tied == sum(n for n in times.values() if n >= 2)
    flat = [r[0] for p in parts for r in p]
    assert read.rows == len(flat) and read.nulls == 0
    assert (read.lo, read.hi) == ((min(flat), max(flat)) if flat else (None, None))
    assert read.latest == (max(flat) if flat else None)
    assert list(read.quantiles) == sorted(read.quantiles)
    assert all(min(flat) <= q <= max(flat) for q in read.quantiles)


def test_a_null_time_is_counted_and_never_in_order():
    batch = pa.RecordBatch.from_arrays(
        [pa.array([0, 1, 2], pa.int64()), pa.array([1, None, 3], pa.int64()),
         pa.array([None] * 3, pa.int64()), pa.array([None] * 3, pa.int64())],
        names=["r", "a", "b", "c"])
    read = layout([r for rb in summarise(iter([batch])) for r in rb.to_pylist()])
    assert (read.in_order, read.rows, read.nulls, read.lo, read.hi, read.latest) == \
        (False, 2, 1, 1, 3, None)


@settings(deadline=None)
@given(st.lists(ROW, max_size=30), st.lists(st.integers(0, 30), max_size=4), st.data())
def test_an_ordered_input_cut_anywhere_is_in_order(rows, cuts, data):
    """Sorted events cut into partitions, which Spark may number in any order: in order, each
    partition starting after the rows of the partitions holding earlier events, and runs of
    equal times that cross a cut counted once. (Distinct (time, sequence): equal ones are
    ordered by partition, which the permutation may break.)"""
    rows = sorted(set(rows))
    bounds = sorted({0, len(rows), *(min(c, len(rows)) for c in cuts)})
    pieces = [rows[lo:hi] for lo, hi in zip(bounds, bounds[1:])]
    ids = data.draw(st.permutations(range(len(pieces))))
    parts: list[list] = [[] for _ in pieces]
    for piece, part in zip(pieces, ids):
        parts[part] = piece
    read = layout(summaries(parts, True))
    assert read.in_order
    before = 0
    for piece, part in zip(pieces, ids):
        if piece:
            assert read.starts[part] == before
        before += len(piece)
    times = Counter(t for t, _ in rows)
    assert read.tied == sum(n for n in times.values() if n >= 2)


def test_a_read_order_spark_computed_elsewhere_is_not_trusted():
    """Spark Connect folds ``monotonically_increasing_id()`` over a local relation on the driver:
    the rows then come to the pass in two tasks numbered 0, 1 and 2, 3, 4 under partition 0 --
    in order, but not a numbering of each task's rows, so the plans sort instead."""
    def part(rids, times):
        return pa.RecordBatch.from_arrays(
            [pa.array(rids, pa.int64()), pa.array(times, pa.int64()),
             pa.array([None] * len(rids), pa.int64()), pa.array([None] * len(rids), pa.int64())],
            names=["r", "a", "b", "c"])
    rows = [r for rb in (part([0, 1], [10, 11]), part([2, 3, 4], [12, 13, 14]))
            for r in next(summarise(iter([rb]))).to_pylist()]
    assert not layout(rows).in_order
    assert layout(rows[:1]).in_order  # one task numbered 0, 1: its numbering holds
