"""From a user's DataFrame to the prepared columns every plan runs on (driver side).

* The event type comes from ``type_column``; attributes from the other columns.
* Without a schema, one is inferred from the DataFrame's columns (see ``infer_schema``).
* The ordering time becomes an integer column in the schema's time unit (timestamps are
  converted), ties are broken by ``sequence`` (or, in batch, by the order rows are read).
* The PARTITION BY key becomes one text column, computed per event type exactly as the
  engine picks key attributes, and coarsened so that two events the engine puts in one
  partition always share it (1 and 1.0 and true compare equal in the engine).
"""

from __future__ import annotations

from dataclasses import dataclass

from cercore.ceql import ast
from cercore.ceql.parser import parse_query
from cercore.errors import CercoreError
from cercore.schema import TIME_UNITS_PER_SECOND, AttrType, Schema, did_you_mean
from cercore.spark.job import KEY, PREFIX, SEQ, TIME, TYPE, EngineJob

OTHER_TYPE = "__cer_other"  # inferred schema: every event type the query does not name
DEFAULT_STREAM = "S"


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def attr_type_of(dt) -> AttrType | None:
    """The cercore attribute type of a Spark data type (None: not an attribute)."""
    from pyspark.sql import types as T

    if isinstance(dt, (T.ByteType, T.ShortType, T.IntegerType, T.LongType,
                       T.TimestampType, T.TimestampNTZType)):
        return AttrType.INT
    if isinstance(dt, (T.FloatType, T.DoubleType, T.DecimalType)):
        return AttrType.DOUBLE
    if isinstance(dt, T.StringType):
        return AttrType.STRING
    if isinstance(dt, T.BooleanType):
        return AttrType.BOOL
    return None


def is_timestamp(dt) -> bool:
    from pyspark.sql import types as T

    return isinstance(dt, (T.TimestampType, T.TimestampNTZType))


def _walk_atoms(formula) -> list[ast.EventAtom]:
    if isinstance(formula, ast.EventAtom):
        return [formula]
    out = []
    for name in ("formula", "left", "right"):
        sub = getattr(formula, name, None)
        if sub is not None:
            out += _walk_atoms(sub)
    return out


def query_names(query: str) -> tuple[list[str], list[str]]:
    """The event types and streams a query names (in order of appearance)."""
    q = parse_query(query)
    atoms = _walk_atoms(q.formula)
    types = list(dict.fromkeys(a.event_type for a in atoms))
    streams = list(dict.fromkeys([*q.streams, *(a.stream for a in atoms if a.stream)]))
    return types, streams


