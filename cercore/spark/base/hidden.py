"""The hidden columns ``find`` adds to a user's DataFrame, one description each (``Hidden``:
``IntegerTime``, ``TypeText``, ``Cast``, ``KeyText``) with two renderings side by side: ``sql``
(what ``frames.prepare`` adds to a DataFrame and the untyped SQL table functions have Spark
compute) and ``arrow`` (what the typed ``cer_find``, an Arrow UDTF, computes from the record
batches it receives). A value the Arrow rendering cannot give exactly as Spark's SQL would (a
key double that is no whole number: Spark writes it with the JVM's ``Double.toString``) raises
a ``CercoreError`` instead of a different text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cercore.errors import CercoreError
from cercore.schema import Schema
from cercore.types import TIME_UNITS_PER_SECOND, AttrType

OTHER_TYPE = "__cer_other"  # inferred schema: every event type the query does not name


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def is_timestamp(dt) -> bool:
    from pyspark.sql import types as T

    return isinstance(dt, (T.TimestampType, T.TimestampNTZType))


def sql_string(text: str) -> str:
    """``text`` as a Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _integer_time(col: str, dt, unit: str) -> str:
    """SQL for an integer time in ``unit`` from the column ``col`` (SQL) of Spark type ``dt``
    (timestamps are converted; integers kept)."""
    if not is_timestamp(dt):
        return f"CAST({col} AS BIGINT)"
    ts = f"CAST({col} AS TIMESTAMP)"
    if unit == "s":
        return f"unix_seconds({ts})"
    if unit == "ms":
        return f"unix_millis({ts})"
    if unit == "us":
        return f"unix_micros({ts})"
    return f"(unix_micros({ts}) * {TIME_UNITS_PER_SECOND['ns'] // 1_000_000})"


class Hidden:
    """A hidden column's meaning, rendered as SQL (``sql``) and in Arrow (``arrow``)."""

    sql: str

    def arrow(self, columns: Mapping[str, pa.Array], time_zone: str) -> pa.Array:
        raise CercoreError(f"{self.sql} has no Arrow rendering")


@dataclass(frozen=True)
class SqlOnly(Hidden):
    """A column only Spark computes (a read-order sequence)."""

    sql: str


@dataclass(frozen=True)
class Cast(Hidden):
    """``CAST(column AS BIGINT)`` (a sequence, a position): integer columns only."""

    column: str

    @property
    def sql(self) -> str:
        return f"CAST({_quote(self.column)} AS BIGINT)"

    def arrow(self, columns, time_zone):
        col = columns[self.column]
        if not pa.types.is_integer(col.type):
            raise CercoreError(f"column {self.column!r} must hold integers, not {col.type}")
        return col.cast(pa.int64())


@dataclass(frozen=True)
class IntegerTime(Hidden):
    """A time column as integers in ``unit`` (timestamps converted, integers kept)."""

    column: str
    dtype: Any  # its Spark type
    unit: str

    @property
    def sql(self) -> str:
        return _integer_time(_quote(self.column), self.dtype, self.unit)

    def arrow(self, columns, time_zone):
        return _integer_time_arrow(columns[self.column], self.dtype, self.unit, time_zone)


@dataclass(frozen=True)
class TypeText(Hidden):
    """The event type as text; ``named`` (an inferred schema): the types the query names,
    every other one read as ``OTHER_TYPE``."""

    column: str
    dtype: Any
    named: tuple[str, ...] | None = None

    @property
    def sql(self) -> str:
        tcol = _quote(self.column)
        if self.named is None:
            return f"CAST({tcol} AS STRING)"
        known = (f"WHEN {tcol} IN ({', '.join(map(sql_string, self.named))}) "
                 f"THEN CAST({tcol} AS STRING) " if self.named else "")
        return (f"CASE WHEN {tcol} IS NULL THEN CAST(NULL AS STRING) {known}"
                f"ELSE {sql_string(OTHER_TYPE)} END")

    def arrow(self, columns, time_zone):
        col = columns[self.column]
        if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
                or pa.types.is_integer(col.type)):
            raise CercoreError(f"the event type column {self.column!r} holds {col.type}: the "
                               "typed cer_find reads string or integer event types")
        text = col.cast(pa.string())
        if self.named is None:
            return text
        known = pc.fill_null(pc.is_in(text, pa.array(self.named, pa.string())), False)
        other = pc.if_else(known, text, pa.scalar(OTHER_TYPE, pa.string()))
        return pc.if_else(pc.is_null(text), pa.scalar(None, pa.string()), other)


