"""Trend aggregation's Spark workers: sorted Arrow batches in, result rows out (pyarrow only,
no pyspark, so it runs -- and is tested -- without a JVM).

The driver (``cercore.spark.trends.batch``) sends every event to the runs that need it and sorts
each Spark partition by (run, time, input position). A run (``GROUP``) is a chunk of
consecutive windows -- windows k with ⌊k / chunk⌋ = run -- and holds every event of those
windows for the GROUP BY groups of its partition: GROUP BY values (never split between Spark
partitions) decide the partition, so each (window, group) is computed whole by one engine.
Each run is one local ``TrendEngine`` fed batch by batch as Spark hands the batches over; it
keeps only its open windows (bounded by the window, whatever the run's length), emits the rows
of every window that closes, and keeps the rows of its own windows (the events at a run's start
also open earlier windows, which a run before it computes whole).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from cercore.errors import EventError
from cercore.input.options import EngineOptions
from cercore.spark.base.job import PREFIX, group_slices
from cercore.spark.trends.rows import exact_value
from cercore.trends.engine import TrendEngine
from cercore.trends.query import CompiledTrendQuery

POSITION = PREFIX + "pos"  # the input position: read order, or the user's sequence


@dataclass
class TrendJob:
    """What a worker needs to run the trend engine over its runs."""

    query: CompiledTrendQuery
    options: EngineOptions      # the user's engine options (reorder_slack: None on Spark)
    exact: str                  # "decimal" | "string": how exact integers leave
    exact_columns: tuple[str, ...]
    chunk: int | None = None    # windows per run (None: one run, every window)

    def engine(self) -> TrendEngine:
        return TrendEngine(self.query.plan, self.options)

    def engine_columns(self) -> list[str]:
        stream = [self.options.stream_column] if self.options.stream_column else []
        return [self.options.type_column, *self.query.plan.schema.attribute_types(), *stream]

    def keeps(self, run: int, row: dict) -> bool:
        """Whether ``row`` belongs to a window of ``run`` (the other runs compute the rest)."""
        if self.chunk is None:
            return True
        k = row["window_start"] // self.query.plan.window[1]
        return k // self.chunk == run


def run_trend_groups(batches: Iterator[pa.RecordBatch], job: TrendJob,
                     out_schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: one ``TrendRun`` per run of equal GROUP values (the input is sorted
    by GROUP, then by time and input position), its result rows per input batch."""
    run: TrendRun | None = None
    for g, rows in group_slices(batches):
        if run is None or g != run.run:
            if run is not None:
                yield from run.flush()
            run = TrendRun(job, g, out_schema)
        yield from run.feed(rows)
    if run is not None:
        yield from run.flush()


class TrendRun:
    """One trend engine over the rows of one run, fed in (time, input position) order one
    record batch at a time (columns: the engine's and ``POSITION``); ``flush`` closes the
    windows still open at the end. Yields result rows as record batches of ``out_schema``."""

    def __init__(self, job: TrendJob, run: int, out_schema: pa.Schema) -> None:
        self.job = job
        self.run = run
        self.out_schema = out_schema
        self.engine = job.engine()

    def feed(self, rows: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        return _batch(self.job, self.run, _process(self.engine, rows, self.job),
                      self.out_schema)

    def flush(self) -> Iterator[pa.RecordBatch]:
        return _batch(self.job, self.run, self.engine.flush(), self.out_schema)


def _process(engine: TrendEngine, rows: pa.RecordBatch, job: TrendJob) -> list[dict]:
    """The engine's rows for ``rows``; an event error names the row's input position (the
    engine's own position counts only this run's events)."""
    first = engine.position
    table = pa.Table.from_batches([rows]).select(job.engine_columns())
    try:
        return list(engine.process(table))
    except EventError as err:
        if err.position is None or not first <= err.position < first + rows.num_rows:
            raise
        at = rows.column(rows.schema.get_field_index(POSITION))[err.position - first].as_py()
        message = str(err).split(": ", 1)[1]
        raise EventError(message, position=at, field=err.field, reason=err.reason) from None


def _batch(job: TrendJob, run: int, rows: list[dict], out_schema: pa.Schema
           ) -> Iterator[pa.RecordBatch]:
    rows = [r for r in rows if job.keeps(run, r)]
    if not rows:
        return
    for r in rows:
        for c in job.exact_columns:
            r[c] = exact_value(c, r[c], job.exact)
    yield pa.RecordBatch.from_pylist(rows, schema=out_schema)
