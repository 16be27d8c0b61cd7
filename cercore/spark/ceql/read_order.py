"""Is the input already in event order? One pass over the ordering columns, per Spark partition.

Event logs are mostly written in time order, so the partitions Spark reads them in are mostly
each sorted, and hold disjoint stretches of time. Then an event's global position (its rank in
(time, sequence, read order)) is the rows of the partitions before its own + its index in its
partition: ``monotonically_increasing_id()`` numbers rows that way already, so the plans that
number events first (keyed, T-CER by position) need no shuffle to do it. When the input is not
so ordered, the caller falls back to numbering through a sort.

``summarise`` is the mapInArrow body of that one pass (it sees the ordering columns and the
read order ``monotonically_increasing_id()``; one row out per partition); ``layout`` reads the
summaries on the driver. Pure numpy/pyarrow, no pyspark: tested without a JVM.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cercore.input.batch import SKIPPED
from cercore.input.decode import EventDecoder
from cercore.spark.base.job import LOW_BITS, TYPE, EngineJob

SAMPLE = 64  # order statistics each partition returns (bucket bounds, when a sort is needed)

_LONG, _BOOL = (pa.int64(), "long"), (pa.bool_(), "boolean")
_FIELDS = [("part", _LONG), ("numbered", _BOOL), ("n", _LONG), ("nulls", _LONG),
           ("sorted", _BOOL), ("first_t", _LONG), ("first_s", _LONG), ("last_t", _LONG),
           ("last_s", _LONG), ("first_run", _LONG), ("last_run", _LONG), ("tied", _LONG),
           ("latest", _LONG), ("sample", (pa.list_(pa.int64()), "array<long>"))]
SUMMARY_SCHEMA = pa.schema([(name, arrow) for name, (arrow, _) in _FIELDS])
SUMMARY_DDL = ", ".join(f"{name} {ddl}" for name, (_, ddl) in _FIELDS)


def summarise(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: the batches of one partition, columns (read order, first ordering
    column, second ordering column (all null when there is none), read time or null) → one
    summary row (``SUMMARY_SCHEMA``; none for an empty partition). ``nulls`` counts null first
    values; ``sorted``: no null ordering value and the rows are in (first, second) order, so
    with the read order as last tie-breaker the partition is in event order. ``tied`` counts
    rows in runs of equal first values inside the partition (``first_run``/``last_run``: the
    runs at its ends, which may continue in the neighbouring partitions); ``sample``: order
    statistics of the non-null first values, from the least to the greatest. ``numbered``:
    the read order numbers the partition's rows 0, 1, ... under one partition index (not so
    when Spark computed it elsewhere, e.g. folded into a local relation on the driver)."""
    rid, first, second, valid = [], [], [], []
    nulls = second_nulls = 0
    latest = None
    for rb in batches:
        if not rb.num_rows:
            continue
        rid.append(rb.column(0).to_numpy())
        t, s, lt = rb.column(1), rb.column(2), rb.column(3)
        nulls += t.null_count
        first.append(t.fill_null(0).to_numpy() if t.null_count else t.to_numpy())
        valid.append(t.is_valid().to_numpy(zero_copy_only=False))
        second_nulls += s.null_count
        second.append(s.fill_null(0).to_numpy() if s.null_count else s.to_numpy())
        if lt.null_count < len(lt):
            m = int(np.max(lt.drop_null().to_numpy()))
            latest = m if latest is None else max(latest, m)
    if not rid:
        return
    n = sum(len(r) for r in rid)
    r = np.concatenate(rid)
    numbered = bool(r[0] & ((1 << LOW_BITS) - 1) == 0) and bool((np.diff(r) == 1).all())
    has_second = second_nulls < n
    t = np.concatenate(first)
    s = np.concatenate(second)
    same = t[1:] == t[:-1]
    ok = t[1:] > t[:-1]
    ok |= same & (s[1:] >= s[:-1]) if has_second else same
    is_sorted = nulls == 0 and (second_nulls == 0 or not has_second) and bool(ok.all())
    runs = np.diff(np.concatenate([[0], np.flatnonzero(~same) + 1, [n]]))
    present = t[np.concatenate(valid)] if nulls else t
    sample = (np.quantile(present, np.linspace(0, 1, SAMPLE), method="inverted_cdf")
              .astype(np.int64).tolist() if len(present) else [])
    yield pa.RecordBatch.from_pylist([{
        "part": int(r[0]) >> LOW_BITS, "numbered": numbered, "n": n, "nulls": nulls,
        "sorted": is_sorted,
        "first_t": int(t[0]), "first_s": int(s[0]) if has_second else None,
        "last_t": int(t[-1]), "last_s": int(s[-1]) if has_second else None,
        "first_run": int(runs[0]), "last_run": int(runs[-1]), "tied": int(runs[runs >= 2].sum()),
        "latest": latest, "sample": sample}], schema=SUMMARY_SCHEMA)


