"""Batch execution: global positions, then one of the three plans (see ``plan``).

Spark's row order is never trusted: events are evaluated in (time, sequence, read order), and
every reported position is the event's rank in that order over the whole DataFrame. Nothing is
pinned (no ``localCheckpoint``, which loses the job with an executor and holds its copy until
garbage collection): positions follow from the data alone, so a recomputed task numbers its rows
as the first attempt did.

* One pass reads only the ordering columns first, one summary per Spark partition
  (``read_order``): the extent, the null times, bucket bounds, ties, and whether the input is
  in event order already (each partition sorted, the partitions in a row). If it is, every
  plan takes positions from the read order (``numbered_in_place``) and shuffles once. If not,
  a second job counts the rows per bucket of the ordering time or per slice (and the rows
  sharing their time, when no ``sequence=`` orders them), and:
* **single** and **T-CER by time** then shuffle once: every engine run (the whole stream, or a
  slice [k·WA, k·WA + WS)) is a contiguous stretch of the global order whose first position is
  the number of rows before it (the counts per slice give it), so the worker numbers its rows
  itself.
* **keyed** and **T-CER by position** number the rows first: one shuffle puts each bucket of
  the ordering time into its own partition, sorted, where position = rows in earlier buckets +
  row index (JVM only); then the plan's own shuffle groups them by key or position slice.

The in-place plan (``run_in_place``) over plain Parquet files the user says are in order is
the one exception to "nothing pinned": the footers give the layout (``footers``), and the
complex events crossing read partitions are found on the driver, in ``find``, and carried in
the plan as a local relation; every task then checks that it reads what the footers said.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

import pyarrow as pa

from cercore.errors import EventError
from cercore.spark.base.frames import Prepared
from cercore.spark.base.job import (
    COORD,
    GROUP,
    KEY,
    LOW_BITS,
    POS,
    PREFIX,
    SEQ,
    TIME,
    ReadPartitions,
    run_sorted_groups,
)
from cercore.spark.base.partitions import (
    floor_div,
    into_partitions,
    partition_cap,
    partition_count,
    slices_of,
)
from cercore.spark.base.plan import KEYED, TCER, SparkPlan
from cercore.spark.base.session import parallelism as session_parallelism
from cercore.spark.ceql.footers import FooterRows, parquet_layout
from cercore.spark.ceql.read_order import (
    SUMMARY_DDL,
    ReadLayout,
    jvm_summaries,
    layout,
    read_columns,
    summarise,
    summarise_read,
)

RID = "__cer_rid"   # read order: the last tie-breaker when a sequence column may tie
BUCKET = "__cer_bucket"  # bucket of the ordering time (numbering before the plan's shuffle)


@dataclass
class Extent:
    """What the first statistics job learns about the ordering column."""

    rows: int               # rows with an ordering value
    nulls: int              # rows without one (timed only)
    lo: int | None          # extent of the ordering column (None: no rows)
    hi: int | None
    cuts: tuple[int, ...] = ()  # bucket bounds: bucket b holds cuts[b-1] <= value < cuts[b]
    latest: int | None = None  # under a deadline: the latest time of the events the query reads


def order_columns(prep: Prepared) -> list[str]:
    """The columns that order events: time (if any), sequence, then read order when the
    sequence is the user's (it may tie; the generated one is the read order already)."""
    cols = [TIME] if prep.time is not None else []
    return cols + [SEQ] + ([RID] if prep.sequence is not None else [])


def ordering_column(prep: Prepared) -> str:
    """The first column of the order: the time, or the sequence when there is none."""
    return TIME if prep.time is not None else SEQ


