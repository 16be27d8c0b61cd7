"""Structured Streaming for trend aggregation (``cercore.spark.trends.batch.aggregate`` over a
streaming DataFrame): one trend engine per GROUP BY group inside ``transformWithState`` (Row
API, event time).

The group is the key because a group's engine rolls its partitions up itself (partitions are
finer than groups), so no second stateful stage is needed; without GROUP BY there is one key.
Per key the state is

* ``engine`` -- a ValueState ``(version, 0, blob)``, ``blob = pickle.dumps(engine)``: the
  online aggregators of the open windows (trend engines pickle exactly, see
  ``tests/trends/test_trends_pickle.py``), or nothing once every window of the key has closed;
* ``buffer`` -- a ListState of rows not yet evaluated (the reorder buffer).

Rows arrive in any order. Spark drops rows at or below the watermark as late, so a buffered row
whose time is at or below the watermark can no longer be preceded by a new one: an event-time
timer releases such rows, sorted by (time, sequence), into the engine, and ``advance`` closes
every window that ends at or before the watermark. A timer at the end of the earliest open
window closes windows on a quiet key. Result rows have the columns of the batch ``aggregate``.
"""

from __future__ import annotations

import functools
import operator
import pickle
from typing import Any

from pyspark.sql import Row

from cercore.errors import CercoreError, ConfigError
from cercore.input.options import EngineOptions
from cercore.spark.base.job import GROUP, SEQ
from cercore.spark.streaming.processor import WatermarkBuffer, ms_after
from cercore.spark.streaming.run import with_event_time
from cercore.spark.trends.rows import exact_value, row_schema
from cercore.types import TIME_UNITS_PER_SECOND

STATE_VERSION = 1


class TrendProcessor(WatermarkBuffer):
    """The transformWithState processor of one trend query."""

    def __init__(self, query, input_schema, *, options: EngineOptions, exact: str) -> None:
        super().__init__(input_schema)
        self.query = query
        # the result rows' Spark schema, built here on the driver (it needs a SparkContext)
        self.out_schema, self.exact_columns = row_schema(query, exact)
        self.out_names = self.out_schema.names
        self.options = options
        type_column = options.type_column
        self.exact = exact
        schema = query.plan.schema
        names = input_schema.names
        self.i_seq = names.index(SEQ)
        self.i_time = names.index(schema.time_attribute)
        self.i_type = names.index(type_column)
        self.attrs_of = {t: [(a, names.index(a)) for a, _ in e.attributes]
                         for t, e in schema.event_types.items()}
        self.per_second = TIME_UNITS_PER_SECOND[schema.time_unit]

    # ---- StatefulProcessor API --------------------------------------------------------------
    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        watermark = timerValues.getCurrentWatermarkInMs()
        ready, _ = self.release(watermark)
        engine = self._load()
        if engine is None:
            engine = self.query.engine(options=self.options)
        rows: list[dict] = []
        if ready:
            ready.sort(key=lambda r: (r[self.i_time], r[self.i_seq]))
            rows += engine.process([(r[self.i_type], {a: r[i] for a, i in
                                                      self.attrs_of[r[self.i_type]]})
                                    for r in ready])
        # every later row is after the watermark: its time exceeds watermark * units / 1000
        safe = watermark * self.per_second // 1000
        if engine.last_time is None or safe >= engine.last_time:
            rows += engine.advance(safe)
        if engine.open:
            size, slide = self.query.plan.window
            end = next(iter(engine.open)) * slide + size
            self.handle.registerTimer(ms_after(end - 1, self.query.plan.schema.time_unit))
        self._save(engine if engine.open or engine.pending else None)
        out = []
        for row in rows:
            for c in self.exact_columns:
                row[c] = exact_value(c, row[c], self.exact)
            out.append(Row(**{n: row[n] for n in self.out_names}))
        return iter(out)

    # ---- state ---------------------------------------------------------------------------
    def _load(self) -> Any:
        if not self.state.exists():
            return None
        version, _, blob = self.state.get()
        if version != STATE_VERSION:
            raise CercoreError(f"checkpointed trend state has format version {version}; this "
                               f"cercore reads version {STATE_VERSION} (restart the query from "
                               "a fresh checkpoint)")
        return pickle.loads(blob) if blob is not None else None

    def _save(self, engine) -> None:
        if engine is None:
            self.state.clear()
            return
        self.state.update((STATE_VERSION, 0, pickle.dumps(engine,
                                                          protocol=pickle.HIGHEST_PROTOCOL)))


def run_streaming(query, df, *, options: EngineOptions, exact: str, watermark: str,
                  sequence: str | None):
    """The result rows of ``query`` over the streaming DataFrame ``df`` (see
    ``cercore.spark.trends.batch.aggregate``)."""
    from pyspark.sql import functions as F

    plan = query.plan
    tattr = plan.schema.time_attribute
    if options.stream_column is not None:  # the processor feeds the engine records
        raise ConfigError("stream_column= is not supported by a streaming trend aggregation: "
                          "filter the DataFrame to the query's stream instead")
    if plan.window is None:
        raise CercoreError("a streaming trend query needs WITHIN/WINDOW: without a window its "
                           "result would come only at the end of the stream")
    if tattr is None or tattr not in df.columns:
        raise CercoreError("streaming needs the schema's time attribute as a column of "
                           "integers")
    for group in plan.partition_groups:  # events without a partition belong to none
        df = df.filter(functools.reduce(operator.or_, [F.col(a).isNotNull() for a in group]))
    df = df.withColumn(SEQ, F.col(sequence).cast("long") if sequence else F.lit(0).cast("long"))
    df = df.withColumn(GROUP, F.to_json(F.array(*[F.col(a).cast("string")
                                                  for a in plan.group_by])))
    df = with_event_time(df, tattr, plan.schema.time_unit, watermark)
    processor = TrendProcessor(query, df.schema, options=options, exact=exact)
    return df.groupBy(GROUP).transformWithState(processor, processor.out_schema, "Append",
                                                "EventTime")
