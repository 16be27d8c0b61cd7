"""From a user's DataFrame to the prepared columns every plan runs on (driver side).

* The event type comes from ``type_column``; attributes from the other columns.
* Without a schema, one is inferred from the DataFrame's columns (see ``infer_schema``).
* The ordering time becomes an integer column in the schema's time unit (timestamps are
  converted), ties are broken by ``sequence`` (or, in batch, by the order rows are read).
* The PARTITION BY key becomes one text column, computed per event type exactly as the
  engine picks key attributes, and coarsened so that two events the engine puts in one
  partition always share it (1 and 1.0 and true compare equal in the engine).

(The hidden columns themselves, as SQL and as Arrow: ``hidden``.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from cercore.ceql import ast
from cercore.ceql.parser import parse_query
from cercore.errors import CercoreError, ConfigError, did_you_mean
from cercore.input.options import EngineOptions
from cercore.query import CompiledQuery
from cercore.schema import DEFAULT_STREAM, Schema
from cercore.spark.base.hidden import (
    OTHER_TYPE,
    Cast,
    Hidden,
    IntegerTime,
    KeyText,
    SqlOnly,
    TypeText,
    _integer_time,
    _quote,
    is_timestamp,
)
from cercore.spark.base.job import KEY, PREFIX, SEQ, TIME, TYPE, EngineJob
from cercore.types import AttrType, type_of_spark


def _walk_atoms(formula) -> list[ast.EventAtom]:
    if isinstance(formula, ast.EventAtom):
        return [formula]
    out = []
    for name in ("formula", "left", "right"):
        sub = getattr(formula, name, None)
        if sub is not None:
            out += _walk_atoms(sub)
    return out


def query_names(query: str | ast.Query) -> tuple[list[str], list[str]]:
    """The event types and streams a query (its text or AST) names (in order of
    appearance)."""
    q = query if isinstance(query, ast.Query) else parse_query(query)
    atoms = _walk_atoms(q.formula)
    types = list(dict.fromkeys(a.event_type for a in atoms))
    streams = list(dict.fromkeys([*q.streams, *(a.stream for a in atoms if a.stream)]))
    return types, streams


def infer_schema(df_schema, query: str | ast.Query, *, type_column: str = "event_type",
                 time: str | None = None, time_unit: str | None = None,
                 exclude: tuple[str, ...] = (), event_types: tuple[str, ...] = ()) -> Schema:
    """A schema for ``query`` over a DataFrame with Spark schema ``df_schema``: the event types
    the query names (plus ``event_types``) and one catch-all type for every other type, each
    with every scalar column as an attribute (numbers -> int/double, timestamps -> int in
    ``time_unit``); one stream per stream the query names (``S`` if none); ``time`` is the
    time attribute. A type's attribute is then null where its rows leave it empty, which
    CEQL treats as "the event lacks it" (filters on it are false)."""
    attrs = []
    for f in df_schema.fields:
        if f.name == type_column or f.name in exclude or f.name.startswith(PREFIX):
            continue
        t = type_of_spark(f.dataType)
        if t is not None:
            attrs.append((f.name, t))
    if time is not None and time not in dict(attrs):
        raise CercoreError(f"time column {time!r} is not an integer or timestamp column of "
                           "the DataFrame" + did_you_mean(time, [a for a, _ in attrs]))
    if time_unit is None:
        dt = df_schema[time].dataType if time is not None else None
        time_unit = "us" if dt is not None and is_timestamp(dt) else "s"
    types, streams = query_names(query)
    types = list(dict.fromkeys([*types, *event_types, OTHER_TYPE]))
    return Schema.build({t: attrs for t in types},
                        {s: types for s in streams or [DEFAULT_STREAM]},
                        time_attribute=time, time_unit=time_unit)


@dataclass
class Prepared:
    """The user's DataFrame with the hidden columns added, and the job for the workers."""

    df: object  # pyspark DataFrame
    job: EngineJob
    schema: Schema
    time: str | None  # ordering time column (None: order by sequence only)
    inferred: bool
    sequence: str | None = None  # the column ordering equal times (None: read order)
    columns: Columns | None = None  # the hidden columns' descriptions
    source: object = None  # the user's DataFrame (what the hidden columns are added to)