def measure(prep: Prepared, *, buckets: int) -> tuple[Extent, ReadLayout]:
    """The first statistics job: one pass over the ordering columns in read order
    (``read_order.summarise``, one row per Spark partition), which says whether the input is
    in event order already (``ReadLayout.in_order``), and the extent of the ordering column,
    ``buckets`` − 1 bucket bounds and, under a deadline, the latest read time. (Not the number
    of keys: the key text is the dearest column to compute, and counting its distinct values
    cost more than the empty partitions of a plan with fewer keys than cores.)"""
    from pyspark.sql import functions as F

    none = F.lit(None).cast("long")
    second = SEQ if prep.time is not None and prep.sequence is not None else None
    latest = read_time(prep)
    cols = [F.monotonically_increasing_id().alias(f"{PREFIX}r"),
            F.col(ordering_column(prep)).cast("long").alias(f"{PREFIX}a"),
            (F.col(second).cast("long") if second else none).alias(f"{PREFIX}b"),
            (none if latest is None else latest).alias(f"{PREFIX}c")]
    body = summarise
    if latest is not None and prep.job.on_error != "raise":  # skipped events pass no deadline
        cols += [F.col(c) for c in read_columns(prep.job)]
        body = partial(summarise_read, job=prep.job)
    summaries = prep.df.select(*cols).mapInArrow(body, SUMMARY_DDL).collect()
    lay = layout([r.asDict() for r in summaries], buckets)
    cuts = tuple(sorted(set(lay.quantiles) - {lay.lo, None}))  # bucket 0 not empty
    if prep.time is None:  # a null sequence value sorts first, in bucket 0
        return Extent(lay.rows + lay.nulls, 0, lay.lo, lay.hi, cuts, lay.latest), lay
    return Extent(lay.rows, lay.nulls, lay.lo, lay.hi, cuts, lay.latest), lay


def read_time(prep: Prepared):
    """Under a deadline (``φ ; ABSENT(ψ) WITHIN T``): a column holding each row's time on the
    deadline's attribute where the query reads the row and its type carries that attribute
    (null elsewhere) -- the rows whose time the local engine's event time follows, so its
    maximum is how far event time gets over the whole input. None without a deadline. (When
    the engine skips bad events, the statistics pass also leaves out the rows its decoder
    skips: ``read_order.summarise_read``.)"""
    from pyspark.sql import functions as F

    job = prep.job
    analysed = job.compiled().analysed
    deadline = analysed.deadline
    if deadline is None:
        return None
    schema = prep.schema
    attr = deadline.attribute
    source = TIME if attr == prep.time else dict(job.engine_sources)[attr]
    names = schema.type_names
    carriers = [names[i] for i in sorted(analysed.visible_types)
                if schema.event_types[names[i]].has(attr)]
    read = F.col(job.type_source).isin(carriers)
    if job.stream_column is not None and analysed.from_streams is not None:
        names = [n for n, i in schema.stream_ids.items() if i in analysed.from_streams]
        stream = F.col(job.stream_column)
        read = read & (stream.isNull() | stream.isin(names))
    return F.when(read, F.col(source).cast("long"))


def bucket_of(column: str, cuts: tuple[int, ...]):
    """The bucket of ``column``'s value: how many cuts are at or below it."""
    from pyspark.sql import functions as F

    if not cuts:
        return F.lit(0)
    return F.aggregate(F.array(*[F.lit(c) for c in cuts]), F.lit(0),
                       lambda acc, c: acc + F.when(F.col(column) >= c, 1).otherwise(0))


def counts_by(df, by, *, tie_check: bool) -> tuple[dict[int, int], int]:
    """The second statistics job: exact rows per value of ``by`` (a function of the ordering
    column) and, with ``tie_check``, the rows sharing their time with another row."""
    from pyspark.sql import functions as F

    if not tie_check:
        rows = df.groupBy(by.alias("b")).agg(F.count(F.lit(1)).alias("n")).collect()
        return {r["b"]: r["n"] for r in rows}, 0
    per_time = df.groupBy(TIME).agg(F.count(F.lit(1)).alias("n"))
    rows = (per_time.groupBy(by.alias("b"))
            .agg(F.sum("n").alias("n"),
                 F.sum(F.when(F.col("n") >= 2, F.col("n")).otherwise(0)).alias("tied"))
            .collect())
    return {r["b"]: r["n"] for r in rows}, sum(r["tied"] for r in rows)


def starts_of(counts: dict[int, int], first: int, last: int) -> dict[int, int]:
    """For each group g in [first, last], the rows of the groups before it (``counts`` holds
    the rows per group, groups below ``first`` included)."""
    out = {}
    total = sum(n for g, n in counts.items() if g < first)
    for g in range(first, last + 1):
        out[g] = total
        total += counts.get(g, 0)
    return out