@dataclass(frozen=True)
class KeyText(Hidden):
    """The partition key as text, null when the engine puts the event in no partition: one
    part per group of the engine's (``groups``: the analysed query's ``partition_by``,
    PARTITION BY's and any that predicates between events imply), each part per event type
    (read from the column ``type_source``) the text of the first attribute of the group the
    type has (``parts``: per group, (event type, attribute or None, attribute type)); the
    parts as a JSON array of text (Spark's ``to_json(array(...))``)."""

    type_source: str
    parts: tuple[tuple[tuple[str, str | None, AttrType | None], ...], ...]

    @classmethod
    def of(cls, schema: Schema, groups: tuple[tuple[str, ...], ...], type_source: str
           ) -> KeyText:
        types = schema.attribute_types()
        parts = []
        for g in groups:
            whens = []
            for name, et in schema.event_types.items():
                attr = next((a for a in g if et.has(a)), None)
                whens.append((name, attr, None if attr is None else types[attr]))
            parts.append(tuple(whens))
        return cls(type_source, tuple(parts))

    @property
    def sql(self) -> str:
        if not self.parts:
            return "CAST(NULL AS STRING)"
        parts = []
        for whens in self.parts:
            sql = [f"WHEN {_quote(self.type_source)} = {sql_string(name)} THEN "
                   + ("CAST(NULL AS STRING)" if attr is None else _key_text(attr, t))
                   for name, attr, t in whens]
            parts.append(f"(CASE {' '.join(sql)} END)")
        present = " AND ".join(f"{p} IS NOT NULL" for p in parts)
        return f"CASE WHEN {present} THEN to_json(array({', '.join(parts)})) END"

    @property
    def sources(self) -> list[str]:
        """The columns the key text reads."""
        return list(dict.fromkeys([self.type_source, *(attr for whens in self.parts
                                                        for _, attr, _ in whens if attr)]))

    def arrow_exact(self, types: Mapping[str, pa.DataType]) -> bool:
        """Whether ``arrow`` writes every value of columns of these Arrow ``types`` as the SQL
        does (no double key: only its whole numbers have an Arrow text)."""
        kinds = {AttrType.BOOL: pa.types.is_boolean, AttrType.INT: pa.types.is_integer,
                 AttrType.STRING: lambda k: pa.types.is_string(k) or pa.types.is_large_string(k)}
        return all(attr is None or t in kinds and attr in types and kinds[t](types[attr])
                   for whens in self.parts for _, attr, t in whens)

    def arrow(self, columns, time_zone):
        n = len(columns[self.type_source])
        if not self.parts:
            return pa.nulls(n, pa.string())
        types = columns[self.type_source].cast(pa.string())
        texts: dict[str, pa.Array] = {}  # each attribute's key text, once
        pieces: list[Any] = ["["]
        for i, whens in enumerate(self.parts):
            part = pa.nulls(n, pa.string())
            for name, attr, t in whens:
                if attr is None:
                    continue
                if attr not in texts:
                    texts[attr] = _key_text_arrow(attr, columns[attr], t)
                hit = pc.fill_null(pc.equal(types, pa.scalar(name, pa.string())), False)
                part = pc.if_else(hit, texts[attr], part)
            pieces += [","] * (i > 0) + [_json_strings(part)]
        # binary_join_element_wise: null when any part is (the CASE WHEN ... IS NOT NULL)
        return pc.binary_join_element_wise(*pieces, "]", "")


def _key_text(attr: str, t: AttrType) -> str:
    """SQL for key text equal for values the engine's key equality (Python's, in
    ``cercore.runtime.partitions``) treats as equal: 1, 1.0 and true are all "1". Not the
    predicate ``=`` (``cercore.spark.base.columns``): keys compare exactly (2**53 + 1 is not the
    double 2**53) and every NaN is one key, where ``=`` reads an int beside a double as a
    double and NaN equals nothing. (``_key_text_arrow``: the same in Arrow.)"""
    col = _quote(attr)
    if t is AttrType.BOOL:
        return f"(CASE WHEN {col} THEN '1' WHEN NOT {col} THEN '0' END)"
    if t is AttrType.INT:
        return f"CAST(CAST({col} AS BIGINT) AS STRING)"
    if t is AttrType.DOUBLE:
        # rint, not floor: floor gives a bigint, which overflows (an error under ANSI) for
        # NaN and the infinities; rint keeps them doubles, and NaN = NaN in Spark SQL
        whole = f"({col} = rint({col})) AND (abs({col}) < 9.2E18)"  # WHOLE_LIMIT
        return (f"(CASE WHEN {whole} THEN CAST(CAST(floor({col}) AS BIGINT) AS STRING) "
                f"ELSE CAST(CAST({col} AS DOUBLE) AS STRING) END)")
    return f"CAST({col} AS STRING)"


