"""The typed ``cer_find``: ``cercore.spark.register(spark, events=...)`` registers it as an Arrow
UDTF (``arrow_udtf``: record batches in and out, no row reaches Python alone), with the static
output schema the events' columns give (``cercore.spark.ceql.front.output_schema``)::

    cercore.spark.register(spark, events=trades.schema)          # or a DataFrame, or DDL
    SELECT * FROM cer_find(TABLE(trades) PARTITION BY name ORDER BY (ts, seq),
                           '<CEQL query>', '<declaration or NULL>', sequence => 'seq')

Same call, arguments and rows as the untyped ``cer_find`` (``functions``), which Spark
analyses per statement: pyspark 4.3 refuses ``analyze`` on Arrow UDTFs (SPARK-53286), so here
the output schema is fixed when the function is registered:

* ``events``: the event columns of the tables it will read (the ``events`` of each complex
  event). A ``position =>`` or ``advance =>`` column is not one of them: the table brings it
  besides.
* ``time``: the time column the calls will order by, when it holds timestamps (``start_time``
  and ``end_time`` are then timestamps of its type; without it, integers). A call whose time
  column's type differs fails, saying so.

Each instance (one ``PARTITION BY`` value, or the whole table ``WITH SINGLE PARTITION``)
reads the query, declaration and options from its scalar arguments (Arrow arrays, one value
per row, constant per call), and takes the compiled job from a cache of this module keyed by
that text (``find_plan``: compiled once per worker process and call, never per partition).
It computes the hidden columns from each record batch in Arrow (``Columns.arrow``: the same
descriptions whose SQL ``find`` and the untyped ``cer_find`` have Spark compute, see
``cercore.spark.base.frames``), feeds a ``job.GroupRun`` as the untyped function does, and
yields its output batches. Errors (a malformed query, an unknown column, a time column of
another type than registered) are raised in the worker, on the first batch, with the CEQL
message, line, column and caret inside Spark's ``UDTF_EXEC_ERROR``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from cercore.errors import CercoreError
from cercore.spark.base.frames import Columns, hidden_columns, spark_options
from cercore.spark.base.hidden import Cast, IntegerTime, is_timestamp
from cercore.spark.base.job import POS, PREFIX, SEQ, GroupRun, latest

ARGUMENTS = ("query", "declaration", "time", "sequence", "type_column", "time_unit",
             "position", "backend", "on_error", "advance", "stream_column")


def events_schema(spark, events) -> Any:
    """``events`` (a StructType, a DataFrame or DDL text) as a StructType."""
    from pyspark.sql.types import StructType

    if isinstance(events, StructType):
        return events
    if isinstance(events, str):
        return spark.createDataFrame([], events).schema
    schema = getattr(events, "schema", None)
    if isinstance(schema, StructType):
        return schema
    raise CercoreError("events= is the tables' Spark schema: a StructType, a DataFrame or DDL "
                       f"text, not {type(events).__name__}")


def time_type_of(events, time: str | None) -> str | None:
    """The Spark type name the typed ``cer_find`` reports times in (None: integers)."""
    if time is None:
        return None
    if time not in events.names:
        raise CercoreError(f"time={time!r} is not one of the events' columns {events.names}")
    dt = events[time].dataType
    return dt.typeName() if is_timestamp(dt) else None


def find_return_type(events, time_type: str | None):
    """The typed ``cer_find``'s output schema (registration time), after checking that the
    events' columns can be read."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from cercore.spark.ceql.front import output_schema

    clash = [c for c in events.names if c.startswith(PREFIX)]
    if clash:
        raise CercoreError(f"column names starting with {PREFIX!r} are reserved: {clash}")
    out = output_schema(events, time_type)
    to_arrow_schema(out, timezone="UTC")  # every column has an Arrow type
    return out


@dataclass
class FindPlan:
    """One call's compiled job and what each instance computes: the hidden columns
    (``columns``), the optional position and advance columns, and the output schema."""

    columns: Columns
    events: tuple[str, ...]
    position: str | None
    advance: str | None
    out: pa.Schema
    skip: tuple[str, ...] = (SEQ,)  # hidden columns the rows need not carry (they come ordered)


