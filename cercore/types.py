"""Attribute types, what a value of each is, and time units: one home for every reader.

A value is read as an attribute type when it *denotes a value of that type exactly* (DESIGN.md
"Types"); every path into the engine -- Python records, JSON lines, Spark rows -- reads values
through ``coerce`` (Arrow and pandas columns through its vectorised form,
``cercore.input.decode.arrow_values``), so ``7``, ``7.0`` and ``2**70 + 1`` mean the same thing
wherever they come from:

- ``int``: an integer in int64, or a whole-number double in int64's range (JSON, pandas and
  Arrow write ints with nulls as doubles); never a bool;
- ``double``: a double, or an integer the double holds exactly (``2**70 + 1`` would change
  value, so it is not a double); never a bool;
- ``string``: a str; ``bool``: a bool.

The time attribute (``primary_time``) is an ``int`` in the schema's time unit; it also reads
*instants* -- a ``datetime`` (naive: UTC), a numpy ``datetime64``, pandas' ``Timestamp``,
ISO-8601 text, an Arrow ``timestamp`` column -- as that many units since the Unix epoch
(``coerce_time``; an instant with a fraction of a unit is refused, so the unit never drops
time silently). ``TimeForm`` remembers which of the two an input used, so complex events
report their times as they came in.

This module sits at the bottom of the package (it imports nothing of cercore), so the
declaration language, the readers and the engines all build on it.
"""

from __future__ import annotations

import datetime as dt
import math
from enum import Enum
from typing import Any

import numpy as np

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

# units of the schema's time attribute, per second (``CREATE STREAM ... time_unit``)
TIME_UNITS_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


class AttrType(Enum):
    """Attribute types of the declaration language."""

    INT = "int"
    DOUBLE = "double"
    STRING = "string"
    BOOL = "bool"

    @property
    def is_numeric(self) -> bool:
        return self in (AttrType.INT, AttrType.DOUBLE)

    @property
    def dtype(self) -> type:
        """The numpy type of a column of this type (strings: object, dictionary-encoded by
        the decoder)."""
        return _DTYPES[self]

    @property
    def fill(self) -> Any:
        """The value a null cell holds in a column (its validity mask says it is null)."""
        return _FILL[self]

    def arrow_type(self):
        """The Arrow type a column of this type is read as."""
        import pyarrow as pa

        return {AttrType.INT: pa.int64(), AttrType.DOUBLE: pa.float64(),
                AttrType.STRING: pa.string(), AttrType.BOOL: pa.bool_()}[self]


_DTYPES = {AttrType.INT: np.int64, AttrType.DOUBLE: np.float64, AttrType.BOOL: np.bool_,
           AttrType.STRING: np.object_}
_FILL = {AttrType.INT: 0, AttrType.DOUBLE: 0.0, AttrType.BOOL: False, AttrType.STRING: ""}

NOT_A_VALUE = object()  # what ``coerce`` returns for a value that is not of the type