@dataclass
class Columns:
    """What ``prepare`` adds to a DataFrame of a given Spark schema, as SQL: each hidden column
    (name, SQL expression over the user's columns and the hidden columns before it), and the
    job for the workers. The one description of the hidden columns: ``prepare`` adds them to a
    DataFrame, the SQL table functions (``cercore.spark.sql.functions``) have Spark compute them for
    their TABLE argument."""

    job: EngineJob
    schema: Schema
    time: str | None
    inferred: bool
    sequence: str | None
    hidden: list[tuple[str, Hidden]]

    def sql(self) -> list[tuple[str, str]]:
        """Each hidden column as SQL (over the user's columns and the hidden columns before
        it)."""
        return [(name, h.sql) for name, h in self.hidden]

    def inlined(self) -> dict[str, str]:
        """Each hidden column as SQL over the user's columns only (hidden columns that an
        expression reads replaced by their own expressions)."""
        out: dict[str, str] = {}
        for name, sql in self.sql():
            for before, expr in out.items():
                sql = sql.replace(_quote(before), f"({expr})")
            out[name] = sql
        return out

    def arrow(self, columns: Mapping[str, pa.Array], time_zone: str = "UTC",
              skip: tuple[str, ...] = ()) -> dict[str, pa.Array]:
        """Each hidden column (but those in ``skip``) computed in Arrow from ``columns`` (the
        user's columns as Spark hands them to a Python worker), as its SQL computes it in
        Spark; ``time_zone``: the session time zone (a ``timestamp_ntz`` is read in it)."""
        known = dict(columns)
        out: dict[str, pa.Array] = {}
        for name, h in self.hidden:
            if name in skip:
                continue
            known[name] = out[name] = h.arrow(known, time_zone)
        return out


def spark_options(options: EngineOptions | None, given: dict[str, Any]) -> EngineOptions:
    """The engine options of a Spark front door (``find``, ``explain``, ``aggregate``): as
    for a local engine, but for the reorder slack -- Spark evaluates events in (time,
    sequence) order, and a stream's allowed lateness is ``watermark=``."""
    options = EngineOptions.of(options, **given)
    if options.reorder_slack is not None:
        raise ConfigError("reorder_slack does not apply on Spark: events are evaluated in "
                          "(time, sequence) order whatever order they are read in; a stream's "
                          "allowed lateness is watermark=")
    return options


def require_watermark(watermark: str | None, what: str) -> None:
    """A streaming query's ``watermark=`` (the allowed lateness) is never guessed: a default
    of zero would drop every row that arrives a moment out of order."""
    if watermark is None:
        raise CercoreError(f"a streaming {what} needs watermark=, the allowed lateness of "
                           "events, e.g. watermark=\"10 seconds\": rows arrive out of "
                           "order, and each waits until the watermark passes it")



def prepare(df, query: str, schema: Schema | str | None, *,
            options: EngineOptions = EngineOptions.DEFAULT, time: str | None = None,
            sequence: str | None = None, time_unit: str | None = None,
            event_types: tuple[str, ...] = (), streaming: bool = False) -> Prepared:
    """Add the hidden columns (engine type, integer time, sequence, key, engine attributes)."""
    from pyspark.sql import functions as F

    cols = hidden_columns(df.schema, query, schema, options=options, time=time,
                          sequence=sequence, time_unit=time_unit, event_types=event_types,
                          streaming=streaming)
    out = df
    for step in dependency_steps(cols.sql()):  # each step one projection Spark analyses once
        out = out.withColumns({name: F.expr(sql) for name, sql in step})
    return Prepared(out, cols.job, cols.schema, cols.time, cols.inferred, cols.sequence, cols,
                    df)