_PLANS: dict[tuple, FindPlan] = {}  # per worker process: (events, time type, arguments) -> plan


def find_plan(events, time_type: str | None, arguments: tuple) -> FindPlan:
    """The plan for one call's ``arguments`` (``ARGUMENTS``' values), compiled once per worker
    process: every instance of a call (one per PARTITION BY value) shares it."""
    key = (events.json(), time_type, arguments)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = _compile(events, time_type, dict(zip(ARGUMENTS, arguments)))
    return plan


def _compile(events, time_type: str | None, given: dict[str, str | None]) -> FindPlan:
    from pyspark.sql.pandas.types import to_arrow_schema

    from cercore.spark.ceql.front import output_schema

    if given["query"] is None:
        raise CercoreError("cer_find's query is required")
    options = spark_options(None, {k: given[k] for k in ("backend", "on_error", "type_column",
                                                         "stream_column")
                                   if given[k] is not None})
    pos, until = given["position"], given["advance"]
    for name, what in ((pos, "position"), (until, "advance")):
        if name is not None and name in events.names:
            raise CercoreError(f"the {what} column {name!r} is one of the registered events' "
                               "columns: register events= without it (the table brings it "
                               "besides the events)")
    cols = hidden_columns(events, given["query"], given["declaration"], options=options,
                          time=given["time"], sequence=given["sequence"],
                          time_unit=given["time_unit"], ordered=True)
    cols.job.compiled()
    if cols.job.time_type != time_type:
        def say(t):
            return "integers" if t is None else f"{t} values"

        raise CercoreError(f"this cer_find was registered to report times as {say(time_type)}, "
                           f"but the call's time column {cols.time!r} gives "
                           f"{say(cols.job.time_type)}: register it with "
                           f"time={cols.time if cols.job.time_type else None!r}")
    out = to_arrow_schema(output_schema(events, time_type), timezone="UTC")
    return FindPlan(cols, tuple(events.names), pos, until, out)


def _constant(value: pa.Array | None, what: str) -> str | None:
    """A scalar argument's value (Spark hands it as a column: the same value on every row)."""
    if value is None or len(value) == 0:
        return None
    v = value[0].as_py()
    if v is not None and not isinstance(v, str):
        raise CercoreError(f"{what} must be a string, not {v!r}")
    return v


def _spark_type(arrow_type):
    from pyspark.sql.pandas.types import from_arrow_type

    return from_arrow_type(arrow_type)


class TypedFind:
    """The typed ``cer_find`` (see the module docstring); ``register`` makes a subclass that
    holds the registered ``events``, ``time_type`` and the session's ``time_zone``."""

    events: Any = None  # StructType
    time_type: str | None = None
    time_zone: str = "UTC"

    def __init__(self) -> None:
        self.plan: FindPlan | None = None
        self.run: GroupRun | None = None
        self.advance: IntegerTime | None = None
        self.until: int | None = None  # the largest advance => value seen

    def eval(self, table: pa.RecordBatch, query: pa.Array, declaration: pa.Array | None = None,
             time=None, sequence=None, type_column=None, time_unit=None, position=None,
             backend=None, on_error=None, advance=None, stream_column=None):
        if self.plan is None:
            given = (query, declaration, time, sequence, type_column, time_unit, position,
                     backend, on_error, advance, stream_column)
            self._start(table, tuple(_constant(v, f"cer_find's {name}")
                                     for name, v in zip(ARGUMENTS, given)))
        if table.num_rows == 0:
            return
        out = self.run.feed(self._rows(table))
        if out is not None:
            yield out

    def terminate(self):
        if self.run is None:
            return
        # a deadline (φ ; ABSENT(ψ) WITHIN T): event time reaches advance => (the input's
        # latest read time), as a later event of another table partition would have told it
        out = self.run.finish(self.until)
        if out is not None:
            yield out

    def _start(self, table: pa.RecordBatch, arguments: tuple) -> None:
        given = dict(zip(ARGUMENTS, arguments))
        besides = (given["position"], given["advance"])
        brought = [n for n in table.schema.names if n not in besides]
        if tuple(brought) != tuple(self.events.names):
            raise CercoreError(f"the table's columns {table.schema.names} are not the events "
                               f"cer_find was registered for {self.events.names}"
                               + (" (with position => and advance => columns besides)"
                                  if any(besides) else ""))
        for name, what in zip(besides, ("position", "advance")):
            if name is not None and name not in table.schema.names:
                raise CercoreError(f"the table has no {what} column {name!r}")
        plan = self.plan = find_plan(self.events, self.time_type, arguments)
        if plan.advance is not None:
            dt = _spark_type(table.schema.field(plan.advance).type)
            self.advance = IntegerTime(plan.advance, dt, plan.columns.schema.time_unit)
        self.run = GroupRun(plan.columns.job, 0, None, plan.out,
                            None if plan.position else 0)

    def _rows(self, table: pa.RecordBatch) -> pa.RecordBatch:
        """The batch with the hidden columns the engine reads, computed in Arrow."""
        plan = self.plan
        columns = dict(zip(table.schema.names, table.columns))
        hidden = plan.columns.arrow(columns, self.time_zone, skip=plan.skip)
        if plan.position is not None:
            hidden[POS] = Cast(plan.position).arrow(columns, self.time_zone)
        if self.advance is not None:
            self.until = latest(self.until, self.advance.arrow(columns, self.time_zone))
        names = [n for n in table.schema.names if n not in hidden]
        return pa.RecordBatch.from_arrays([columns[n] for n in names] + list(hidden.values()),
                                          names=names + list(hidden))