def summarise_read(batches: Iterator[pa.RecordBatch], job: EngineJob
                   ) -> Iterator[pa.RecordBatch]:
    """``summarise``, when the engine skips bad events (``on_error="skip"``): the batches
    also carry the columns the engine reads (``read_columns``), and the read time (the fourth
    column) counts only the rows the engine's decoder accepts -- a skipped event passes no
    deadline in the local engine either."""
    def accepted(batches):
        decoder = EventDecoder(job.schema, job.on_error)  # as the engine builds its own
        stream = job.stream_column
        for rb in batches:
            table = job.engine_table(pa.Table.from_batches([rb]))
            skipped = decoder.from_arrow(table, 0, TYPE, (stream,) if stream else ()
                                         ).type_ids == SKIPPED
            read_time = rb.column(3)
            if skipped.any():
                read_time = pc.if_else(pa.array(skipped), pa.nulls(len(skipped), pa.int64()),
                                       read_time)
            yield pa.RecordBatch.from_arrays([*rb.columns[:3], read_time],
                                             names=rb.schema.names[:4])
    yield from summarise(accepted(batches))


def read_columns(job: EngineJob) -> list[str]:
    """The prepared columns the engine decodes (what ``EngineJob.engine_table`` reads)."""
    cols = [job.type_source, *(src for _, src in job.engine_sources)]
    if job.stream_column is not None:
        cols.append(job.stream_column)
    return list(dict.fromkeys(cols))


@dataclass(frozen=True)
class ReadLayout:
    """What the pass learnt: whether the partitions, each sorted, follow each other in event
    order, and if so the first global position of each (``starts``: partition → rows before
    it); the extent of the first ordering column; rows sharing their first value with another
    (ties); the latest read time; and a sample of the first ordering column's quantiles."""

    in_order: bool
    starts: dict[int, int]
    rows: int
    nulls: int
    lo: int | None
    hi: int | None
    tied: int
    latest: int | None
    quantiles: tuple[int, ...]
    # in event order: each read partition (index, first position, first time, last time), in
    # order (what the in-place plan runs on)
    parts: tuple[tuple[int, int, int, int], ...] = ()


def layout(summaries: list[dict], buckets: int = 1) -> ReadLayout:
    """Read the partitions' summaries (``summarise``'s rows, any order). ``buckets`` > 1: also
    the first ordering column's approximate quantiles at 1/buckets, 2/buckets, ... (the bounds a
    numbering sort would use)."""
    parts = sorted((p for p in summaries if p["n"]),
                   key=lambda p: (p["first_t"], _s(p["first_s"]), p["part"]))
    rows = sum(p["n"] - p["nulls"] for p in parts)
    nulls = sum(p["nulls"] for p in parts)
    in_order = all(p["sorted"] and p["numbered"] for p in parts) \
        and len({p["part"] for p in parts}) == len(parts) and all(
        (a["last_t"], _s(a["last_s"]), a["part"]) < (b["first_t"], _s(b["first_s"]), b["part"])
        for a, b in zip(parts, parts[1:]))
    starts, total = {}, 0
    for p in parts:
        starts[p["part"]] = total
        total += p["n"]
    latest = [p["latest"] for p in parts if p["latest"] is not None]
    return ReadLayout(
        in_order, starts if in_order else {}, rows, nulls,
        min((p["first_t"] for p in parts), default=None) if in_order else _lo(parts),
        max((p["last_t"] for p in parts), default=None) if in_order else _hi(parts),
        _ties(parts) if in_order else -1, max(latest, default=None),
        _quantiles(parts, buckets),
        tuple((p["part"], starts[p["part"]], p["first_t"], p["last_t"]) for p in parts)
        if in_order else ())