WHOLE_LIMIT = 9.2e18  # a whole double below it in magnitude is written as an integer (9.2E18)
_DOUBLE_WORDS = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _key_text_arrow(attr: str, col: pa.Array, t: AttrType) -> pa.Array:
    """``_key_text`` in Arrow, for the column types whose Spark text Arrow reproduces exactly:
    bool for a bool key, integers for an int key, strings for a string key, float or double
    for a double key (a whole number below ``WHOLE_LIMIT``: its integer text; NaN and the
    infinities: the JVM's words; any other double raises a ``CercoreError``: Spark writes it
    with the JVM's ``Double.toString``, whose digits (JDK 17's are not always the shortest)
    Python cannot promise to repeat)."""
    kind = col.type
    if t is AttrType.BOOL and pa.types.is_boolean(kind):
        return pc.if_else(col, pa.scalar("1", pa.string()), pa.scalar("0", pa.string()))
    if t is AttrType.INT and pa.types.is_integer(kind):
        return col.cast(pa.int64()).cast(pa.string())
    if t is AttrType.STRING and (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return col.cast(pa.string())
    if t is AttrType.DOUBLE and pa.types.is_floating(kind):
        values = col.cast(pa.float64()).to_numpy(zero_copy_only=False)  # nulls: NaN
        valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        with np.errstate(invalid="ignore"):
            whole = (values == np.floor(values)) & (np.abs(values) < WHOLE_LIMIT)
        words = ~whole & ~np.isfinite(values) & valid
        other = valid & ~whole & ~words
        if other.any():
            bad = float(values[other][0])
            raise CercoreError(
                f"the key attribute {attr!r} holds {bad!r}, a double that is no whole number: "
                "Spark writes its partition text with the JVM's Double.toString, which the "
                "typed cer_find (Arrow) cannot promise to repeat digit for digit; use the "
                "untyped cercore.spark.register(spark) for this query, or key on a string "
                "or integer column")
        ints = np.where(whole, values, 0).astype(np.int64)
        text = pa.array(ints, pa.int64()).cast(pa.string()).to_numpy(zero_copy_only=False)
        if words.any():
            text = text.astype(object)
            text[words] = [_DOUBLE_WORDS[repr(float(v))] for v in values[words]]
        return pa.array(text, pa.string(), mask=~valid)
    raise CercoreError(f"the key attribute {attr!r} ({t.value}) has Arrow type {kind}: the typed "
                       "cer_find writes key text for bool, integer, string, float and double "
                       "columns only; use the untyped cercore.spark.register(spark)")


def _json_strings(texts: pa.Array) -> pa.Array:
    """Each text as a JSON string literal, as Spark's ``to_json`` (Jackson) writes it: ``"``
    and ``\\`` escaped, \\b \\t \\n \\f \\r short, other control characters as
    ``\\u00XX`` (upper-case hex), everything else as it is. Escaped once per distinct text."""
    encoded = pc.dictionary_encode(texts)
    words = [None if v is None else _json_string(v) for v in encoded.dictionary.to_pylist()]
    return pa.array(words, pa.string()).take(encoded.indices)


_JSON_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n",
               "\f": "\\f", "\r": "\\r"}


def _json_string(text: str) -> str:
    out = []
    for ch in text:
        if ch in _JSON_SHORT:
            out.append(_JSON_SHORT[ch])
        elif ch < " ":
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _wall_time_instant(wall: pa.Array, time_zone: str) -> pa.Array:
    """The instants of the wall times ``wall`` in ``time_zone``, as Spark's ``CAST(ntz AS
    TIMESTAMP)`` (java.time) gives them: a wall time the clocks pass twice is the earlier
    instant, and one they skip is read with the offset from before the skip (02:30 on a
    spring-forward night in New York is 07:30 UTC). That is E + (wall - local(E)), with E the
    earliest instant Arrow gives (for a skipped time, the last one before the skip), which is
    the wall time's own instant everywhere else."""
    earliest = pc.assume_timezone(wall, time_zone, ambiguous="earliest", nonexistent="earliest")
    return pc.add(earliest, pc.subtract(wall, pc.local_timestamp(earliest)))


def _integer_time_arrow(col: pa.Array, dt, unit: str, time_zone: str) -> pa.Array:
    """``_integer_time`` in Arrow: integers kept (as int64); a timestamp as its instant in
    ``unit`` (``unix_seconds`` and ``unix_millis`` floor); a ``timestamp_ntz`` read in the
    session's ``time_zone`` as ``CAST(... AS TIMESTAMP)`` reads it (``_wall_time_instant``)."""
    if not is_timestamp(dt):
        return col.cast(pa.int64())
    if not pa.types.is_timestamp(col.type):
        raise CercoreError(f"a timestamp column arrived as {col.type}")
    if col.type.tz is None:
        col = _wall_time_instant(col, time_zone)
    micros = col.cast(pa.timestamp("us", col.type.tz)).cast(pa.int64())
    if unit == "us":
        return micros
    if unit == "ns":
        return pc.multiply(micros, TIME_UNITS_PER_SECOND["ns"] // 1_000_000)
    per = 1_000_000 // TIME_UNITS_PER_SECOND[unit]
    values = micros.fill_null(0).to_numpy()
    return pa.array(np.floor_divide(values, per), pa.int64(), mask=micros.is_null().to_numpy(
        zero_copy_only=False))
