"""Batch execution: global positions, then one of the three plans (see ``plan``).

Spark's row order is never trusted: every row gets its global position in (time, seq) order
first (one sort, one small job counting rows per sorted partition), and every engine reads
its rows sorted by that position.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import partial

from cercore.errors import EventError
from cercore.spark.frames import Prepared
from cercore.spark.job import (
    COORD,
    GROUP,
    KEY,
    LOW_BITS,
    POS,
    SEQ,
    STATS_FIELDS,
    TIME,
    partition_statistics,
    run_sorted_groups,
    tied_rows,
)
from cercore.spark.partitions import bucket_values, partition_cap, partition_count
from cercore.spark.plan import KEYED, SINGLE, TCER, SparkPlan


def _stats_struct():
    from pyspark.sql.types import LongType, StructField, StructType

    return StructType([StructField(name, LongType(), True) for name, _ in STATS_FIELDS])


@dataclass
class Positions:
    """What ``with_positions`` learns from its one statistics job."""

    df: object              # the prepared rows with POS, sorted by (time, seq) within partitions
    lo: int | None          # extent of the ordering time (None: untimed or no rows)
    hi: int | None
    rows: int               # rows that get a position
    keys: int | None = None  # distinct PARTITION BY keys, estimated (if asked for)
    tied: int = 0           # rows sharing their time with another row


def with_positions(prep: Prepared, *, count_keys: bool = False) -> Positions:
    """``prep.df`` with a POS column (0-based, in (time, seq) order), the extent of the
    ordering time and the number of rows; with ``count_keys`` also the number of distinct keys
    (HyperLogLog estimate, exact for few keys)."""
    from pyspark.sql import functions as F

    df = prep.df
    timed = prep.time is not None
    parallelism = df.sparkSession.sparkContext.defaultParallelism
    # the sorted, numbered rows are pinned so the count job and the plan see the same order;
    # a range shuffle into a number of partitions chosen here (orderBy would take
    # spark.sql.shuffle.partitions and leave the count to AQE, if enabled)
    order = [TIME, SEQ] if timed else [SEQ]
    ranked = (df.repartitionByRange(partition_cap(parallelism), *order)
              .sortWithinPartitions(*order)
              .withColumn("__cer_mid", F.monotonically_increasing_id()))
    ranked = ranked.localCheckpoint(eager=True)
    part = F.shiftright(F.col("__cer_mid"), LOW_BITS)
    # per sorted partition (in the Python workers, no shuffle): rows, null times, extent and
    # the runs of equal times; plus one row (p = -1) with the number of keys, same job
    stats_df = ranked.select("__cer_mid", *([TIME] if timed else [])).mapInArrow(
        partial(partition_statistics, timed=timed), _stats_struct())
    if count_keys:
        stats_df = stats_df.unionByName(
            ranked.agg(F.approx_count_distinct(KEY).alias("keys"))
            .withColumn("p", F.lit(-1).cast("long")), allowMissingColumns=True)
    rows = [r.asDict() for r in stats_df.collect()]
    stats = [r for r in rows if r["p"] != -1]
    keys = next((r["keys"] for r in rows if r["p"] == -1), None)
    nulls = sum(r["nulls"] for r in stats)
    if nulls:
        if prep.job.on_error == "raise":
            raise EventError(f"time column {prep.time!r} is null in {nulls} row(s); cercore "
                             "orders events by it (on_error='skip' drops them)",
                             field=prep.time)
        warnings.warn(f"cercore.spark: skipped {nulls} event(s) with a null {prep.time!r}",
                      stacklevel=4)
        ranked = ranked.filter(F.col(TIME).isNotNull())
    total_rows = sum(r["n"] for r in stats) - nulls
    tied = tied_rows(stats) if timed else 0
    if tied and prep.sequence is None:
        warnings.warn(f"cercore.spark: {tied} of {total_rows} events ({tied / total_rows:.0%}) "
                      f"share their {prep.time!r} with another event, and without sequence= "
                      "they are evaluated in the order Spark reads them, which can change with "
                      "the file layout and give other complex events; pass sequence= (a "
                      "column ordering events with equal times)", stacklevel=4)
    offsets, total = {}, -nulls  # null times sort first: positions start after them
    for r in sorted(stats, key=lambda r: r["p"]):
        offsets[r["p"]] = total
        total += r["n"]
    lows = [r["lo"] for r in stats if r["lo"] is not None]
    highs = [r["hi"] for r in stats if r["hi"] is not None]
    lo, hi = (min(lows), max(highs)) if lows else (None, None)
    mapping = F.create_map(*[F.lit(x) for kv in offsets.items() for x in kv]) if offsets \
        else F.create_map(F.lit(0), F.lit(0))
    pos = (F.element_at(mapping, part) + (F.col("__cer_mid").bitwiseAND((1 << LOW_BITS) - 1)))
    return Positions(ranked.withColumn(POS, pos.cast("long")).drop("__cer_mid"), lo, hi,
                     total, keys, tied)


def default_advance(plan: SparkPlan, lo: int | None, hi: int | None, rows: int,
                    parallelism: int) -> int:
    """WA: at least D_C (so each event lies in at most two slices), and large enough that
    the data makes about four slices per core."""
    if plan.coordinate == "position":
        lo, hi = 0, max(rows - 1, 0)
    extent = 0 if lo is None else hi - lo + 1
    return max(plan.span_limit, -(-extent // max(4 * parallelism, 1)))


def slice_range(plan: SparkPlan, lo: int | None, hi: int | None, rows: int, advance: int
                ) -> tuple[int, int]:
    """The first and last T-CER slice index k holding an event ((0, -1): no events)."""
    if plan.coordinate == "position":
        lo, hi = (0, rows - 1) if rows else (None, None)
    if lo is None:
        return 0, -1
    size = plan.slice_size(advance)
    return (lo - size) // advance + 1, hi // advance  # k·WA > c − WS and k·WA ≤ c


def run_batch(prep: Prepared, plan: SparkPlan, out_struct, *, slice_advance: int | None,
              num_partitions: int | None):
    """The complex events of a batch DataFrame, as a DataFrame with schema ``out_struct``
    (without match_id). Returns (DataFrame, slice advance used or None, partitions).

    Partitions (unless ``num_partitions`` says): keyed, min(keys, PER_CORE × cores); T-CER,
    min(slices, PER_CORE × cores), slices dealt round-robin; single, 1. Each is a
    ``repartition(n, ...)`` — an exchange AQE keeps at n (it coalesces only the shuffles it
    places itself)."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema

    if num_partitions is not None and num_partitions < 1:
        raise ValueError("num_partitions must be a positive integer")
    stats = with_positions(prep, count_keys=plan.kind == KEYED and num_partitions is None)
    df = stats.df
    spark = df.sparkSession
    parallelism = spark.sparkContext.defaultParallelism
    advance = None
    if plan.kind == KEYED:
        n = num_partitions or partition_count(KEYED, parallelism, stats.keys)
        df = df.filter(F.col(KEY).isNotNull()).withColumn(GROUP, F.col(KEY))
        df = df.repartition(n, GROUP)
    elif plan.kind == TCER:
        advance = slice_advance or default_advance(plan, stats.lo, stats.hi, stats.rows,
                                                   parallelism)
        if advance < 1:
            raise ValueError("slice_advance must be a positive integer")
        first_k, last_k = slice_range(plan, stats.lo, stats.hi, stats.rows, advance)
        n = num_partitions or partition_count(TCER, parallelism, last_k - first_k + 1)
        size = plan.slice_size(advance)
        coord = F.col(TIME) if plan.coordinate == "time" else F.col(POS)
        df = df.withColumn(COORD, coord.cast("long"))
        first = _floor_div(f"({COORD} - {size})", advance) + F.lit(1)  # k·WA > c − WS
        last = _floor_div(COORD, advance)                               # k·WA ≤ c
        df = df.withColumn(GROUP, F.explode(F.sequence(first, last)))
        # slice k to partition (k - first_k) mod n: a value that Spark's hash sends there
        buckets = F.array(*[F.lit(v) for v in bucket_values(n)])
        slot = F.pmod(F.col(GROUP) - F.lit(first_k), F.lit(n)).cast("int") + F.lit(1)
        df = df.repartition(n, F.element_at(buckets, slot))
    else:
        assert plan.kind == SINGLE
        n = 1
        df = df.withColumn(GROUP, F.lit(0).cast("long")).repartition(1)
    df = df.sortWithinPartitions(GROUP, POS)
    tz = spark.conf.get("spark.sql.session.timeZone")
    arrow_schema = to_arrow_schema(out_struct, timezone=tz)
    body = partial(_map_body, job=prep.job, slice_advance=advance, out_schema=arrow_schema)
    return df.mapInArrow(body, out_struct), advance, n


def _map_body(batches, job, slice_advance, out_schema):
    return run_sorted_groups(batches, job, slice_advance, out_schema)


def _floor_div(sql: str, divisor: int):
    """⌊sql / divisor⌋ in exact long arithmetic (no doubles: times may be nanoseconds);
    ``sql`` is an expression over the hidden (plain-named) columns."""
    from pyspark.sql import functions as F

    return F.expr(f"(({sql}) - pmod({sql}, {int(divisor)}L)) div {int(divisor)}L")