def coerce(v: Any, t: AttrType) -> Any:
    """``v`` as a Python value of type ``t`` (see the module's docstring), or ``NOT_A_VALUE``.
    Accepts numpy scalars as well as Python ones; ``None`` is not handled here (a null is a
    null whatever the type)."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v) if t is AttrType.BOOL else NOT_A_VALUE
    if t is AttrType.STRING:
        return v if isinstance(v, str) else NOT_A_VALUE
    if t is AttrType.BOOL:
        return NOT_A_VALUE
    if isinstance(v, (int, np.integer)):
        v = int(v)
        if t is AttrType.INT:
            return v if INT64_MIN <= v <= INT64_MAX else NOT_A_VALUE
        try:
            f = float(v)
        except OverflowError:  # an int beyond the doubles
            return NOT_A_VALUE
        return f if int(f) == v else NOT_A_VALUE  # beyond 2^53 an int may change value
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if t is AttrType.DOUBLE:
            return f
        # a whole-number double in int64's range is that int (inf, nan: not whole)
        if f.is_integer() and -(2.0**63) <= f < 2.0**63:
            return int(f)
    return NOT_A_VALUE


def type_of_value(v: Any) -> AttrType | None:
    """The attribute type a plain Python value has (None: no attribute type holds it)."""
    if isinstance(v, bool):
        return AttrType.BOOL
    if isinstance(v, int):
        return AttrType.INT
    if isinstance(v, float):
        return AttrType.DOUBLE
    if isinstance(v, str):
        return AttrType.STRING
    return None


def is_arrow_string(typ) -> bool:
    """Whether an Arrow type holds strings (string, large_string or string_view)."""
    import pyarrow as pa

    return (pa.types.is_string(typ) or pa.types.is_large_string(typ)
            or pa.types.is_string_view(typ))


def type_of_spark(dt) -> AttrType | None:
    """The attribute type of a Spark data type (None: not an attribute); timestamps are int
    (event time, converted to the schema's time unit)."""
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


def seconds_to_units(seconds: int | float, unit: str) -> int | float:
    """``seconds`` in the time unit ``unit``: exact for integers; a double is rounded to 6
    decimals first, so float noise (``0.1 * 1000 = 100.00000000000001``) does not count as a
    fraction of a unit. Callers decide what a remaining fraction means (CEQL floors it)."""
    units = seconds * TIME_UNITS_PER_SECOND[unit]
    if isinstance(units, float) and math.isfinite(units):
        units = round(units, 6)
        if units.is_integer():
            return int(units)
    return units


def window_length(seconds: int | float, unit: str) -> int | None:
    """A window of ``seconds`` as a whole number of ``unit`` (a fraction of a unit is floored:
    a run of 1.5 ms in a schema of ms spans at most 1 ms), or None when it is negative, not
    finite or beyond int64 (times and windows are int64: a longer window could not be told
    from no window, and the kernels' arithmetic would overflow)."""
    units = seconds_to_units(seconds, unit)
    if isinstance(units, float):
        if not math.isfinite(units):
            return None
        units = math.floor(units)
    return units if 0 <= units <= INT64_MAX else None


# ---- event time: integers and instants ----------------------------------------------------
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_NAIVE = dt.datetime(1970, 1, 1)
NS_PER_UNIT = {u: 1_000_000_000 // n for u, n in TIME_UNITS_PER_SECOND.items()}


def parse_instant(text: str) -> dt.datetime | None:
    """ISO-8601 text (``2024-03-01T09:30:02``, ``...02.5Z``, ``...02+01:00``, a space for
    the ``T``) as a datetime, aware when the text states an offset; None when it is not
    ISO-8601 (a bare number is not an instant)."""
    text = text.strip()
    if len(text) < 10 or not text[:4].isdigit():
        return None
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        return None


def is_instant(v: Any) -> bool:
    """Whether ``v`` is a datetime or numpy datetime64 (pandas ``Timestamp`` is a datetime)."""
    return isinstance(v, (dt.datetime, np.datetime64))


def instant_ns(v: Any) -> int | None:
    """Nanoseconds since the Unix epoch of a datetime (naive: UTC), pandas ``Timestamp``
    (its nanoseconds too) or numpy datetime64 (None: NaT)."""
    if isinstance(v, np.datetime64):
        if np.isnat(v):
            return None
        return int(v.astype("datetime64[ns]").astype(np.int64))
    delta = v - (EPOCH if v.tzinfo is not None else _EPOCH_NAIVE)
    return (delta // dt.timedelta(microseconds=1)) * 1000 + getattr(v, "nanosecond", 0)


def ns_to_units(ns: int, unit: str) -> int | None:
    """Nanoseconds as a whole number of ``unit`` (None: a fraction of a unit remains, or the
    result is beyond int64)."""
    units, rest = divmod(ns, NS_PER_UNIT[unit])
    return units if not rest and INT64_MIN <= units <= INT64_MAX else None


def coerce_time(v: Any, unit: str) -> Any:
    """A value of the time attribute as an int in ``unit``, or ``NOT_A_VALUE``: an integer
    (read as ``coerce(v, INT)`` reads it) counts units; an instant -- datetime, numpy
    datetime64, pandas Timestamp, ISO-8601 text -- is the units since the Unix epoch, when
    it is a whole number of them (``time_problem`` says why a value is refused)."""
    if isinstance(v, str):
        v = parse_instant(v)
        if v is None:
            return NOT_A_VALUE
    if is_instant(v):
        ns = instant_ns(v)
        units = None if ns is None else ns_to_units(ns, unit)
        return NOT_A_VALUE if units is None else units
    return coerce(v, AttrType.INT)


def time_problem(v: Any, unit: str) -> str:
    """Why ``coerce_time`` refuses ``v`` (for messages), with the way out."""
    instant = parse_instant(v) if isinstance(v, str) else v if is_instant(v) else None
    if instant is not None and (ns := instant_ns(instant)) is not None:
        if ns % NS_PER_UNIT[unit]:
            finer = [u for u in TIME_UNITS_PER_SECOND if NS_PER_UNIT[u] < NS_PER_UNIT[unit]
                     and ns % NS_PER_UNIT[u] == 0]
            return (f"{_short(v)} is not a whole number of {unit} (the time unit): state a "
                    f"finer one, e.g. primary_time({(finer or ['ns'])[0]})")
        return f"{_short(v)} is out of range for int64 {unit} since 1970"
    return (f"must be an integer ({unit} since 1970) or a timestamp (datetime, ISO-8601 "
            f"text such as '2024-03-01T09:30:00'), got {type(v).__name__} {_short(v)}")


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


class TimeForm:
    """How an input wrote its event times: integers, or instants (with their time zone,
    None for naive ones). The decoder records the first instant it reads; complex events
    then report times as datetimes in that zone (``as_read``)."""

    __slots__ = ("instants", "tz", "unit")

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self.instants = False
        self.tz: dt.tzinfo | None = None

    def saw(self, tz: dt.tzinfo | None) -> None:
        """An instant was read (its zone; None: naive): the first one sets the form."""
        if not self.instants:
            self.instants, self.tz = True, tz

    def saw_value(self, v: Any) -> None:
        """``saw`` for a value ``coerce_time`` accepted (integers change nothing)."""
        if not self.instants:
            if isinstance(v, str):
                v = parse_instant(v)
            if isinstance(v, dt.datetime):
                self.saw(v.tzinfo)
            elif isinstance(v, np.datetime64):
                self.saw(None)

    def as_read(self, units: int | None) -> Any:
        """An event time (int, in units) as the input wrote it: the int itself, or a
        datetime (microseconds: a finer unit is truncated) in the input's zone."""
        if units is None or not self.instants:
            return units
        delta = dt.timedelta(microseconds=(units * NS_PER_UNIT[self.unit]) // 1000)
        if self.tz is None:
            return _EPOCH_NAIVE + delta
        return (EPOCH + delta).astimezone(self.tz)
