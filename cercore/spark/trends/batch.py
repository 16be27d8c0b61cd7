"""Trend aggregation on Spark, batch path: every event goes to the runs (chunks of consecutive
windows) that need it, a shuffle by GROUP BY values and run sorts each Spark partition by (run,
time, input position), and one local trend engine per run, fed batch by batch
(``cercore.spark.trends.job``), emits the rows of its windows. Results equal
``CompiledTrendQuery.run`` on the same events.

    rows_df = aggregate(events_df, query)            # a DataFrame, one row per (window, group)
    rows = aggregate_rows(events_df, query)          # collected: the rows query.run returns

``query`` is a compiled trend query or its text (then ``schema=`` is needed). A streaming
DataFrame runs through ``cercore.spark.trends.streaming``.

Each (window, GROUP BY group) is computed whole by one engine: the GROUP BY values decide the
Spark partition, and a run holds every event of its windows. There are about four runs per core
(each at least as many windows as one event spans, so an event is in at most two runs), so a
query without GROUP BY is parallel too. Without a window there is one run (one per Spark
partition), in one Spark partition when there is no GROUP BY either. Nothing is collected or
pinned: one small job reads the time extent first (windowed queries only).
"""

from __future__ import annotations

import functools
import operator
from functools import partial
from typing import Any

from cercore.errors import ConfigError
from cercore.input.options import EngineOptions
from cercore.schema import Schema
from cercore.spark.base.errors import cercore_errors
from cercore.spark.base.frames import require_watermark, spark_options, with_integer_time
from cercore.spark.base.job import GROUP
from cercore.spark.base.partitions import floor_div, into_partitions, partition_cap, slices_of
from cercore.spark.base.session import parallelism as session_parallelism
from cercore.spark.base.shipping import require_cercore
from cercore.spark.trends.job import POSITION, TrendJob, run_trend_groups
from cercore.spark.trends.rows import row_schema
from cercore.trends.engine import read_types
from cercore.trends.query import CompiledTrendQuery, compile_trend


def trend_query(query: CompiledTrendQuery | str, schema: Schema | str | None = None
                ) -> CompiledTrendQuery:
    """``query`` compiled: a ``CompiledTrendQuery`` as it is, trend query text against
    ``schema``."""
    if isinstance(query, CompiledTrendQuery):
        if schema is not None:
            raise ConfigError("schema= applies to query text; a compiled trend query has "
                              "its schema")
        return query
    if schema is None:
        raise ConfigError("trend query text needs schema= (or pass a compiled trend query)")
    return compile_trend(query, schema)


def aggregate(df: Any, query: CompiledTrendQuery | str, *,
              schema: Schema | str | None = None, spark=None,
              options: EngineOptions | None = None, exact: str = "decimal",
              watermark: str | None = None, sequence: str | None = None, **option: Any):
    """The result rows of ``query`` (a compiled trend query, or its text with ``schema``)
    over the events in ``df`` as a Spark DataFrame: ``window_start``, ``window_end`` (with a
    window), the GROUP BY attributes, then one column per aggregate named by its text
    (``COUNT(*)``, ``AVG(T.speed)``).

    ``df``: a Spark DataFrame in cercore's tabular format (``type_column`` plus one column
    per attribute), whose read order breaks timestamp ties (a ``__cer_pos`` column, when
    present, gives the order instead), or a pandas DataFrame (then ``spark=`` is needed).
    Engine options (``backend``, ``on_error``, ``type_column``, ``stream_column``) as for
    ``find``.
    Counts and integer sums are exact: ``exact="decimal"`` types them ``decimal(38,0)``, and a
    value beyond 38 digits fails the job with a message that names it; ``exact="string"``
    gives their decimal text, of any length. Other aggregates are ``bigint``/``double``.

    A streaming ``df`` runs through ``cercore.spark.trends.streaming`` (the query needs a
    window): rows come out once the watermark -- the latest event time minus ``watermark``, the
    allowed lateness, required for a stream -- passes a window's end; later rows are late and
    dropped by Spark.
    ``sequence`` names a column that orders events with equal times (else read or arrival
    order)."""
    from pyspark.sql import functions as F

    if exact not in ("decimal", "string"):
        raise ConfigError("exact must be 'decimal' or 'string'")
    options = spark_options(options, option)
    type_column = options.type_column
    query = trend_query(query, schema)
    plan = query.plan
    schema = plan.schema
    read = read_types(plan)
    is_pandas = type(df).__module__.startswith("pandas")
    if not is_pandas:  # a timestamp time column: integers in the schema's unit, as find reads it
        df = with_integer_time(df, schema.time_attribute, schema.time_unit)
    if not is_pandas:  # one tiny job per session: a clear error, not 4 task retries
        require_cercore(df.sparkSession)
    if not is_pandas and df.isStreaming:
        from cercore.spark.base.partitions import warn_default_state_partitions
        from cercore.spark.trends.streaming import run_streaming

        require_watermark(watermark, "aggregate")
        warn_default_state_partitions(df.sparkSession, "aggregate")
        return run_streaming(query, df.filter(F.col(type_column).isin(read)), options=options,
                             exact=exact, watermark=watermark, sequence=sequence)
    if is_pandas:
        if spark is None:
            raise ConfigError("a pandas DataFrame needs the SparkSession: aggregate(pdf, q, "
                              "spark=spark)")
        require_cercore(spark)
        pdf = df.reset_index(drop=True).copy()
        pdf[POSITION] = range(len(pdf))
        df = with_integer_time(spark.createDataFrame(pdf), schema.time_attribute,
                               schema.time_unit)
    else:
        if sequence is not None:
            df = df.withColumn(POSITION, F.col(sequence).cast("long"))
        elif POSITION not in df.columns:  # read order breaks timestamp ties
            df = df.withColumn(POSITION, F.monotonically_increasing_id())
    return _run_batch(df.filter(F.col(type_column).isin(read)), query, options=options,
                      exact=exact)


