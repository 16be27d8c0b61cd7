"""CEQL over Spark DataFrames: ``find(df, query, *, ...)`` and ``explain(df, query, *, ...)``
(the plans in ``cercore.spark.base.plan``, the jobs in ``batch`` and ``streaming``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from cercore.errors import CercoreError
from cercore.input.options import EngineOptions
from cercore.query import CompiledQuery
from cercore.schema import Schema
from cercore.spark.base.frames import Prepared, prepare, require_watermark, spark_options
from cercore.spark.base.plan import (
    KEYED,
    SINGLE,
    TCER,
    SparkPlan,
    absence_lines,
    choose_plan,
    streaming_tcer,
)
from cercore.spark.base.shipping import require_cercore

PLANS = ("auto", TCER, KEYED, SINGLE)


def output_schema(df_schema, time_type: str | None = None):
    """The Spark schema of ``find``'s result for an input DataFrame with ``df_schema``;
    ``time_type`` (``EngineJob.time_type``): the time column holds timestamps of that Spark
    type, and ``start_time``/``end_time`` are reported in it (else as integers)."""
    from pyspark.sql.types import LongType, StructField, StructType

    return StructType([
        StructField("match_id", LongType(), False),
        *_body_fields(df_schema, time_type),
    ])


def _body_fields(df_schema, time_type: str | None = None):
    from pyspark.sql.types import (
        ArrayType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampNTZType,
        TimestampType,
    )

    time = {None: LongType, "timestamp": TimestampType,
            "timestamp_ntz": TimestampNTZType}[time_type]()
    return [
        StructField("partition", StringType(), True),
        StructField("start", LongType(), True),
        StructField("end", LongType(), True),
        StructField("start_time", time, True),
        StructField("end_time", time, True),
        StructField("positions", ArrayType(LongType(), True), True),
        StructField("events", ArrayType(StructType(list(df_schema.fields)), True), True),
    ]


def _plan_for(prep: Prepared, compiled: CompiledQuery, plan: str, streaming: bool
              ) -> SparkPlan:
    if plan not in PLANS:
        raise CercoreError(f"unknown plan {plan!r}; use one of {', '.join(PLANS)}")
    auto = choose_plan(compiled.analysed, prep.time, streaming=streaming,
                       on_error=prep.job.on_error)
    if plan in ("auto", auto.kind) or plan == SINGLE:
        return auto if plan in ("auto", auto.kind) else SparkPlan(
            SINGLE, "single pass requested (always exact)")
    sliced = streaming_tcer(compiled.analysed, prep.time, prep.job.on_error) \
        if streaming and plan == TCER else None
    if sliced is not None:
        return SparkPlan(TCER, sliced.reason + "; requested for the stream", sliced.coordinate,
                         sliced.span_limit, reach=sliced.reach, lookback=sliced.lookback)
    raise CercoreError(f"plan {plan!r} is not exact for this query ({auto.reason}); "
                       f"use plan='auto' ({auto.kind}) or 'single'")



def find(df, query: str, *, schema: Schema | str | None = None,
         options: EngineOptions | None = None, time: str | None = None,
         sequence: str | None = None, time_unit: str | None = None,
         event_types: tuple[str, ...] = (), plan: str = "auto",
         slice_advance: int | None = None, num_partitions: int | None = None,
         watermark: str | None = None, ordered: bool | None = None, **option: Any):
    """The complex events of ``query`` over the events in ``df`` (batch or streaming).

    Engine options (``cercore.EngineOptions``: ``backend`` on the workers, ``on_error``,
    ``type_column``, ``stream_column``; not ``reorder_slack``: Spark orders the events) come as
    keywords, whole as ``options``, or both, as for a local engine.
    ``df`` has one row per event: the event type in ``type_column`` and one column per
    attribute. ``schema`` (a ``cercore.Schema`` or declaration text) is inferred from the
    columns when omitted (see ``cercore.spark.base.frames.infer_schema``). Events are evaluated in
    (``time``, ``sequence``) order — ``time`` defaults to the schema's time attribute; without
    ``sequence``, ties keep the order in which rows are read (batch) or arrive (streaming).
    ``plan``: "auto" (see ``explain``) or a plan to force ("single" is always allowed;
    "tcer"/"keyed" only where exact; a stream runs T-CER, by event time, only when asked).
    ``slice_advance`` sets T-CER's WA (time units or positions). ``num_partitions`` (batch)
    sets how many Spark partitions the engines run in; by default 3 × ``defaultParallelism``
    for the keyed plan, min(slices, 3 ×
    ``defaultParallelism``) for T-CER, 1 for the single pass — never
    ``spark.sql.shuffle.partitions``. A streaming query keeps its state in the partitions
    ``spark.sql.shuffle.partitions`` gives when it first starts: start it inside
    ``cercore.spark.state_partitions(spark)`` to get 3 × ``defaultParallelism``.
    ``watermark`` is required for a streaming DataFrame (batch ignores it): the allowed
    lateness, e.g. "10 seconds" — a row whose time is that far behind the newest time of the
    earlier micro-batches is late: counted (``cercore.spark.late_events``), not evaluated.
    ``ordered`` (batch): True says the DataFrame is read in event order (each Spark partition
    sorted by (``time``, ``sequence``), the partitions in a row, as a log written in time order
    is): a keyed or T-CER plan with WITHIN on the time then runs its engines where Spark reads
    the data, after one pass without Python (none over a plain scan of local Parquet files:
    their footers say where the rows lie, ``ceql.footers``), and a row out of order is an
    ``EventError``; None (default) runs in place when the first pass finds the input so
    ordered, in at least as many partitions as cores (over plain Parquet files, the times
    read on the driver); False never runs in place (``explain`` says when it can).

    A deadline (``φ ; ABSENT(ψ) WITHIN T``) is reported in batch as the local engine's
    ``process`` over the whole DataFrame reports it: once a later event the query reads, of any
    partition, passes it (the end of the input fires nothing); in streaming, once the
    watermark passes it (pending complex events are kept in state across restarts).

    Returns a DataFrame with columns ``match_id`` (64-bit hash of partition, interval and
    positions, Spark's ``xxhash64(coalesce(partition, ''), start, end, positions)``, computed
    with the complex events (``cercore.spark.base.match_id``): equal complex events get equal ids
    in every plan and in SQL's ``cer_find``), ``partition`` (the PARTITION
    BY key as a JSON array of text; null without PARTITION BY, ``slice k`` for a stream's T-CER
    slice k), ``start``/``end`` (positions in
    (time, sequence) order: global in batch, per key in streaming), ``start_time``/``end_time``
    (the time of those events: timestamps for a timestamp time column, else integers in the
    schema's unit), ``positions`` and ``events``
    (the matched rows, every input column, in position order)."""
    if slice_advance is not None and slice_advance < 1:  # both batch and streaming slice by it
        raise ValueError("slice_advance must be a positive integer")
    streaming = df.isStreaming
    if streaming and ordered is not None:
        raise CercoreError("ordered= applies to batch DataFrames: a stream's rows wait for the "
                           "watermark, in event order, whatever order they arrive in")
    prep = prepare(df, query, schema, options=spark_options(options, option), time=time,
                   sequence=sequence, time_unit=time_unit, event_types=tuple(event_types),
                   streaming=streaming)
    compiled = prep.job.compiled()
    chosen = _plan_for(prep, compiled, plan, streaming)
    body = output_schema(df.schema, prep.job.time_type)
    require_cercore(df.sparkSession)  # one tiny job per session: a clear error, not 4 retries
    if streaming:
        from cercore.spark.base.partitions import warn_default_state_partitions
        from cercore.spark.streaming.run import run_streaming

        if num_partitions is not None:
            raise CercoreError("num_partitions= applies to batch DataFrames; a streaming "
                               "query's state partitions are fixed when it first starts: "
                               "start it inside `with cercore.spark.state_partitions(spark, "
                               "n):`")
        require_watermark(watermark, "find")
        warn_default_state_partitions(df.sparkSession, "find")
        out = run_streaming(prep, chosen, body, watermark, slice_advance)
    else:
        from cercore.spark.ceql.batch import run_batch

        out, _, _ = run_batch(prep, chosen, body, slice_advance=slice_advance,
                              num_partitions=num_partitions, ordered=ordered)
    return out


def explain(df_or_schema: Any, query: str, *, schema: Schema | str | None = None,
            options: EngineOptions | None = None, time: str | None = None,
            sequence: str | None = None, time_unit: str | None = None,
            event_types: tuple[str, ...] = (), plan: str = "auto",
            slice_advance: int | None = None, num_partitions: int | None = None,
            watermark: str | None = None, streaming: bool | None = None,
            ordered: bool | None = None, **option: Any) -> str:
    """Which Spark plan ``find`` picks for ``query`` (T-CER / keyed / single pass) and why,
    the order events are evaluated in (by ``time``, then by ``sequence`` or by read order),
    the partitions, then the compiled query's own explanation. ``df_or_schema`` is a
    DataFrame (its schema is ``schema=`` when given, else inferred as ``find`` would, without
    the ``sequence`` column) or a ``Schema`` / declaration text. It takes ``find``'s
    arguments, which mean what they mean for ``find`` (``plan=`` a forced plan, checked as
    ``find`` checks it; ``num_partitions`` is reported; ``watermark`` changes nothing);
    ``streaming`` explains a DataFrame as a stream or as a batch."""
    del watermark  # accepted as find takes it; the plan does not depend on it
    options = spark_options(options, option)
    if isinstance(df_or_schema, (Schema, str)):
        if schema is not None:
            raise CercoreError("explain got two schemas: a declaration as its first argument "
                               "and schema=; pass one")
        schema = Schema.coerce(df_or_schema, **({"time_unit": time_unit} if time_unit else {}))
        compiled = CompiledQuery(query, schema)
        order = time or schema.time_attribute
        chosen = choose_plan(compiled.analysed, order, streaming=bool(streaming),
                             on_error=options.on_error)
        if plan not in PLANS:
            raise CercoreError(f"unknown plan {plan!r}; use one of {', '.join(PLANS)}")
        if plan == SINGLE and chosen.kind != SINGLE:
            chosen = SparkPlan(SINGLE, "single pass requested (always exact)")
        elif plan not in ("auto", chosen.kind, SINGLE):
            raise CercoreError(f"plan {plan!r} is not exact for this query ({chosen.reason}); "
                               f"use plan='auto' ({chosen.kind}) or 'single'")
        inferred = False
    else:
        streaming = df_or_schema.isStreaming if streaming is None else streaming
        prep = prepare(df_or_schema, query, schema, options=options, time=time,
                       sequence=sequence, time_unit=time_unit,
                       event_types=tuple(event_types), streaming=streaming)
        compiled = prep.job.compiled()
        chosen = _plan_for(prep, compiled, plan, streaming)
        order = prep.time
        inferred = schema is None
    plan = chosen
    if ordered is False and plan.in_place is not None:
        plan = dataclasses.replace(plan, in_place=None, in_place_why_not="ordered=False")
    lines = [plan.describe(slice_advance)]
    if plan.history_dependent and plan.kind != TCER:
        lines.append(f"history-dependent: {plan.history_dependent}")
    lines += absence_lines(compiled.analysed, plan, bool(streaming))
    lines.append(_order_line(order, sequence, bool(streaming)))
    if streaming:
        lines.append("streaming: transformWithStateInPandas, one engine state per "
                     + {KEYED: "PARTITION BY key", TCER: "T-CER slice (cleared once the "
                        "watermark passes the slice's end; `partition` names it)",
                        SINGLE: "query (constant key)"}[plan.kind]
                     + "; rows wait in a columnar reorder buffer until the watermark passes "
                     "them, late rows are counted in state (late_events); "
                     "state partitions: spark.sql.shuffle.partitions when the query first "
                     "starts (cercore.spark.state_partitions sets it)")
    else:
        lines.append("partitions: " + (
            f"{num_partitions} (num_partitions=)" if num_partitions and plan.kind != SINGLE
            else {KEYED: "one per key, at most 3 × defaultParallelism",
                  TCER: "one per slice, at most 3 × defaultParallelism (slices dealt "
                        "round-robin)",
                  SINGLE: "1"}[plan.kind] + ("" if plan.kind == SINGLE else
                                             "; num_partitions= overrides")))
        lines.append("jobs: " + _jobs_line(plan))
    if inferred:
        lines.append("schema (inferred from the DataFrame):")
        lines.append("  " + compiled.schema.to_text().replace("\n", "\n  "))
    lines.append(compiled.explain())
    return "\n".join(lines)


def _jobs_line(plan: SparkPlan) -> str:
    """What a batch ``find`` of ``plan`` runs (cercore.spark.ceql.batch)."""
    first = ("one pass over the ordering columns (is the input in event order already; its "
             "extent, null times, ties), ")
    in_place = ("; in place (input in event order): no exchange for the engines, one small "
                "shuffle of the rows within K of each read partition's start, and with "
                "ordered=True the first pass is one aggregation without Python; over a plain "
                "scan of local Parquet files no job before the engines' own (the layout from "
                "the footers, the times read on the driver, the rows within K of each start "
                "evaluated there), and the engines' tasks read the row groups themselves, "
                "one run of equal rows per core"
                if plan.in_place is not None else "")
    if plan.kind == SINGLE:
        return (first + "then one shuffle into one partition, where the worker numbers the "
                "rows (from the read order when the input is in event order); nothing "
                "checkpointed")
    if plan.kind == TCER and plan.coordinate == "time":
        return (first + "then, unless the input is in event order (positions from the read "
                "order), a second job counting the rows per slice, then one shuffle; each "
                "slice's worker numbers its rows from the rows before the slice; nothing "
                "checkpointed" + in_place)
    into = "by key" if plan.kind == KEYED else "into position slices"
    return (first + "then, in event order, positions from the read order and one shuffle "
            f"grouping the rows {into}; otherwise a second job counting the rows per bucket, "
            "then two shuffles: one numbers the rows per bucket of the ordering time, one "
            f"groups them {into}; nothing checkpointed" + in_place)


def _order_line(time: str | None, sequence: str | None, streaming: bool) -> str:
    """How ``find`` orders the events: by time, equal times by the sequence or read order."""
    read = "arrive" if streaming else "are read"
    if time is None:
        return (f"order: by the sequence column {sequence!r}" if sequence else
                f"order: no time and no sequence=, events in the order the rows {read}")
    if sequence:
        return f"order: by {time!r}, equal times by the sequence column {sequence!r}"
    if streaming:
        return f"order: by {time!r}, equal times in the order the rows arrive (no sequence=)"
    return (f"order: by {time!r}, equal times in the order the rows are read (no sequence=: "
            "that order depends on the file layout, and find warns when times tie)")