def checked_rows(prep: Prepared, extent: Extent):
    """``prep.df`` without the rows that have no ordering time (an error when
    ``on_error="raise"``, a warning with the count otherwise)."""
    from pyspark.sql import functions as F

    if not extent.nulls:
        return prep.df
    if prep.job.on_error == "raise":
        raise EventError(f"time column {prep.time!r} is null in {extent.nulls} row(s); cercore "
                         "orders events by it (on_error='skip' drops them)", field=prep.time)
    warnings.warn(f"cercore.spark: skipped {extent.nulls} event(s) with a null {prep.time!r}",
                  stacklevel=4)
    return prep.df.filter(F.col(TIME).isNotNull())


def warn_ties(prep: Prepared, tied: int, rows: int) -> None:
    if tied and prep.sequence is None:
        warnings.warn(f"cercore.spark: {tied} of {rows} events ({tied / rows:.0%}) share "
                      f"their {prep.time!r} with another event, and without sequence= they "
                      "are evaluated in the order Spark reads them, which can change with the "
                      "file layout and give other complex events; pass sequence= (a column "
                      "ordering events with equal times)", stacklevel=4)


def numbered(df, prep: Prepared, extent: Extent, counts: dict[int, int]):
    """``df`` with POS, each bucket sorted in its own partition: POS = rows of the earlier
    buckets + the row's index in its partition (``monotonically_increasing_id``'s low bits),
    so the numbering is the JVM's, and the same on every recomputation."""
    from pyspark.sql import functions as F

    n = len(extent.cuts) + 1
    starts = starts_of(counts, 0, n - 1)
    df = df.withColumn(BUCKET, bucket_of(ordering_column(prep), extent.cuts))
    df = into_partitions(df, n, F.col(BUCKET)).sortWithinPartitions(*order_columns(prep))
    base = F.create_map(*[x for b, start in starts.items()
                          for x in (F.lit(b).cast("int"), F.lit(start).cast("long"))])
    index = F.monotonically_increasing_id().bitwiseAND((1 << LOW_BITS) - 1)
    return df.withColumn(POS, (F.element_at(base, F.col(BUCKET)) + index).cast("long")) \
        .drop(BUCKET)


def numbered_in_place(df, starts: dict[int, int]):
    """``df`` — read in event order already (``ReadLayout.in_order``: each Spark partition
    sorted, the partitions in a row) — with POS = the rows of the partitions before the row's
    own (``starts``) + its index in its partition: both halves of
    ``monotonically_increasing_id()``, so no sort and no shuffle. (Computed first, on the rows
    the layout pass read: a filter before it would shift the indices.)"""
    from pyspark.sql import functions as F

    rid = F.monotonically_increasing_id()
    base = long_map(starts)
    index = rid.bitwiseAND((1 << LOW_BITS) - 1)
    return df.withColumn(POS, (F.element_at(base, F.shiftright(rid, LOW_BITS)) + index)
                         .cast("long"))


def long_map(mapping: dict[int, int]):
    """``mapping`` as a Spark map literal, bigint to bigint (looked up with ``element_at``)."""
    from pyspark.sql import functions as F

    pairs = ", ".join(f"{int(k)}L, {int(v)}L" for k, v in mapping.items())
    return F.expr(f"CAST(map({pairs}) AS MAP<BIGINT, BIGINT>)")  # (one call to the JVM)


