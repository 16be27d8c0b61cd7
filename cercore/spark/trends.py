"""Trend aggregation on Spark, batch path: window assignment, one aggregator per (partition,
window) with ``groupBy(...).applyInPandas``, then the roll-up of partition aggregates to the
GROUP BY groups. Results equal ``CompiledTrendQuery.run`` on the same events.

    rows_df = aggregate(events_df, query)            # a DataFrame, one row per (window, group)
    rows = aggregate_rows(events_df, query)          # collected: the rows query.run returns

``query`` is a compiled trend query or its text (then ``schema=`` is needed). A streaming
DataFrame runs through ``cercore.spark.trends_streaming``.

The per-(partition, window) aggregator is the local one (Cython when built): events are sorted
by (time, input position) inside each group, exactly as the local engine sees them. Aggregate
vectors cross Spark pickled (base64 text), so counts stay exact Python ints however large
(Spark's LongType would overflow at 2^63).
"""

from __future__ import annotations

import base64
import json
import pickle
from typing import Any

from cercore.errors import ConfigError
from cercore.schema import Schema
from cercore.spark.partitions import partition_count
from cercore.spark.plan import KEYED, SINGLE
from cercore.spark.trend_rows import exact_value, row_schema
from cercore.trends import reference
from cercore.trends.engine import TrendEngine, read_types, result_row
from cercore.trends.query import CompiledTrendQuery, compile_trend

PREFIX = "_cercore_"
POSITION = f"{PREFIX}pos"
WINDOW = f"{PREFIX}window"
KEEP = f"{PREFIX}keep"


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
              schema: Schema | str | None = None, spark=None, backend: str = "auto",
              type_column: str = "event_type", exact: str = "decimal",
              watermark: str | None = None, sequence: str | None = None):
    """The result rows of ``query`` (a compiled trend query, or its text with ``schema``)
    over the events in ``df`` as a Spark DataFrame: ``window_start``, ``window_end`` (with a
    window), the GROUP BY attributes, then one column per aggregate named by its text
    (``COUNT(*)``, ``AVG(T.speed)``).

    ``df``: a Spark DataFrame in cercore's tabular format (``type_column`` plus one column
    per attribute), whose read order breaks timestamp ties (a ``_cercore_pos`` column, when
    present, gives the order instead), or a pandas DataFrame (then ``spark=`` is needed).
    Counts and integer sums are exact: ``exact="decimal"`` types them ``decimal(38,0)``, and a
    value beyond 38 digits fails the job with a message that names it; ``exact="string"``
    gives their decimal text, of any length. Other aggregates are ``bigint``/``double``.

    A streaming ``df`` runs through ``cercore.spark.trends_streaming`` (the query needs a
    window): rows come out once the watermark -- the latest event time minus ``watermark``, the
    allowed lateness, required for a stream -- passes a window's end; later rows are late and
    dropped by Spark.
    ``sequence`` names a column that orders events with equal times (else read or arrival
    order)."""
    from pyspark.sql import functions as F

    if exact not in ("decimal", "string"):
        raise ConfigError("exact must be 'decimal' or 'string'")
    query = trend_query(query, schema)
    plan = query.plan
    schema = plan.schema
    read = read_types(plan)
    is_pandas = type(df).__module__.startswith("pandas")
    if not is_pandas and df.isStreaming:
        from cercore.spark.ceql import require_watermark
        from cercore.spark.partitions import warn_default_state_partitions
        from cercore.spark.trends_streaming import run_streaming

        require_watermark(watermark, "aggregate")
        warn_default_state_partitions(df.sparkSession, "aggregate")
        return run_streaming(query, df.filter(F.col(type_column).isin(read)),
                             backend=backend, type_column=type_column, exact=exact,
                             watermark=watermark, sequence=sequence)
    if is_pandas:
        if spark is None:
            raise ConfigError("a pandas DataFrame needs the SparkSession: aggregate(pdf, q, "
                              "spark=spark)")
        pdf = df.reset_index(drop=True).copy()
        pdf[POSITION] = range(len(pdf))
        df = spark.createDataFrame(pdf)
    else:
        if sequence is not None:
            df = df.withColumn(POSITION, F.col(sequence).cast("long"))
        elif POSITION not in df.columns:  # read order breaks timestamp ties
            df = df.withColumn(POSITION, F.monotonically_increasing_id())
    df = df.filter(F.col(type_column).isin(read))
    for a in plan.partition_attrs:  # events without a partition belong to none
        df = df.filter(F.col(a).isNotNull())
    tcol = schema.time_attribute or POSITION
    if plan.window is None:
        df = df.withColumn(WINDOW, F.lit(0).cast("long"))
    else:  # window k holds time t iff k*slide <= t < k*slide + size
        size, slide = plan.window
        first = (F.floor((F.col(tcol) - F.lit(size)) / F.lit(slide)) + 1).cast("long")
        last = F.floor(F.col(tcol) / F.lit(slide)).cast("long")
        # with slide > size some times are in no window (sequence would count down)
        df = df.filter(first <= last).withColumn(WINDOW, F.explode(F.sequence(first, last)))

    columns = [type_column, POSITION, WINDOW] + list(schema.attribute_types())
    df = df.select(*[c for c in columns if c in df.columns])
    # partitions from the cluster, not spark.sql.shuffle.partitions: one (partition, window)
    # aggregator per group, so one partition when there is one group; AQE keeps an explicit
    # repartition(n, ...) at n, and groupBy over a subset of its columns adds no shuffle
    groups = [*plan.partition_attrs, WINDOW]
    one_group = not plan.partition_attrs and plan.window is None
    n = partition_count(SINGLE if one_group else KEYED,
                        df.sparkSession.sparkContext.defaultParallelism)
    partial = df.repartition(n, *groups).groupBy(*groups).applyInPandas(
        _partition_aggregator(query, backend, type_column),
        schema=f"{WINDOW} long, pkey string, vec string")
    if plan.partition_attrs:  # else already partitioned by WINDOW alone
        partial = partial.repartition(n, WINDOW)
    gidx = [plan.partition_attrs.index(a) for a in plan.group_by]
    out_schema, exact_columns = row_schema(query, exact)
    rolled = partial.groupBy(WINDOW).applyInPandas(
        _roll_up(query, gidx, out_schema, exact_columns, exact),
        schema=_with_keep_flag(out_schema))
    return rolled.filter(F.col(KEEP)).drop(KEEP)