def dependency_steps(hidden: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """``hidden`` (name, SQL) in as few consecutive steps as possible where no SQL names a
    column made in its own step (the key's SQL may read the hidden event type): a chain of
    ``withColumn`` costs the driver one analysis of the whole plan per column."""
    steps: list[list[tuple[str, str]]] = []
    for name, sql in hidden:
        if not steps or any(_quote(made) in sql for made, _ in steps[-1]):
            steps.append([])
        steps[-1].append((name, sql))
    return steps


def hidden_columns(df_schema, query: str, schema: Schema | str | None, *,
                   options: EngineOptions = EngineOptions.DEFAULT, time: str | None = None,
                   sequence: str | None = None, time_unit: str | None = None,
                   event_types: tuple[str, ...] = (), streaming: bool = False,
                   ordered: bool = False) -> Columns:
    """The hidden columns for a DataFrame of Spark schema ``df_schema`` (see ``prepare``), as
    SQL. ``ordered``: the rows come in their order already (no sequence column is made)."""
    type_column, stream_column = options.type_column, options.stream_column
    cols = {f.name: f.dataType for f in df_schema.fields}
    clash = [c for c in cols if c.startswith(PREFIX)]
    if clash:
        raise CercoreError(f"column names starting with {PREFIX!r} are reserved: {clash}")
    if type_column not in cols:
        raise CercoreError(f"the DataFrame has no event type column {type_column!r}"
                           + did_you_mean(type_column, cols))
    for name, what in ((time, "time"), (sequence, "sequence"), (stream_column, "stream")):
        if name is not None and name not in cols:
            raise CercoreError(f"the DataFrame has no {what} column {name!r}"
                               + did_you_mean(name, cols))
    inferred = schema is None
    exclude = tuple(c for c in (sequence, stream_column) if c is not None)
    parsed = None  # the query's AST, once it is parsed (on the driver, once)
    if inferred:
        parsed = parse_query(query)
        schema = infer_schema(df_schema, parsed, type_column=type_column, time=time,
                              time_unit=time_unit, exclude=exclude, event_types=event_types)
    else:
        kw = {"time_unit": time_unit} if time_unit is not None else {}
        schema = Schema.coerce(schema, **kw)
    time = time or schema.time_attribute
    types = schema.attribute_types()
    missing = [a for a in types if a not in cols]
    if missing:
        raise CercoreError("the schema declares attributes the DataFrame has no column for: "
                           + ", ".join(missing))
    if time is not None and (time not in cols or not (
            is_timestamp(cols[time]) or type_of_spark(cols[time]) is AttrType.INT)):
        raise CercoreError(f"the time column {time!r} must hold integers or timestamps")

    hidden: list[tuple[str, Hidden]] = []
    if inferred:
        named = tuple(t for t in schema.event_types if t != OTHER_TYPE)
        hidden.append((TYPE, TypeText(type_column, cols[type_column], named)))
        type_source = TYPE
    elif type_of_spark(cols[type_column]) is AttrType.STRING:
        type_source = type_column  # read as it is: no second copy of the column to the workers
    else:
        hidden.append((TYPE, TypeText(type_column, cols[type_column])))
        type_source = TYPE
    if time is not None:
        hidden.append((TIME, IntegerTime(time, cols[time], schema.time_unit)))
    if sequence is not None:
        hidden.append((SEQ, Cast(sequence)))
    elif streaming:
        hidden.append((SEQ, SqlOnly("CAST(0 AS BIGINT)")))  # ties keep arrival order
    elif not ordered:
        hidden.append((SEQ, SqlOnly("monotonically_increasing_id()")))  # read order
    sources = []
    for i, (attr, t) in enumerate(types.items()):
        dt = cols[attr]
        if attr == time:
            sources.append((attr, TIME))
        elif is_timestamp(dt):
            name = f"{PREFIX}a{i}"
            hidden.append((name, IntegerTime(attr, dt, schema.time_unit)))
            sources.append((attr, name))
        else:
            if type_of_spark(dt) is None or (type_of_spark(dt) is AttrType.STRING) != (
                    t is AttrType.STRING) or (t is AttrType.BOOL) != (
                    type_of_spark(dt) is AttrType.BOOL):
                raise CercoreError(f"column {attr!r} has Spark type {dt.simpleString()}, which "
                                   f"does not hold the declared {t.value}")
            sources.append((attr, attr))
    compiled = CompiledQuery(query, schema, parsed=parsed)  # the driver's one compilation
    key = KeyText.of(schema, compiled.analysed.partition_by, type_source)
    hidden.append((KEY, key))
    time_type = None if time is None or not is_timestamp(cols[time]) \
        else cols[time].typeName()  # timestamps are reported as timestamps
    job = EngineJob(query, schema, tuple(sources), tuple(df_schema.names), options,
                    has_time=time is not None, type_source=type_source, time_type=time_type,
                    key=key, _compiled=compiled)
    return Columns(job, schema, time, inferred, sequence, hidden)


def with_integer_time(df, attribute: str | None, unit: str):
    """``df`` with the time column ``attribute`` as integers in ``unit`` when it is a Spark
    timestamp (the one conversion every entry point uses: ``find`` through its hidden time
    column, ``aggregate`` through this); ``df`` itself otherwise."""
    if attribute is None or attribute not in df.columns:
        return df
    dt = df.schema[attribute].dataType
    if not is_timestamp(dt):
        return df
    from pyspark.sql import functions as F

    return df.withColumn(attribute, F.expr(_integer_time(_quote(attribute), dt, unit)))