def infer_schema(df_schema, query: str, *, type_column: str = "event_type",
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
        t = attr_type_of(f.dataType)
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
    body = ", ".join(f"{_quote(a)}:{t.value}" for a, t in attrs)
    events = ", ".join(f"EVENT {_quote(t)} {{ {body} }}" for t in types)
    text = "\n".join(f"CREATE STREAM {_quote(s)} {{ {events} }}"
                     for s in streams or [DEFAULT_STREAM])
    return Schema.parse(text, time_attribute=time, time_unit=time_unit)


@dataclass
class Prepared:
    """The user's DataFrame with the hidden columns added, and the job for the workers."""

    df: object  # pyspark DataFrame
    job: EngineJob
    schema: Schema
    time: str | None  # ordering time column (None: order by sequence only)
    inferred: bool
    sequence: str | None = None  # the column ordering equal times (None: read order)


def prepare(df, query: str, schema: Schema | str | None, *, type_column: str = "event_type",
            time: str | None = None, sequence: str | None = None,
            time_unit: str | None = None, backend: str = "auto", on_error: str = "raise",
            stream_column: str | None = None, event_types: tuple[str, ...] = (),
            streaming: bool = False) -> Prepared:
    """Add the hidden columns (engine type, integer time, sequence, key, engine attributes)."""
    from pyspark.sql import functions as F

    cols = {f.name: f.dataType for f in df.schema.fields}
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
    if on_error not in ("raise", "skip"):
        raise CercoreError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
    inferred = schema is None
    exclude = tuple(c for c in (sequence, stream_column) if c is not None)
    if inferred:
        schema = infer_schema(df.schema, query, type_column=type_column, time=time,
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
            is_timestamp(cols[time]) or attr_type_of(cols[time]) is AttrType.INT)):
        raise CercoreError(f"the time column {time!r} must hold integers or timestamps")

    out = df
    if inferred:
        named = [t for t in schema.event_types if t != OTHER_TYPE]
        tcol = F.col(type_column)
        out = out.withColumn(TYPE, F.when(tcol.isNull(), F.lit(None).cast("string"))
                             .when(tcol.isin(named), tcol).otherwise(F.lit(OTHER_TYPE)))
        type_source = TYPE
    elif attr_type_of(cols[type_column]) is AttrType.STRING:
        type_source = type_column  # read as it is: no second copy of the column to the workers
    else:
        out = out.withColumn(TYPE, F.col(type_column).cast("string"))
        type_source = TYPE
    if time is not None:
        out = out.withColumn(TIME, _integer_time(F.col(time), cols[time], schema.time_unit))
    if sequence is not None:
        out = out.withColumn(SEQ, F.col(sequence).cast("long"))
    elif streaming:
        out = out.withColumn(SEQ, F.lit(0).cast("long"))  # ties keep arrival order
    else:
        out = out.withColumn(SEQ, F.monotonically_increasing_id())  # read order
    sources = []
    for i, (attr, t) in enumerate(types.items()):
        dt = cols[attr]
        if attr == time:
            sources.append((attr, TIME))
        elif is_timestamp(dt):
            hidden = f"{PREFIX}a{i}"
            out = out.withColumn(hidden, _integer_time(F.col(attr), dt, schema.time_unit))
            sources.append((attr, hidden))
        else:
            if attr_type_of(dt) is None or (attr_type_of(dt) is AttrType.STRING) != (
                    t is AttrType.STRING) or (t is AttrType.BOOL) != (
                    attr_type_of(dt) is AttrType.BOOL):
                raise CercoreError(f"column {attr!r} has Spark type {dt.simpleString()}, which "
                                   f"does not hold the declared {t.value}")
            sources.append((attr, attr))
    out = out.withColumn(KEY, _key_column(schema, query, type_source))
    job = EngineJob(query, schema, tuple(sources), tuple(df.columns), backend, on_error,
                    stream_column, has_time=time is not None, type_source=type_source)
    return Prepared(out, job, schema, time, inferred, sequence)


def _integer_time(col, dt, unit: str):
    """An integer time column in ``unit`` (timestamps are converted; integers kept)."""
    from pyspark.sql import functions as F

    if not is_timestamp(dt):
        return col.cast("long")
    col = col.cast("timestamp")
    if unit == "s":
        return F.unix_seconds(col)
    if unit == "ms":
        return F.unix_millis(col)
    micros = F.unix_micros(col)
    return micros if unit == "us" else micros * (TIME_UNITS_PER_SECOND["ns"] // 1_000_000)


def _key_column(schema: Schema, query: str, type_source: str):
    """The partition key as text, null when the engine puts the event in no partition: the
    engine's groups, PARTITION BY's and any that predicates between events imply
    (``type_source``: the column holding the event type)."""
    from pyspark.sql import functions as F

    from cercore.ceql.analysis import analyse

    groups = analyse(parse_query(query), schema, query).partition_by
    if not groups:
        return F.lit(None).cast("string")
    types = schema.attribute_types()
    parts = []
    for g in groups:
        expr = None
        for name, et in schema.event_types.items():
            attr = next((a for a in g if et.has(a)), None)
            value = F.lit(None).cast("string") if attr is None else _key_text(attr, types[attr])
            is_type = F.col(type_source) == F.lit(name)
            expr = F.when(is_type, value) if expr is None else expr.when(is_type, value)
        parts.append(expr)
    present = None
    for p in parts:
        present = p.isNotNull() if present is None else present & p.isNotNull()
    return F.when(present, F.to_json(F.array(*parts)))


def _key_text(attr: str, t: AttrType):
    """Key text equal for values the engine's key equality (Python's) treats as equal:
    1, 1.0 and true are all "1"."""
    from pyspark.sql import functions as F

    col = F.col(attr)
    if t is AttrType.BOOL:
        return F.when(col, F.lit("1")).when(~col, F.lit("0"))
    if t is AttrType.INT:
        return col.cast("long").cast("string")
    if t is AttrType.DOUBLE:
        whole = (col == F.floor(col)) & (F.abs(col) < F.lit(9.2e18))
        return F.when(whole, F.floor(col).cast("long").cast("string")).otherwise(
            col.cast("double").cast("string"))
    return col.cast("string")