def default_advance(plan: SparkPlan, lo: int | None, hi: int | None, rows: int,
                    parallelism: int) -> int:
    """WA: at least D_C (+ the spans of absences: so each event lies in at most two slices),
    and large enough that the data makes about four slices per core."""
    if plan.coordinate == "position":
        lo, hi = 0, max(rows - 1, 0)
    extent = 0 if lo is None else hi - lo + 1
    reach = plan.span_limit + plan.reach + plan.lookback
    return max(reach, -(-extent // max(4 * parallelism, 1)))


def slice_range(plan: SparkPlan, lo: int | None, hi: int | None, rows: int, advance: int
                ) -> tuple[int, int]:
    """The first and last T-CER slice index k holding an event ((0, -1): no events)."""
    if plan.coordinate == "position":
        lo, hi = (0, rows - 1) if rows else (None, None)
    if lo is None:
        return 0, -1
    size = plan.slice_size(advance)
    return (lo - size) // advance + 1, hi // advance  # k·WA > c − WS and k·WA ≤ c


def in_place_bounds(read: ReadLayout, offset: int
                    ) -> tuple[dict[int, tuple[int, int | None]], dict, dict, dict] | None:
    """For the in-place plan over the read partitions ``read.parts`` (in event order) with
    K = ``offset``: each partition's (first position, previous partition's last time), and
    the boundary rows -- a row of partition q belongs to boundary q when its time ≤ the
    previous partition's last time + K (``head``: q → that bound), and to the boundary of the
    next partition r when its time ≥ r's first time − K (``tail``: q → that bound, ``nxt``:
    q → r). None when some boundary's rows would reach past the two partitions beside it
    (partitions shorter in time than K): then the plan is the shuffled one."""
    parts = read.parts
    bounds, head, tail, nxt = {}, {}, {}, {}
    for i, (part, start, first, _) in enumerate(parts):
        previous = parts[i - 1] if i else None
        bounds[part] = (start, None if previous is None else previous[3])
        if previous is not None:
            head[part] = previous[3] + offset
            tail[previous[0]], nxt[previous[0]] = first - offset, part
            before = parts[i - 2][3] if i >= 2 else None
            after = parts[i + 1][2] if i + 1 < len(parts) else None
            if before is not None and before >= first - offset or \
                    after is not None and after <= previous[3] + offset:
                return None
    return bounds, head, tail, nxt


def run_in_place(prep: Prepared, plan: SparkPlan, read: ReadLayout, out_struct, *,
                 num_partitions: int | None, check_order: bool,
                 footers: FooterRows | None = None):
    """The in-place plan (``plan`` module doc) over input in event order (``read``): one
    engine per read partition over the rows as Spark reads them, and a boundary stage over
    the rows within K of each boundary. None when the partitions are too short for it
    (``in_place_bounds``). ``check_order``: the workers check that the rows come in order
    (the user said so; nothing has checked it yet). ``footers``: ``read`` came from the
    Parquet footers (``footers`` module): the tasks check it, and the boundary stage runs
    here, on the driver, over the rows the footers locate, when they are few."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema

    spark = prep.df.sparkSession
    arrow_schema = to_arrow_schema(out_struct, timezone=spark.conf.get(
        "spark.sql.session.timeZone"))
    check: str | None | bool = False  # (job.InOrder: False no check, else the sequence)
    if check_order:
        check = None if prep.sequence is None else SEQ
    key_text = key_in_worker(prep)
    if footers is not None and key_text and footers.readable:
        out = read_by_workers(prep, plan, read, footers, arrow_schema, out_struct, check)
        if out is not None:
            return out
    laid = in_place_bounds(read, plan.in_place)
    if laid is None:
        return None
    bounds, head, tail, nxt = laid
    placed = numbered_in_place(prep.df, read.starts).withColumn(
        GROUP, F.shiftright(F.monotonically_increasing_id(), LOW_BITS))
    columns = worker_columns(prep, placed.columns, key_text=key_text)
    if check == SEQ:
        columns.append(SEQ)
    expected = None if footers is None else {
        part: (footers.layout.rows(part), first, last) for part, _, first, last in read.parts}
    rule = ReadPartitions(plan.in_place, bounds, expected=expected)
    in_place = placed.select(*columns).mapInArrow(
        partial(run_sorted_groups, job=prep.job, slices=None, out_schema=arrow_schema,
                read_partitions=rule, in_order=check), out_struct)
    if not head:  # one read partition: nothing crosses
        return in_place
    crossing_rule = ReadPartitions(plan.in_place, bounds, crossing=True)
    edge_rows = None if footers is None or KEY in columns else footers.boundary_rows(
        read.parts, plan.in_place, worker_columns(prep, placed.columns, key_text=True))
    if edge_rows is not None:  # few: their engines run here
        return with_crossing(in_place, edge_rows, prep, crossing_rule, arrow_schema, out_struct)
    t, part = F.col(TIME), F.col(GROUP)
    own, ahead = F.element_at(long_map(head), part), F.element_at(long_map(tail), part)
    zones = F.filter(F.array(F.when(t <= own, part),
                             F.when(t >= ahead, F.element_at(long_map(nxt), part))),
                     lambda z: z.isNotNull())
    # (no filter into the reader: the rows keep the read partition and position the first
    # pass and the in-place stage gave them -- a filter pushed below a shuffle in the user's
    # DataFrame would move rows to other partitions)
    edges = (placed.filter((t <= own) | (t >= ahead))
             .withColumn(GROUP, F.explode(zones)))
    n = num_partitions or min(len(head), partition_count(KEYED, session_parallelism(spark)))
    edges = edges.repartition(n, GROUP).sortWithinPartitions(GROUP, POS)
    crossing = edges.select(*worker_columns(prep, edges.columns)).mapInArrow(
        partial(run_sorted_groups, job=prep.job, slices=None, out_schema=arrow_schema,
                read_partitions=crossing_rule), out_struct)
    return in_place.unionByName(crossing)


def read_by_workers(prep: Prepared, plan: SparkPlan, read: ReadLayout, footers: FooterRows,
                    arrow_schema, out_struct, check: str | None | bool):
    """The in-place plan with no Spark scan and no second stage: the row groups the footers
    locate, cut into runs of equal rows (one per core), each read by a worker with Arrow and
    evaluated there (the hidden columns computed as the typed ``cer_find`` computes them);
    the worker of each run but the first then reads the rows of the boundary before it and
    reports the complex events crossing it. None when that cannot be (runs shorter than K).

    Measured: Spark's reader and its rows' way to Python cost the in-place plan about as much
    as the engines; Spark splits a file by bytes, here 5 : 3 between two cores; and the
    boundary stage on the driver (its rows read there, its complex events a local relation
    of its own tasks) kept the plan from speeding up from one core to two."""
    spark = prep.df.sparkSession
    n = max(1, session_parallelism(spark))
    footers, parts = footers.chunked(read.parts, n)
    read = dataclasses.replace(read, parts=parts, starts={p: s for p, s, _, _ in parts})
    laid = in_place_bounds(read, plan.in_place)
    if laid is None:
        return None
    bounds = laid[0]
    names = footers.prepared_names()
    wanted = worker_columns(prep, names, key_text=True) + ([SEQ] if check == SEQ else [])
    expected = {p: (footers.layout.rows(p), first, last) for p, _, first, last in parts}
    rule = ReadPartitions(plan.in_place, bounds, expected=expected)
    crossing = ReadPartitions(plan.in_place, bounds, crossing=True)
    edges = {after[0]: (before, after) for before, after in zip(parts, parts[1:])}
    return spark.range(0, len(parts), 1, len(parts)).mapInArrow(
        partial(run_footer_runs, footers=footers, starts=read.starts, wanted=wanted,
                edges=edges, crossing=crossing, job=prep.job, slices=None,
                out_schema=arrow_schema, read_partitions=rule, in_order=check), out_struct)


def run_footer_runs(ids: Iterator[pa.RecordBatch], footers: FooterRows, starts: dict[int, int],
                    wanted: list[str], edges: dict[int, tuple], crossing: ReadPartitions,
                    **run) -> Iterator[pa.RecordBatch]:
    """mapInArrow body of ``read_by_workers``: for each run index in ``ids``, its rows read
    here and evaluated (``run_sorted_groups``), then the rows of the boundary before it
    (``edges``: run -> the runs beside it, as ``ReadLayout.parts``) for the complex events
    that cross it (``crossing``)."""
    for rb in ids:
        for part in rb.column(0).to_pylist():
            yield from run_sorted_groups(footers.batches(part, starts[part], wanted), **run)
            edge = footers.boundary(*edges[part], crossing.offset, wanted) \
                if part in edges else None
            if edge is not None:
                yield from run_sorted_groups(
                    iter(edge.to_batches()), job=run["job"], slices=None,
                    out_schema=run["out_schema"], read_partitions=crossing)


def with_crossing(in_place, edge_rows: pa.Table, prep: Prepared, crossing_rule, arrow_schema,
                  out_struct):
    """``in_place`` and the complex events crossing read partitions, found here, on the
    driver, over the boundary rows ``edge_rows`` (``FooterRows.boundary_rows``)."""
    found = pa.Table.from_batches(list(run_sorted_groups(
        iter(edge_rows.to_batches()), job=prep.job, slices=None, out_schema=arrow_schema,
        read_partitions=crossing_rule)), schema=arrow_schema)
    if not found.num_rows:
        return in_place
    spark = prep.df.sparkSession
    return in_place.unionByName(spark.createDataFrame(found, schema=out_struct))


def run_batch(prep: Prepared, plan: SparkPlan, out_struct, *, slice_advance: int | None,
              num_partitions: int | None, ordered: bool | None = None):
    """The complex events of a batch DataFrame, as a DataFrame with schema ``out_struct``
    (``ceql.output_schema``). Returns (DataFrame, slice advance used or None, partitions).

    Partitions (unless ``num_partitions`` says): keyed, PER_CORE × cores; T-CER,
    min(slices, PER_CORE × cores), slices dealt round-robin; single, 1. Each is a
    ``repartition(n, ...)`` — an exchange AQE keeps at n (it coalesces only the shuffles it
    places itself)."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema

    if num_partitions is not None and num_partitions < 1:
        raise ValueError("num_partitions must be a positive integer")
    spark = prep.df.sparkSession
    parallelism = session_parallelism(spark)
    if ordered and plan.in_place is not None:  # the user's word: the footers or one pass
        footers = footer_rows(prep)  # without Python
        summaries = None if footers is None else footers.summaries()
        if summaries is None:
            footers = None
            summaries = jvm_summaries(prep.df, TIME, SEQ if prep.sequence else None)
        read = layout(summaries)
        if read.nulls == 0:
            if not read.in_order:
                raise EventError("ordered=True, but the input is not in event order: the "
                                 "Spark partitions it is read in overlap in time; drop "
                                 "ordered=True and find sorts the events", field=prep.time)
            out = run_in_place(prep, plan, read, out_struct, num_partitions=num_partitions,
                               check_order=True, footers=footers)
            if out is not None:
                return out, None, len(read.parts)
    if ordered is None and plan.in_place is not None:  # the footers may prove the order
        found = in_place_by_footers(prep, plan, out_struct, parallelism, num_partitions)
        if found is not None:
            out, read = found
            warn_ties(prep, read.tied, read.rows)
            return out, None, len(read.parts)
    numbers_first = plan.kind == KEYED or plan.kind == TCER and plan.coordinate == "position"
    extent, read = measure(prep, buckets=partition_cap(parallelism) if numbers_first else 1)
    if ordered is not False and plan.in_place is not None and read.in_order \
            and len(read.parts) >= parallelism:
        out = run_in_place(prep, plan, read, out_struct, num_partitions=num_partitions,
                           check_order=False)
        if out is not None:
            warn_ties(prep, read.tied, extent.rows)
            return out, None, len(read.parts)
    tie_check = prep.time is not None and prep.sequence is None
    advance, starts = None, None
    if plan.kind == TCER:
        advance = slice_advance or default_advance(plan, extent.lo, extent.hi, extent.rows,
                                                   parallelism)
        first_k, last_k = slice_range(plan, extent.lo, extent.hi, extent.rows, advance)
    if read.in_order:  # positions from the read order: no counting job, sort or shuffle
        df, tied = numbered_in_place(prep.df, read.starts), read.tied
    else:
        df = checked_rows(prep, extent)
        if prep.sequence is not None:
            df = df.withColumn(RID, F.monotonically_increasing_id())
        if numbers_first:
            counts, tied = counts_by(df, bucket_of(ordering_column(prep), extent.cuts),
                                     tie_check=tie_check)
            df = numbered(df, prep, extent, counts)
        elif plan.kind == TCER:  # each slice's first position from the counts per slice
            counts, tied = counts_by(df, F.expr(floor_div(TIME, advance)), tie_check=tie_check)
            starts = starts_of(counts, first_k, last_k)
        else:
            tied = counts_by(df, F.lit(0), tie_check=True)[1] if tie_check else 0
            starts = {0: 0}
    warn_ties(prep, tied, extent.rows)
    if plan.kind == KEYED:
        n = num_partitions or partition_count(KEYED, parallelism)
        # a 64-bit hash of the key, not a second copy of its text: two keys sharing a hash
        # share one engine, which keeps PARTITION BY keys apart itself
        df = df.filter(F.col(KEY).isNotNull()).withColumn(GROUP, F.xxhash64(KEY))
        df = df.repartition(n, GROUP).sortWithinPartitions(GROUP, POS)
    elif plan.kind == TCER:
        n = num_partitions or partition_count(TCER, parallelism, last_k - first_k + 1)
        coord = F.col(TIME) if plan.coordinate == "time" else F.col(POS)
        df = df.withColumn(COORD, coord.cast("long"))
        df = df.withColumn(GROUP, slices_of(COORD, plan.slice_size(advance), advance))
        # slice k to partition (k - first_k) mod n
        df = into_partitions(df, n, F.pmod(F.col(GROUP) - F.lit(first_k), F.lit(n)))
        df = df.sortWithinPartitions(GROUP, *(order_columns(prep) if starts is not None
                                              else [POS]))
    else:  # (a shuffle, not coalesce(1): that would number rows in a single task)
        n = 1
        df = (df.withColumn(GROUP, F.lit(0).cast("long")).repartition(1)
              .sortWithinPartitions(*(order_columns(prep) if starts is not None else [POS])))
    df = df.select(*worker_columns(prep, df.columns))
    tz = spark.conf.get("spark.sql.session.timeZone")
    arrow_schema = to_arrow_schema(out_struct, timezone=tz)
    slices = None if advance is None else (advance, plan.keep_offset)
    body = partial(run_sorted_groups, job=prep.job, slices=slices, out_schema=arrow_schema,
                   starts=starts, until=extent.latest)
    return df.mapInArrow(body, out_struct), advance, n


def in_place_by_footers(prep: Prepared, plan: SparkPlan, out_struct, parallelism: int,
                        num_partitions: int | None):
    """The in-place plan and its layout when the footers of plain Parquet files locate the
    rows and the time of every row, read here, proves them in event order (the statistics
    pass's test, without a Spark job); else None."""
    footers = footer_rows(prep)
    summaries = None if footers is None else footers.summaries(full=True)
    if summaries is None:
        return None
    read = layout(summaries)
    if read.nulls or not read.in_order or len(read.parts) < parallelism and not (
            key_in_worker(prep) and footers.readable):  # (the workers read runs per core)
        return None
    out = run_in_place(prep, plan, read, out_struct, num_partitions=num_partitions,
                       check_order=False, footers=footers)
    return None if out is None else (out, read)


def footer_rows(prep: Prepared) -> FooterRows | None:
    """The rows of ``prep``'s input located by its Parquet footers (``footers`` module), or
    None when the input is not a plain scan of local Parquet files."""
    found = None if prep.source is None else parquet_layout(prep.source)
    if found is None or prep.columns is None:
        return None
    tz = prep.source.sparkSession.conf.get("spark.sql.session.timeZone")
    return FooterRows(found, prep.columns, to_arrow_schema_of(prep.source), tz, prep.sequence)


def key_in_worker(prep: Prepared) -> bool:
    """Whether the workers can write the partition key text themselves, for the end rows of
    complex events only (``EngineJob.key``), exactly as Spark's SQL would write it for every
    row (measured: a JSON text per row cost the in-place plan a fifth of its time)."""
    types = {f.name: f.type for f in to_arrow_schema_of(prep.df)}
    return prep.job.key is not None and prep.job.key.arrow_exact(types)


def to_arrow_schema_of(df):
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(df.schema, timezone=df.sparkSession.conf.get(
        "spark.sql.session.timeZone"))


def worker_columns(prep: Prepared, available: list[str], *, key_text: bool = False
                   ) -> list[str]:
    """The columns the workers read (the engine's, the output's, the grouping), in
    ``available``'s order: every row crosses from the JVM to Python, so nothing more.
    ``key_text``: the workers write the key text (``key_in_worker``): its sources instead."""
    job = prep.job
    wanted = {job.type_source, GROUP, POS, COORD, *job.event_columns,
              *(src for _, src in job.engine_sources),
              *([TIME] if job.has_time else []),
              *([job.stream_column] if job.stream_column else []),
              *(job.key.sources if key_text else [KEY])}
    return [c for c in available if c in wanted]