def _run_batch(df, query: CompiledTrendQuery, *, options: EngineOptions, exact: str):
    """The result rows of ``query`` over ``df`` (read types only, POSITION added)."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema

    plan = query.plan
    schema = plan.schema
    for group in plan.partition_groups:  # events without a partition belong to none
        df = df.filter(functools.reduce(operator.or_, [F.col(a).isNotNull() for a in group]))
    tcol = schema.time_attribute or POSITION
    spark = df.sparkSession
    parallelism = session_parallelism(spark)
    n = partition_cap(parallelism)
    chunk = None
    if plan.window is None:
        df = df.withColumn(GROUP, F.lit(0).cast("long"))
        if not plan.group_by:
            n = 1
        df = df.repartition(n, *plan.group_by)
    else:  # window k holds time t iff k*slide <= t < k*slide + size
        size, slide = plan.window
        t = "`" + tcol.replace("`", "``") + "`"
        first = floor_div(f"{t} - {size}", slide) + " + 1"
        last = floor_div(t, slide)
        df = df.filter(F.expr(f"{first} <= {last}"))  # slide > size: times in no window
        r = df.agg(F.min(tcol).alias("lo"), F.max(tcol).alias("hi")).collect()[0]
        lo, hi = (r["lo"], r["hi"]) if r["lo"] is not None else (0, 0)
        first_window = (lo - size) // slide + 1
        span = -(-size // slide)  # the windows one event is in, at most
        chunk = max(span, -(-(hi // slide - first_window + 1) // (4 * parallelism)))
        # run r (windows r·chunk ... r·chunk + chunk − 1) holds the times of a T-CER slice:
        # advance chunk·slide, size (chunk − 1)·slide + size
        df = df.withColumn(GROUP, slices_of(t, (chunk - 1) * slide + size, chunk * slide))
        if plan.group_by:
            df = df.repartition(n, *plan.group_by, GROUP)
        else:  # runs dealt round-robin
            first_run = first_window // chunk
            n = min(n, hi // slide // chunk - first_run + 1)
            df = into_partitions(df, n, F.pmod(F.col(GROUP) - F.lit(first_run), F.lit(n)))
    df = df.sortWithinPartitions(GROUP, tcol, POSITION)
    out_struct, exact_columns = row_schema(query, exact)
    job = TrendJob(query, options, exact, tuple(exact_columns), chunk)
    columns = [POSITION, GROUP, *job.engine_columns()]
    df = df.select(*dict.fromkeys(c for c in columns if c in df.columns))
    arrow_schema = to_arrow_schema(out_struct,
                                   timezone=spark.conf.get("spark.sql.session.timeZone"))
    return df.mapInArrow(partial(run_trend_groups, job=job, out_schema=arrow_schema),
                         out_struct)


def aggregate_rows(df: Any, query: CompiledTrendQuery | str, *,
                   schema: Schema | str | None = None, spark=None,
                   options: EngineOptions | None = None, **option: Any) -> list[dict]:
    """Every result row of ``query`` over the events in ``df`` (see ``aggregate``), computed
    on Spark and collected: the same rows, in the same order, as ``query.run``."""
    query = trend_query(query, schema)
    out = aggregate(df, query, spark=spark, options=options, exact="string", **option)
    _, exact_columns = row_schema(query, "string")
    rows = []
    with cercore_errors():
        collected = out.collect()
    for r in collected:
        row = r.asDict()
        for c in exact_columns:
            row[c] = int(row[c])
        rows.append(row)
    head = ["window_start"] if query.plan.window else []
    return sorted(rows, key=lambda r: [r[c] for c in head + list(query.plan.group_by)])