def register_find(spark, events, *, time: str | None = None, name: str = "cer_find") -> None:
    """Register the typed ``cer_find`` as ``name`` on ``spark`` for tables of ``events``."""
    from pyspark.sql.functions import arrow_udtf

    events = events_schema(spark, events)
    time_type = time_type_of(events, time)
    out = find_return_type(events, time_type)
    zone = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    handler = type("CerFindTyped", (TypedFind,), {"events": events, "time_type": time_type,
                                                   "time_zone": zone,
                                                   "__module__": __name__})
    spark.udtf.register(name, arrow_udtf(handler, returnType=out))


class TypedAggregate:
    """A typed ``cer_aggregate`` for one trend query (``register_aggregate``): the subclass
    holds the registration's ``analysis`` (``functions.aggregate_analysis``); each instance
    (one PARTITION BY value) feeds the columns the query reads to its own trend run."""

    analysis: Any = None  # functions.AggregateAnalysis
    time_zone: str = "UTC"

    def __init__(self) -> None:
        self.feed = None

    def eval(self, table: pa.RecordBatch):
        from cercore.spark.sql.functions import AggregateFeed
        from cercore.spark.trends.job import POSITION

        a = self.analysis
        if self.feed is None:
            missing = [f.name for f in a.selected.fields
                       if f.name != POSITION and f.name not in table.schema.names]
            if a.sequence is not None and a.sequence not in table.schema.names:
                missing.append(a.sequence)
            if missing:
                raise CercoreError(f"the table has no column {', '.join(map(repr, missing))}")
            self.feed = AggregateFeed(a)
        columns = dict(zip(table.schema.names, table.columns))
        arrays = [Cast(a.sequence).arrow(columns, self.time_zone) if f.name == POSITION
                  else columns[f.name] for f in a.selected.fields]
        yield from self.feed.feed(pa.RecordBatch.from_arrays(arrays, names=a.selected.names))

    def terminate(self):
        if self.feed is not None:
            yield from self.feed.flush()


def register_aggregate(spark, name: str, query: str, declaration: str, *, events,
                       sequence: str | None = None, exact: str | None = None,
                       **options: Any) -> None:
    """Register ``name`` as a typed ``cer_aggregate`` of ``query`` (its output columns depend
    on the query, so one function per query), compiled here, for tables of ``events``."""
    from pyspark.sql.functions import arrow_udtf

    from cercore.spark.sql.functions import aggregate_analysis

    events = events_schema(spark, events)
    analysis = aggregate_analysis(events, query, declaration, sequence, exact,
                                  spark_options(None, options))
    zone = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    handler = type("CerAggregateTyped", (TypedAggregate,), {
        "analysis": analysis, "time_zone": zone, "__module__": __name__})
    spark.udtf.register(name, arrow_udtf(handler, returnType=analysis.schema))
