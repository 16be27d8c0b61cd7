"""Spark batch path for trend aggregation (note seed-002 §6): window assignment, one aggregator
per (partition, window) with ``groupBy(...).applyInPandas``, then the roll-up of partition
aggregates to the GROUP BY groups. Results equal ``CompiledTrendQuery.run`` on the same events.

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

from cercore.trends import reference
from cercore.trends.engine import TrendEngine, result_row
from cercore.trends.query import CompiledTrendQuery

POSITION = "_cercore_pos"
WINDOW = "_cercore_window"


def run_spark(query: CompiledTrendQuery, events: Any, spark, *, backend: str = "auto",
              type_column: str = "event_type") -> list[dict]:
    """Every result row of ``query`` over ``events`` (a pandas DataFrame in cercore's tabular
    format, or a Spark DataFrame that already has a ``_cercore_pos`` column giving the input
    order), computed on ``spark``; the same rows, in the same order, as ``query.run``."""
    from pyspark.sql import functions as F

    plan = query.plan
    schema = plan.schema
    if type(events).__module__.startswith("pandas"):
        pdf = events.reset_index(drop=True).copy()
        pdf[POSITION] = range(len(pdf))
        df = spark.createDataFrame(pdf)
    else:
        df = events
    probe = TrendEngine(plan, "python", type_column=type_column)
    read = [n for n, ok in zip(schema.type_names, probe._read) if ok]
    df = df.filter(F.col(type_column).isin(read))
    for a in plan.partition_attrs:  # events without a partition belong to none
        df = df.filter(F.col(a).isNotNull())
    tcol = schema.time_attribute or POSITION
    if plan.window is None:
        df = df.withColumn(WINDOW, F.lit(0).cast("long"))
    else:  # window k holds time t iff k*slide <= t < k*slide + size
        size, slide = plan.window
        first = F.floor((F.col(tcol) - F.lit(size)) / F.lit(slide)) + 1
        last = F.floor(F.col(tcol) / F.lit(slide))
        df = df.withColumn(WINDOW, F.explode(F.sequence(first.cast("long"), last.cast("long"))))

    columns = [type_column, POSITION, WINDOW] + list(schema.attribute_types())
    df = df.select(*[c for c in columns if c in df.columns])
    partial = df.groupBy(*plan.partition_attrs, WINDOW).applyInPandas(
        _partition_aggregator(query, backend, type_column),
        schema=f"{WINDOW} long, pkey string, vec string")
    gidx = [plan.partition_attrs.index(a) for a in plan.group_by]
    rolled = partial.groupBy(WINDOW).applyInPandas(
        _roll_up(query, gidx), schema=f"{WINDOW} long, row string")
    rows = [(r[WINDOW], _decode(r["row"])) for r in rolled.collect() if r["row"] is not None]
    out = [row for _, row in sorted(rows, key=lambda kr: (kr[0], [
        kr[1][a] for a in plan.group_by]))]
    return out


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
            node = engine.match(ids[etype], attrs)
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


def _roll_up(query: CompiledTrendQuery, gidx: list[int]):
    plan = query.plan

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
        rows = [_encode(result_row(plan, vec, tuple(json.loads(g)), window))
                for g, vec in groups.items() if vec[0] > 0]
        # always one row at least (None when no trend): empty frames upset the Arrow path
        return pd.DataFrame({WINDOW: [k] * max(len(rows), 1), "row": rows or [None]})
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