def aggregate_rows(df: Any, query: CompiledTrendQuery | str, *,
                   schema: Schema | str | None = None, spark=None, backend: str = "auto",
                   type_column: str = "event_type") -> list[dict]:
    """Every result row of ``query`` over the events in ``df`` (see ``aggregate``), computed
    on Spark and collected: the same rows, in the same order, as ``query.run``."""
    query = trend_query(query, schema)
    out = aggregate(df, query, spark=spark, backend=backend, type_column=type_column,
                    exact="string")
    _, exact_columns = row_schema(query, "string")
    rows = []
    for r in out.collect():
        row = r.asDict()
        for c in exact_columns:
            row[c] = int(row[c])
        rows.append(row)
    head = ["window_start"] if query.plan.window else []
    return sorted(rows, key=lambda r: [r[c] for c in head + list(query.plan.group_by)])


def _with_keep_flag(struct):
    """``struct`` and the ``KEEP`` flag that marks the real rows of a roll-up."""
    from pyspark.sql import types as T

    return T.StructType(list(struct.fields) + [T.StructField(KEEP, T.BooleanType(),
                                                             nullable=False)])


def _partition_aggregator(query: CompiledTrendQuery, backend: str, type_column: str):
    plan = query.plan

    def aggregate(pdf):
        import pandas as pd

        engine = TrendEngine(plan, backend, type_column=type_column)
        names = plan.schema.type_names
        ids = {n: i for i, n in enumerate(names)}
        tattr = plan.schema.time_attribute
        pdf = pdf.sort_values([tattr or POSITION, POSITION], kind="stable")
        declared = {n: [a for a, _ in plan.schema.event_types[n].attributes] for n in names}
        events, pkey = [], None
        for rec in pdf.to_dict("records"):
            etype = rec[type_column]
            attrs = {a: _py(rec.get(a)) for a in declared[etype]}
            # a null aggregated attribute is an EventError naming the row (its read position)
            node = engine.accept(ids[etype], attrs, int(rec[POSITION]))
            if node is None:
                continue
            vs, pkey = node
            t = attrs[tattr] if tattr else rec[POSITION]
            events.append((t, vs, attrs))
        k = int(pdf[WINDOW].iloc[0])
        if not events:  # every event filtered out: an empty partition aggregate
            return pd.DataFrame({WINDOW: [k], "pkey": [None], "vec": [None]})
        vec = engine.aggregate_window(events)
        return pd.DataFrame({WINDOW: [k], "pkey": [json.dumps(pkey)], "vec": [_encode(vec)]})
    return aggregate


def _roll_up(query: CompiledTrendQuery, gidx: list[int], out_schema, exact_columns: list,
             exact: str):
    plan = query.plan
    names = [f.name for f in out_schema.fields]

    def roll(pdf):
        import pandas as pd

        vx = reference.Vectors(plan.fields)
        k = int(pdf[WINDOW].iloc[0])
        groups: dict[str, list] = {}
        for pkey, vec in zip(pdf["pkey"], pdf["vec"]):
            if pkey is None:
                continue
            g = json.dumps([json.loads(pkey)[i] for i in gidx])
            acc = groups.setdefault(g, vx.zero())
            vx.add(acc, _decode(vec))
        window = None
        if plan.window is not None:
            size, slide = plan.window
            window = (k * slide, k * slide + size)
        rows = [result_row(plan, vec, tuple(json.loads(g)), window)
                for g, vec in groups.items() if vec[0] > 0]
        for row in rows:
            for c in exact_columns:
                row[c] = exact_value(c, row[c], exact)
        # always one row at least (dropped by the keep flag): empty frames upset the Arrow path
        cols = {n: [r[n] for r in rows] or [None] for n in names}
        cols[KEEP] = [True] * len(rows) or [False]
        return pd.DataFrame(cols)
    return roll


def _encode(obj) -> str:
    return base64.b64encode(pickle.dumps(obj)).decode("ascii")


def _decode(text: str):
    return pickle.loads(base64.b64decode(text))


def _py(v):
    """A pandas cell as the Python value the local engine would see (NaN/NaT -> None)."""
    if v is None:
        return None
    item = getattr(v, "item", None)
    if item is not None:
        v = item()
    if isinstance(v, float) and v != v:
        return None
    return v