def jvm_summaries(df, time: str, sequence: str | None) -> list[dict]:
    """``summarise``'s rows (what ``layout`` reads) from one aggregation Spark runs without
    Python, for input the user says is in event order (``find(..., ordered=True)``): per read
    partition its rows, null times, first and last time (the least and the greatest: the
    first and last rows read when the partition is sorted, which the engine's workers then
    check row by row, ``job.InOrder``), as first and last sequence the least and the greatest
    (so two partitions meeting at one time are in order only when every sequence value of the
    first is below every one of the second: sure, if stricter than needed), and whether
    ``monotonically_increasing_id()`` numbers it 0, 1, ... No ties, samples or read time: the
    in-place plan needs none. (Plain minima and maxima: Spark's hash aggregation; a minimum
    of (time, sequence) structs took it three times as long.)"""
    from pyspark.sql import functions as F

    rid = F.monotonically_increasing_id()
    seq = F.col(sequence).cast("long") if sequence is not None else F.lit(None).cast("long")
    rows = (df.select(rid.alias("r"), F.col(time).cast("long").alias("t"), seq.alias("s"))
            .groupBy(F.shiftright("r", LOW_BITS).alias("part"))
            .agg(F.count(F.lit(1)).alias("n"), F.count("t").alias("valid"),
                 F.min("r").alias("lo"), F.max("r").alias("hi"), F.min("t").alias("t0"),
                 F.max("t").alias("t1"), F.min("s").alias("s0"), F.max("s").alias("s1"))
            .collect())
    low = (1 << LOW_BITS) - 1
    return [{"part": r["part"], "n": r["n"], "nulls": r["n"] - r["valid"],
             "numbered": r["lo"] & low == 0 and r["hi"] - r["lo"] + 1 == r["n"],
             "sorted": r["n"] == r["valid"],
             "first_t": r["t0"], "first_s": r["s0"], "last_t": r["t1"], "last_s": r["s1"],
             "first_run": 0, "last_run": 0, "tied": 0, "latest": None, "sample": []}
            for r in rows]


def _s(value: int | None) -> int:
    return np.iinfo(np.int64).min if value is None else value


def _lo(parts: list[dict]) -> int | None:
    return min((p["sample"][0] for p in parts if p["sample"]), default=None)


def _hi(parts: list[dict]) -> int | None:
    return max((p["sample"][-1] for p in parts if p["sample"]), default=None)


def _ties(parts: list[dict]) -> int:
    """Rows sharing their first ordering value with another row, over partitions in order: a
    run at a partition's end continues into the next one when the values are equal."""
    tied = 0
    open_t, open_len = None, 0
    for p in parts:
        first_len, last_len, n = p["first_run"], p["last_run"], p["n"]
        if open_t is not None and open_t == p["first_t"]:
            open_len += first_len
        else:
            tied += open_len if open_len >= 2 else 0
            open_t, open_len = p["first_t"], first_len
        if first_len == n:  # one run: it stays open
            continue
        inner = p["tied"] - (first_len if first_len >= 2 else 0) \
            - (last_len if last_len >= 2 else 0)
        tied += (open_len if open_len >= 2 else 0) + inner
        open_t, open_len = p["last_t"], last_len
    return tied + (open_len if open_len >= 2 else 0)


def _quantiles(parts: list[dict], buckets: int) -> tuple[int, ...]:
    """Approximate quantiles 1/buckets, ... of the first ordering column, from each partition's
    order statistics weighted by its rows."""
    if buckets <= 1 or not parts:
        return ()
    parts = [p for p in parts if p["sample"]]
    if not parts:
        return ()
    values = np.concatenate([np.asarray(p["sample"], np.int64) for p in parts])
    weights = np.concatenate([np.full(len(p["sample"]), (p["n"] - p["nulls"]) / len(p["sample"]))
                              for p in parts])
    order = np.argsort(values, kind="stable")
    values, cum = values[order], np.cumsum(weights[order])
    targets = cum[-1] * np.arange(1, buckets) / buckets
    return tuple(int(v) for v in values[np.minimum(np.searchsorted(cum, targets),
                                                   len(values) - 1)])
