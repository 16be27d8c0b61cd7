"""CER in Spark SQL: ``register(spark)`` registers two table functions, on a classic or a Spark
Connect session::

    SELECT * FROM cer_find(TABLE(trades) PARTITION BY name ORDER BY (ts, seq),
                           'SELECT * FROM S WHERE BUY AS b; SELL AS s PARTITION BY [name]
                            WITHIN 30 SECONDS',
                           'CREATE STREAM S { EVENT BUY { ... }, EVENT SELL { ... } }')
    SELECT * FROM cer_aggregate(TABLE(readings) PARTITION BY g ORDER BY (t, seq),
                                'RETURN g, COUNT(*) PATTERN SEQ(A+, B) GROUP-BY g WITHIN 6 SLIDE 2',
                                '<declaration>')

Each instance of a function gets the rows of one PARTITION BY value in ORDER BY order (or,
``WITH SINGLE PARTITION``, the whole table) and runs the engine over them exactly as the Spark
plans' workers do, through the same per-run evaluation: ``cer_find`` feeds a
``job.GroupRun`` — the keyed ``find`` plan's — and ``cer_aggregate`` a ``trend_job.TrendRun``.
So the partitioning is the user's to state, as in any SQL window:

* ``cer_find``: ``PARTITION BY`` the query's PARTITION BY attributes (every complex event then
  lies in one table partition) or ``WITH SINGLE PARTITION`` (any query, no parallelism), and
  ``ORDER BY`` the time, then the column ordering equal times (``find``'s ``sequence``). The
  output has ``find``'s columns. Positions count the rows of the table partition in that order
  (as a stream's do per key) unless ``position =>`` names a column holding the global position
  (e.g. ``row_number() OVER (ORDER BY ts, seq) - 1``): then every row equals ``find``'s,
  ``match_id`` included. That column is not part of ``events``.
* ``cer_aggregate``: ``PARTITION BY`` the GROUP BY attributes (or ``WITH SINGLE PARTITION``),
  ``ORDER BY`` the time, then the input position; the rows of ``aggregate``.

A deadline (``φ ; ABSENT(ψ) WITHIN T``) fires, as in ``find``, once a later event the query reads
passes it, in any partition; an instance sees only its own. ``advance => 'latest'`` names a
column holding the latest time of the events the query reads (e.g. ``max(ts) OVER ()``): each
instance then fires, when its rows end, the deadlines before it, and the rows equal ``find``'s
(the column is not part of ``events``). ``WITH SINGLE PARTITION`` needs nothing.

Arguments after the table: the query, the declaration (NULL: ``cer_find`` infers it from the
table as ``find`` does), then by name (``time => 'ts'``): ``cer_find`` takes ``time``,
``sequence``, ``time_unit``, ``position``, ``advance``; ``cer_aggregate`` takes ``sequence``,
``exact``; both take the engine options ``backend``, ``on_error``, ``type_column`` and
``stream_column`` (``cercore.EngineOptions``). A malformed query
fails when Spark analyses the statement, with the CEQL error (line, column, caret) inside
Spark's ``TABLE_VALUED_FUNCTION_FAILED_TO_ANALYZE_IN_PYTHON``.

These are Python UDTFs with an ``analyze`` method, not ``arrow_udtf``: the output columns depend
on the table (``events``) and on the query (a trend query's aggregates), and pyspark 4.3 refuses
``analyze`` on Arrow UDTFs (``INVALID_ARROW_UDTF_WITH_ANALYZE``, left for SPARK-53286 in
``pyspark/sql/udtf.py``). ``analyze`` also has Spark compute the hidden columns (``find``'s own
SQL expressions, ``frames.hidden_columns``); the rows then reach Python one at a time and are
gathered into Arrow batches of ``CHUNK`` rows for the engine. When the tables' columns are known,
``register(spark, events=...)`` registers the typed ``cer_find`` instead (``typed``): an Arrow
UDTF with the output schema fixed at registration, about ten times faster.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import LongType, StringType, StructField, StructType
from pyspark.sql.udtf import AnalyzeArgument, AnalyzeResult, SelectedColumn

from cercore.errors import CercoreError
from cercore.input.options import EngineOptions
from cercore.spark.base.frames import hidden_columns, spark_options
from cercore.spark.base.hidden import Cast, IntegerTime, _quote
from cercore.spark.base.job import (
    KEY,
    POS,
    SEQ,
    TYPE,
    UNTIL,
    EngineJob,
    GroupRun,
    latest,
)

FIND = "cer_find"
AGGREGATE = "cer_aggregate"
CHUNK = 4096  # rows gathered before the engine evaluates them

_TEXT = (TYPE, KEY)  # the hidden columns holding text; the others hold bigint


def register(spark, *, find: str | None = FIND, aggregate: str = AGGREGATE) -> None:
    """Register the table functions ``find`` (default ``cer_find``; None: not this one) and
    ``aggregate`` (``cer_aggregate``) on ``spark`` (classic or Spark Connect), for
    ``spark.sql``."""
    from pyspark.sql.functions import udtf

    if find is not None:
        spark.udtf.register(find, udtf(CerFind))
    spark.udtf.register(aggregate, udtf(CerAggregate))


def _text(arg: AnalyzeArgument | None, what: str, required: bool = False) -> str | None:
    """The constant text of a scalar argument (None: absent or NULL)."""
    if arg is None or arg.value is None and arg.isConstantExpression:
        if required:
            raise CercoreError(f"{what} is required")
        return None
    if arg.isTable or not arg.isConstantExpression or not isinstance(arg.value, str):
        raise CercoreError(f"{what} must be a constant string")
    return arg.value


def _engine_options(**arguments: AnalyzeArgument | None) -> EngineOptions:
    """Engine options given to a table function as named arguments (absent or NULL: the
    option's default)."""
    given = {name: _text(arg, name) for name, arg in arguments.items()}
    return spark_options(None, {k: v for k, v in given.items() if v is not None})


@dataclass
class FindAnalysis(AnalyzeResult):
    """``cer_find``'s analysis, handed to each instance: the job and the selected columns."""

    job: EngineJob | None = None
    selected: StructType | None = None  # the columns each row brings, in order
    positioned: bool = False  # the rows carry the global position (POS)
    advanced: bool = False  # the rows carry how far event time gets (UNTIL: advance =>)


class _Chunked:
    """A table function's rows gathered into chunks of ``CHUNK`` for the engine
    (``_evaluate`` takes ``self.rows``)."""

    rows: list[tuple]

    def eval(self, row, *args: Any, **kwargs: Any):
        self.rows.append(tuple(row))
        if len(self.rows) >= CHUNK:
            yield from self._evaluate()


class CerFind(_Chunked):
    """The ``cer_find`` table function (see the module docstring)."""

    @staticmethod
    def analyze(table: AnalyzeArgument, query: AnalyzeArgument,
                declaration: AnalyzeArgument | None = None, time=None, sequence=None,
                type_column=None, time_unit=None, position=None, backend=None,
                on_error=None, advance=None, stream_column=None) -> FindAnalysis:
        from cercore.spark.ceql.front import output_schema

        if not table.isTable:
            raise CercoreError(f"{FIND}'s first argument is the events: TABLE(...)")
        text = _text(query, f"{FIND}'s query", required=True)
        pos = _text(position, "position")
        until = _text(advance, "advance")
        fields = table.dataType.fields
        for name, what in ((pos, "position"), (until, "advance")):
            if name is not None and name not in table.dataType.names:
                raise CercoreError(f"the table has no {what} column {name!r}")
        events = StructType([f for f in fields if f.name not in (pos, until)])
        options = _engine_options(backend=backend, on_error=on_error, type_column=type_column,
                                  stream_column=stream_column)
        cols = hidden_columns(events, text, _text(declaration, "the declaration"),
                              options=options, time=_text(time, "time"),
                              sequence=_text(sequence, "sequence"),
                              time_unit=_text(time_unit, "time_unit"), ordered=True)
        cols.job.compiled()  # a query that cannot compile fails here, at analysis
        select = [SelectedColumn(_quote(f.name), alias=f.name) for f in events.fields]
        selected = list(events.fields)
        inlined = cols.inlined()
        hidden = [(n, sql) for n, sql in inlined.items() if n != SEQ]
        if pos is not None:
            hidden.append((POS, Cast(pos).sql))
        if until is not None:
            hidden.append((UNTIL, IntegerTime(until, table.dataType[until].dataType,
                                              cols.schema.time_unit).sql))
        for name, sql in hidden:  # (hidden timestamp attributes: bigint, like TIME)
            select.append(SelectedColumn(sql, alias=name))
            selected.append(StructField(name, StringType() if name in _TEXT else LongType()))
        return FindAnalysis(schema=output_schema(events, cols.job.time_type), select=select,
                            job=cols.job,
                            selected=StructType(selected), positioned=pos is not None,
                            advanced=until is not None)

    def __init__(self, analyze_result: FindAnalysis) -> None:
        from pyspark.sql.pandas.types import to_arrow_schema

        self.analysis = analyze_result
        self.arrow = to_arrow_schema(analyze_result.selected, timezone="UTC")
        self.out_names = analyze_result.schema.names
        out = to_arrow_schema(analyze_result.schema, timezone="UTC")
        self.run = GroupRun(analyze_result.job, 0, None, out,
                            None if analyze_result.positioned else 0)
        self.rows: list[tuple] = []
        self.until: int | None = None  # the largest advance => value seen

    def terminate(self):
        yield from self._evaluate()
        # a deadline (φ ; ABSENT(ψ) WITHIN T): event time reaches advance => (the input's
        # latest read time), as a later event of another table partition would have told it
        yield from self._emit(self.run.finish(self.until))

    def _evaluate(self):
        if not self.rows:
            return
        batch = rows_batch(self.rows, self.arrow)
        self.rows = []
        if self.analysis.advanced:
            self.until = latest(self.until, batch.column(UNTIL))
        yield from self._emit(self.run.feed(batch))

    def _emit(self, out: pa.RecordBatch | None):
        if out is not None:
            for r in out.to_pylist():
                yield tuple(r[n] for n in self.out_names)


def rows_batch(rows: list[tuple], schema: pa.Schema) -> pa.RecordBatch:
    """Python rows (tuples in ``schema``'s column order) as one record batch. (pyspark hands a
    timestamp over as a naive datetime in the worker's local time: made aware first.)"""
    columns = list(zip(*rows))
    arrays = []
    for c, f in zip(columns, schema):
        if pa.types.is_timestamp(f.type) and f.type.tz is not None:
            c = [None if v is None else v.astimezone(UTC) for v in c]
        arrays.append(pa.array(c, type=f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


@dataclass
class AggregateAnalysis(AnalyzeResult):
    """``cer_aggregate``'s analysis, handed to each instance."""

    job: Any = None  # a trend_job.TrendJob
    selected: StructType | None = None
    read: list[str] = field(default_factory=list)  # the event types the query reads
    sequence: str | None = None  # the column holding the input position (None: counted)


class CerAggregate(_Chunked):
    """The ``cer_aggregate`` table function (see the module docstring)."""

    @staticmethod
    def analyze(table: AnalyzeArgument, query: AnalyzeArgument,
                declaration: AnalyzeArgument | None = None, sequence=None, type_column=None,
                exact=None, backend=None, on_error=None,
                stream_column=None) -> AggregateAnalysis:
        if not table.isTable:
            raise CercoreError(f"{AGGREGATE}'s first argument is the events: TABLE(...)")
        options = _engine_options(backend=backend, on_error=on_error, type_column=type_column,
                                  stream_column=stream_column)
        return aggregate_analysis(
            table.dataType, _text(query, f"{AGGREGATE}'s query", required=True),
            _text(declaration, f"{AGGREGATE}'s declaration", required=True),
            _text(sequence, "sequence"), _text(exact, "exact"), options)

    def __init__(self, analyze_result: AggregateAnalysis) -> None:
        from pyspark.sql.pandas.types import to_arrow_schema

        self.analysis = analyze_result
        self.arrow = to_arrow_schema(analyze_result.selected, timezone="UTC")
        self.out_names = analyze_result.schema.names
        self.feed = AggregateFeed(analyze_result)
        self.rows: list[tuple] = []

    def terminate(self):
        yield from self._evaluate()
        yield from self._emit(self.feed.flush())

    def _evaluate(self):
        if not self.rows:
            return
        batch = rows_batch(self.rows, self.arrow)
        self.rows = []
        yield from self._emit(self.feed.feed(batch))

    def _emit(self, batches):
        for b in batches:
            for r in b.to_pylist():
                yield tuple(r[n] for n in self.out_names)


def aggregate_analysis(columns: StructType, query: str, declaration: str,
                       sequence: str | None, exact: str | None,
                       options: EngineOptions) -> AggregateAnalysis:
    """What a ``cer_aggregate`` instance needs for a table of ``columns``: the job, the columns
    it reads (and, with ``sequence``, the input position), the output schema. (``analyze``
    for the untyped function; the typed one's registration.)"""
    from cercore.spark.trends.batch import trend_query
    from cercore.spark.trends.job import POSITION, TrendJob
    from cercore.spark.trends.rows import row_schema
    from cercore.trends.engine import read_types

    q = trend_query(query, declaration)
    exact_mode = exact or "decimal"
    if exact_mode not in ("decimal", "string"):
        raise CercoreError("exact must be 'decimal' or 'string'")
    types = {f.name: f for f in columns.fields}
    wanted = [options.type_column, *q.plan.schema.attribute_types(),
              *([options.stream_column] if options.stream_column else [])]
    missing = [c for c in wanted + ([sequence] if sequence else []) if c not in types]
    if missing:
        raise CercoreError(f"the table has no column {', '.join(map(repr, missing))}")
    select = [SelectedColumn(_quote(c), alias=c) for c in wanted]
    selected = [types[c] for c in wanted]
    if sequence is not None:
        select.append(SelectedColumn(Cast(sequence).sql, alias=POSITION))
        selected.append(StructField(POSITION, LongType()))
    out, exact_columns = row_schema(q, exact_mode)
    job = TrendJob(q, options, exact_mode, tuple(exact_columns))
    return AggregateAnalysis(schema=out, select=select, job=job, selected=StructType(selected),
                             read=read_types(q.plan), sequence=sequence)


class AggregateFeed:
    """One ``cer_aggregate`` instance's trend run: record batches of the selected columns in
    (time, position) order in, result batches out."""

    def __init__(self, analysis: AggregateAnalysis) -> None:
        from pyspark.sql.pandas.types import to_arrow_schema

        from cercore.spark.trends.job import POSITION, TrendRun

        self.analysis = analysis
        self.numbered = POSITION not in analysis.selected.names  # positions counted here
        self.count = 0
        self.run = TrendRun(analysis.job, 0, to_arrow_schema(analysis.schema, timezone="UTC"))

    def feed(self, batch: pa.RecordBatch):
        from cercore.spark.trends.job import POSITION

        if self.numbered:
            batch = batch.append_column(POSITION, pa.array(
                range(self.count, self.count + batch.num_rows), pa.int64()))
            self.count += batch.num_rows
        job = self.analysis.job
        keep = pc.is_in(batch.column(job.options.type_column), pa.array(self.analysis.read))
        for group in job.query.plan.partition_groups:  # events without a partition: none
            valid = [pc.is_valid(batch.column(a)) for a in group]
            keep = pc.and_(keep, functools.reduce(pc.or_, valid))
        batch = batch.filter(pc.fill_null(keep, False))
        if batch.num_rows:
            yield from self.run.feed(batch)

    def flush(self):
        return self.run.flush()
