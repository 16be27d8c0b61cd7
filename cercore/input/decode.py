"""Decode user input (``(type, attrs)`` records, Event objects, Arrow record batches) into
validated columnar batches.

Validation: an unknown event type, an attribute the type does not declare, a declared
attribute missing from a record, or a value of the wrong type is an ``EventError`` naming the
position, the field and its reason (``cercore.input.skips``). With ``on_error="skip"`` the
event is skipped and counted instead; its position is still consumed. An explicit ``None`` (or
a null cell) is a null value: predicates on it are false.

Arrow columns stay columnar: numbers are read zero-copy where Arrow allows it, strings become
dictionary codes (a column's own dictionary when it has one: pandas ``category``, Parquet
dictionaries), and the event type column is mapped to type ids through its dictionary.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from cercore.errors import EventError, did_you_mean
from cercore.input import skips
from cercore.input.batch import SKIPPED, Batch
from cercore.input.columns import Columns, StringColumn
from cercore.input.event import Event
from cercore.input.options import checked_on_error
from cercore.schema import Schema
from cercore.types import (
    INT64_MAX,
    INT64_MIN,
    NOT_A_VALUE,
    NS_PER_UNIT,
    AttrType,
    TimeForm,
    coerce,
    coerce_time,
    is_arrow_string,
    time_problem,
)

UNKNOWN_STREAM = -2  # stream code of a name no stream has
_MISSING = object()
RAW = object()  # the attributes of a record that is not an event: the record is passed as is
_EXACT = {AttrType.INT: int, AttrType.DOUBLE: float, AttrType.STRING: str, AttrType.BOOL: bool}


# A file reader that skips bad rows (cercore.input.files, on_error="skip") keeps each in place, so
# positions still index the file, and names its problem in this column; the decoder rejects
# the row with that message (raised, or skipped and counted as UNREADABLE) in stream order.
REJECT_COLUMN = "__cercore_rejected__"


class Rejected:
    """A record standing for a row a reader rejected (the records form of REJECT_COLUMN)."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


class EventDecoder:
    """Validates input events against the schema and lays them out as columns."""

    def __init__(self, schema: Schema, on_error: str = "raise") -> None:
        checked_on_error(on_error)
        self.schema = schema
        self.on_error = on_error
        self.attr_types = schema.attribute_types()
        self.type_ids = {n: e.id for n, e in schema.event_types.items()}
        self.declared = {n: dict(e.attributes) for n, e in schema.event_types.items()}
        # per type: (attribute, type, the Python type a valid value usually has exactly)
        self.checks = {n: tuple((a, t, _EXACT[t]) for a, t in e.attributes)
                       for n, e in schema.event_types.items()}
        # per attribute: which type ids declare it, indexed by type id (SKIPPED = -1 reads
        # the extra last entry, False)
        n_types = len(schema.type_names)
        self.owners = {}
        for a in self.attr_types:
            lut = np.zeros(n_types + 1, dtype=bool)
            for name, attrs in self.declared.items():
                lut[self.type_ids[name]] = a in attrs
            self.owners[a] = lut
        # [stream id, type id] -> the stream carries the type (the extra last type: SKIPPED)
        self._stream_carries = np.zeros((max(len(schema.stream_ids), 1), n_types + 1), bool)
        for name, sid in schema.stream_ids.items():
            for typ in schema.streams[name].event_types:
                self._stream_carries[sid, self.type_ids[typ]] = True
        self.skips = skips.SkipLog()
        # the time attribute also reads instants (cercore.types.coerce_time); the form of
        # the first one read is how complex events report their times
        self.time_attribute = schema.time_attribute
        self.time_form = TimeForm(schema.time_unit)

    @functools.cached_property
    def stream_ids(self) -> dict[str, int]:
        """``schema.stream_ids``, built once (a record may name its stream, ``push`` its
        event's: a dict per call would cost more than the rest of the lookup)."""
        return self.schema.stream_ids

    def reject(self, err: EventError) -> bool:
        """Handle a bad event: True when it is skipped (and counted), False when the caller
        must stop before it and raise ``err``."""
        if self.on_error == "raise":
            return False
        self.skips.add(err)
        return True

    # ---- records ------------------------------------------------------------------------
    def from_records(self, records: list, first_position: int) -> Batch:
        """Decode a list of ``(type, attrs)`` pairs or Event objects."""
        names = list(self.attr_types)
        values: dict[str, list] = {a: [] for a in names}
        valid: dict[str, list] = {a: [] for a in names}
        type_ids: list[int] = []
        error: EventError | None = None
        for k, rec in enumerate(records):
            pos = first_position + k
            try:
                typ, attrs = self._split(rec, pos)
                tid, row = self._check_record(typ, attrs, pos)
            except EventError as e:
                if not self.reject(e):
                    error = e
                    break
                tid, row = SKIPPED, {}
            type_ids.append(tid)
            for a in names:
                v = row.get(a)
                valid[a].append(v is not None)
                values[a].append(v)
        n = len(type_ids)
        cols: dict[str, Any] = {}
        for a in names:
            t = self.attr_types[a]
            if t is AttrType.STRING:
                cols[a] = StringColumn.encode(values[a])
            else:
                fill = t.fill
                cols[a] = np.array([fill if v is None else v for v in values[a]], dtype=t.dtype)
        return Batch(first_position, n, np.array(type_ids, dtype=np.int32),
                     Columns(n, cols, {a: np.array(valid[a], dtype=bool) for a in names}), error)

    def decode_one(self, typ: Any, attrs: Any, stream: int, pos: int) -> tuple[int, dict | None]:
        """One event at position ``pos`` (the record path): ``typ`` and ``attrs`` as a
        ``(type, attributes)`` record holds them (``attrs`` is ``RAW`` for any other record,
        passed whole as ``typ``), ``stream`` its stream id (-1: untagged, ``UNKNOWN_STREAM``).
        Returns (type id, validated attributes), or (SKIPPED, None) for a skipped event; an
        EventError in raise mode. The checks and messages of ``from_records`` and
        ``tag_streams``."""
        try:
            if attrs is RAW or type(attrs) is not dict:
                typ, attrs = self._split(typ if attrs is RAW else (typ, attrs), pos)
            tid, row = self._check_record(typ, attrs, pos)
            if stream != -1 and (stream == UNKNOWN_STREAM
                                 or not self._stream_carries[stream, tid]):
                self._stream_error(stream, tid, pos)
        except EventError as e:
            if not self.reject(e):
                raise
            return SKIPPED, None
        return tid, row

    def _stream_error(self, stream: int, tid: int, pos: int) -> None:
        if stream == UNKNOWN_STREAM:
            raise EventError(f"unknown stream {self._unknown_stream!r}"
                             + did_you_mean(str(self._unknown_stream), self.schema.stream_ids),
                             position=pos, field="stream", reason=skips.STREAM)
        name = next(n for n, i in self.schema.stream_ids.items() if i == stream)
        raise EventError(f"stream {name} carries no {self.schema.type_names[tid]} events",
                         position=pos, field="stream", reason=skips.STREAM)

    def stream_id(self, name: Any) -> int:
        """The id of a stream tag (-1 for None, ``UNKNOWN_STREAM`` for a name no stream
        has: remembered for the message)."""
        if name is None:
            return -1
        sid = self.stream_ids.get(name) if isinstance(name, str) else None
        if sid is None:
            self._unknown_stream = name
            return UNKNOWN_STREAM
        return sid

    @staticmethod
    def _split(rec, pos: int) -> tuple[str, dict]:
        if isinstance(rec, Event):
            return rec.type, rec.attributes
        if isinstance(rec, Rejected):
            raise EventError(rec.message, position=pos, reason=skips.UNREADABLE)
        if isinstance(rec, tuple) and len(rec) == 2 and isinstance(rec[1], dict):
            return rec
        if isinstance(rec, tuple) and len(rec) == 2 and isinstance(rec[0], str):
            attrs = repr(rec[1])
            raise EventError(f"the attributes of a {rec[0]} event must be a dict (attribute "
                             f"-> value), got {type(rec[1]).__name__} "
                             f"{attrs if len(attrs) <= 40 else attrs[:37] + '...'}",
                             position=pos, reason=skips.NOT_AN_EVENT)
        raise EventError("expected a (type, attributes) pair or an Event, got "
                         f"{type(rec).__name__}", position=pos, reason=skips.NOT_AN_EVENT)

    def _check_record(self, typ: Any, attrs: dict, pos: int) -> tuple[int, dict]:
        declared = self.declared.get(typ) if isinstance(typ, str) else None
        if declared is None:
            raise EventError(f"unknown event type {typ!r}" + did_you_mean(str(typ), self.declared),
                             position=pos, field="event_type", reason=skips.UNKNOWN_TYPE)
        if not declared.keys() >= attrs.keys():
            for a in attrs:
                if a not in declared:
                    raise EventError(f"{typ} has no attribute {a!r}"
                                     + did_you_mean(str(a), declared), position=pos,
                                     field=str(a), reason=skips.UNKNOWN_ATTRIBUTE)
        row = {}
        for a, t, exact in self.checks[typ]:
            v = attrs.get(a, _MISSING)
            if v is None or (type(v) is exact
                             and (exact is not int or INT64_MIN <= v <= INT64_MAX)):
                row[a] = v  # the common case: already the right type
            elif v is _MISSING:
                raise EventError(f"{typ} event lacks attribute {a!r}", position=pos, field=a,
                                 reason=skips.MISSING_ATTRIBUTE)
            elif a == self.time_attribute:
                row[a] = self._time_value(v, typ, a, pos)
            else:
                row[a] = _check_value(v, t, typ, a, pos)
        return self.type_ids[typ], row

    def _time_value(self, v, typ: str, a: str, pos: int) -> int:
        """A value of the time attribute as an int in the schema's unit (``coerce_time``)."""
        value = coerce_time(v, self.time_form.unit)
        if value is NOT_A_VALUE:
            raise EventError(f"{typ}.{a} {time_problem(v, self.time_form.unit)}",
                             position=pos, field=a, reason=skips.WRONG_TYPE)
        self.time_form.saw_value(v)
        return value

    # ---- Arrow --------------------------------------------------------------------------
    def from_arrow(self, table, first_position: int, type_column: str = "event_type",
                   ignore: tuple[str, ...] = ()) -> Batch:
        """Decode a ``pyarrow.Table`` / ``RecordBatch``: a type column plus attribute columns
        (columns in ``ignore`` are read by the caller)."""
        names = table.column_names
        check_columns(names, self.attr_types, type_column, ignore)
        n = table.num_rows
        tcol = one_array(table.column(type_column))
        type_ids = self._arrow_type_ids(tcol)

        def tname(k: int):
            return tcol[int(k)].as_py()

        bad = type_ids == SKIPPED
        # row -> (reason, the error's maker): an error is built only for the row that raises,
        # or for the first skipped rows whose messages the skip log keeps
        problems: dict[int, tuple[str, Any]] = {}

        def unknown_type(k: int) -> EventError:
            return EventError(f"unknown event type {tname(k)!r}"
                              + did_you_mean(str(tname(k)), self.declared),
                              position=first_position + k, field=type_column,
                              reason=skips.UNKNOWN_TYPE)

        for k in np.flatnonzero(bad).tolist():
            problems[k] = (skips.UNKNOWN_TYPE, unknown_type)
        if REJECT_COLUMN in names:  # rows a reader rejected come first: their cells are nulled
            rejects = one_array(table.column(REJECT_COLUMN))
            rejected = ~np.asarray(rejects.is_null().to_numpy(zero_copy_only=False), dtype=bool)

            def unreadable(k: int, rejects=rejects) -> EventError:
                return EventError(rejects[k].as_py(), position=first_position + k,
                                  reason=skips.UNREADABLE)

            for k in np.flatnonzero(rejected).tolist():
                problems[k] = (skips.UNREADABLE, unreadable)
            bad = bad | rejected
        values: dict[str, Any] = {}
        valid: dict[str, np.ndarray] = {}
        for a, t in self.attr_types.items():
            owners = self.owners[a][type_ids]
            if a not in names:
                if owners.any():
                    def missing(k: int, a=a) -> EventError:
                        return EventError(f"{tname(k)} event lacks attribute {a!r} (no such "
                                          "column)", position=first_position + k, field=a,
                                          reason=skips.MISSING_ATTRIBUTE)

                    for j in np.flatnonzero(owners).tolist():
                        problems.setdefault(j, (skips.MISSING_ATTRIBUTE, missing))
                    bad |= owners
                values[a] = (StringColumn(np.zeros(n, np.int32), np.empty(0, object))
                             if t is AttrType.STRING else np.full(n, t.fill, dtype=t.dtype))
                valid[a] = np.zeros(n, dtype=bool)
                continue
            col = one_array(table.column(a))
            if a == self.time_attribute:
                vals, ok, wrong = arrow_time_values(col, self.time_form)
            else:
                vals, ok, wrong = arrow_values(col, t)
            ok = owners if ok is None else ok & owners
            if wrong is not None:
                w = wrong & ok

                def mistyped(k: int, a=a, t=t, col=col) -> EventError:
                    what = (time_problem(col[k].as_py(), self.time_form.unit)
                            if a == self.time_attribute
                            else f"must be {t.value}, got {col[k].as_py()!r}")
                    return EventError(f"attribute {a!r} {what}", position=first_position + k,
                                      field=a, reason=skips.WRONG_TYPE)

                for k in np.flatnonzero(w).tolist():
                    problems.setdefault(k, (skips.WRONG_TYPE, mistyped))
                bad |= w
                ok &= ~w
            values[a] = vals
            valid[a] = ok
        error = None
        if bad.any():
            if self.on_error == "raise":
                n = int(np.flatnonzero(bad)[0])
                error = problems[n][1](n)
                type_ids = type_ids[:n]
                cols = Columns(n, values, valid).head(n)
                return Batch(first_position, n, type_ids, cols, error)
            for k in np.flatnonzero(bad).tolist():
                reason, make = problems[k]
                self.skips.add_lazily(reason, lambda make=make, k=k: make(k))
            type_ids = np.where(bad, SKIPPED, type_ids).astype(np.int32)
            for a in valid:
                valid[a] = valid[a] & ~bad
        return Batch(first_position, n, type_ids, Columns(n, values, valid), error)

    def _arrow_type_ids(self, tcol) -> np.ndarray:
        """Type ids of a column of type names through its dictionary (SKIPPED where unknown
        or null)."""
        strings = string_codes(tcol)
        if strings is None:  # not strings: every event is of an unknown type
            return np.full(len(tcol), SKIPPED, dtype=np.int32)
        column, ok = strings
        lut = np.fromiter((self.type_ids.get(s, SKIPPED) for s in column.dictionary),
                          dtype=np.int32, count=len(column.dictionary))
        ids = lut[column.codes]
        if ok is not None:
            ids[~ok] = SKIPPED
        return ids

    # ---- stream tags ------------------------------------------------------------------
    def tag_streams(self, batch: Batch, names: list) -> None:
        """Tag the batch's events with their streams (names, None = untagged)."""
        ids = self.stream_ids
        codes = np.fromiter((-1 if s is None else ids.get(s, UNKNOWN_STREAM)
                             if isinstance(s, str) else UNKNOWN_STREAM for s in names),
                            dtype=np.int16, count=batch.n)
        self.tag_stream_codes(batch, codes, names.__getitem__)

    def tag_stream_codes(self, batch: Batch, codes: np.ndarray, name_of) -> None:
        """Tag the batch's events with stream ids (int16; -1 untagged: it belongs to every
        stream declaring its type; ``UNKNOWN_STREAM``). An unknown stream, or one that does
        not carry the event's type, is an EventError (or a counted skip). ``name_of(k)`` is
        event k's stream name, for messages."""
        tids = batch.type_ids
        carried = self._stream_carries[np.maximum(codes, 0), tids]
        bad = (codes == UNKNOWN_STREAM) | ((codes >= 0) & ~carried)
        bad &= tids != SKIPPED
        codes = np.where(bad | (tids == SKIPPED), -1, codes).astype(np.int16)
        type_names = self.schema.type_names
        for k in np.flatnonzero(bad).tolist():
            name = name_of(k)
            if not isinstance(name, str) or name not in self.schema.stream_ids:
                msg = f"unknown stream {name!r}" + did_you_mean(str(name), self.schema.stream_ids)
            else:
                msg = f"stream {name} carries no {type_names[tids[k]]} events"
            err = EventError(msg, position=batch.first_position + k, field="stream",
                             reason=skips.STREAM)
            if not self.reject(err):
                batch.streams = codes
                batch.truncate(k, err)
                return
            batch.type_ids[k] = SKIPPED
        batch.streams = codes


def check_columns(names: list[str], attr_types: dict[str, AttrType], type_column: str,
                  ignore: tuple[str, ...] = ()) -> None:
    """The checks of tabular input as a whole (an EventError, never a skip): it has its type
    column, no two columns of one name, and every other column is an attribute of some event
    type (or in ``ignore``, or the ``REJECT_COLUMN`` of a file reader). A column that only
    other event types declare is not an error: each row reads its own type's attributes."""
    if type_column not in names:
        raise EventError(f"the input has no {type_column!r} column")
    if len(set(names)) != len(names):
        dup = next(c for c in names if names.count(c) > 1)
        raise EventError(f"the input has two columns named {dup!r}", field=dup)
    for c in names:
        if c != type_column and c not in attr_types and c not in ignore \
                and c != REJECT_COLUMN:
            raise EventError(f"column {c!r} is not an attribute of any event type"
                             + did_you_mean(c, attr_types), field=c)


def _check_value(v, t: AttrType, typ: str, a: str, pos: int):
    value = coerce(v, t)
    if value is not NOT_A_VALUE:
        return value
    text = repr(v)
    text = text if len(text) <= 60 else text[:57] + "..."
    raise EventError(f"{typ}.{a} must be {t.value}, got {type(v).__name__} {text}",
                     position=pos, field=a, reason=skips.WRONG_TYPE)


# ---- Arrow columns -------------------------------------------------------------------------
def one_array(col):
    """A ``pyarrow.Array`` (a table's chunked column combined)."""
    import pyarrow as pa

    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def _valid(col) -> np.ndarray | None:
    """Validity mask of an Arrow array, None when it has no nulls."""
    if col.null_count == 0:
        return None
    import pyarrow.compute as pc

    return np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), dtype=bool)


def string_codes(col) -> tuple[StringColumn, np.ndarray | None] | None:
    """A string / large_string / string_view / dictionary<string> Arrow array as dictionary
    codes and its validity mask (None: no nulls); None when it holds no strings."""
    import pyarrow as pa
    import pyarrow.compute as pc

    typ = col.type
    if pa.types.is_dictionary(typ):
        if not is_arrow_string(typ.value_type):
            return None
        encoded = col
    elif is_arrow_string(typ):
        encoded = pc.dictionary_encode(col)
    elif pa.types.is_null(typ):
        return StringColumn(np.zeros(len(col), np.int32), np.empty(0, object)), \
            np.zeros(len(col), dtype=bool)
    else:
        return None
    ok = _valid(col)
    indices = encoded.indices
    if indices.null_count:
        indices = pc.fill_null(indices, 0)
    codes = np.asarray(indices.to_numpy(zero_copy_only=False), dtype=np.int32)
    dictionary = encoded.dictionary
    if len(dictionary) > 2 * len(col) + 64:
        # a slice of a large dictionary (a Parquet row group cut into batches): keep the
        # values this batch uses, so per-value work stays proportional to the batch
        used = np.unique(codes)
        dictionary = dictionary.take(pa.array(used))
        codes = np.searchsorted(used, codes).astype(np.int32)
    values = np.asarray(dictionary.to_numpy(zero_copy_only=False), dtype=object)
    if dictionary.null_count:  # a null in the dictionary is a null cell
        null_entry = np.asarray(pc.is_null(dictionary).to_numpy(zero_copy_only=False))
        values[null_entry] = ""
        cell_null = null_entry[codes]
        ok = ~cell_null if ok is None else ok & ~cell_null
    return StringColumn(codes, values), ok


def arrow_values(col, t: AttrType) -> tuple[Any, np.ndarray | None, np.ndarray | None]:
    """(values with nulls filled, validity mask or None when no nulls, mask of values of the
    wrong type or None) of an Arrow array read as attribute type ``t``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(col)
    typ = col.type
    if pa.types.is_null(typ):
        empty = (StringColumn(np.zeros(n, np.int32), np.empty(0, object))
                 if t is AttrType.STRING else np.full(n, t.fill, dtype=t.dtype))
        return empty, np.zeros(n, dtype=bool), None
    if t is AttrType.STRING:
        strings = string_codes(col)
        if strings is None:
            return StringColumn(np.zeros(n, np.int32), np.empty(0, object)), _valid(col), \
                np.ones(n, dtype=bool)
        return strings[0], strings[1], None
    if pa.types.is_dictionary(typ):  # e.g. a categorical of numbers
        col = col.dictionary.take(col.indices)
        typ = col.type
    ok = _valid(col)
    if t is AttrType.BOOL:
        if pa.types.is_boolean(typ):
            filled = col if ok is None else pc.fill_null(col, False)
            return np.asarray(filled.to_numpy(zero_copy_only=False)), ok, None
        return np.zeros(n, dtype=bool), ok, np.ones(n, dtype=bool)
    if not (pa.types.is_integer(typ) or pa.types.is_floating(typ)):
        return np.zeros(n, dtype=t.dtype), ok, np.ones(n, dtype=bool)
    filled = col if ok is None else pc.fill_null(col, 0)
    raw = filled.to_numpy(zero_copy_only=False)  # zero-copy for numbers without nulls
    if t is AttrType.DOUBLE:
        values = raw.astype(np.float64, copy=False)
        if pa.types.is_integer(typ):  # integers beyond 2^53 may not convert exactly
            big = np.flatnonzero(np.abs(values) >= 2.0 ** 53)  # 2^53 + 1 rounds to 2^53
            if len(big):
                wrong = np.zeros(n, dtype=bool)
                wrong[big] = [int(float(x)) != int(x) for x in raw[big].tolist()]
                if wrong.any():
                    return np.where(wrong, 0.0, values), ok, wrong
        return values, ok, None
    if pa.types.is_floating(typ):
        # e.g. pandas ints with NaN nulls: accept integral values that fit in int64
        with np.errstate(invalid="ignore"):
            wrong = ~((raw == np.floor(raw)) & (raw >= -2.0 ** 63) & (raw < 2.0 ** 63))
        return np.where(wrong, 0, raw).astype(np.int64), ok, (wrong if wrong.any() else None)
    if raw.dtype == np.uint64:
        wrong = raw > np.uint64(INT64_MAX)
        return np.where(wrong, 0, raw).astype(np.int64), ok, (wrong if wrong.any() else None)
    return raw.astype(np.int64, copy=False), ok, None


def arrow_time_values(col, form: TimeForm) -> tuple[Any, np.ndarray | None,
                                                      np.ndarray | None]:
    """``arrow_values`` for the time attribute: integers as an int attribute reads them;
    instants -- an Arrow ``timestamp[unit, tz]`` column (pandas ``datetime64``, Parquet,
    CSV), or text (ISO-8601) -- as the whole number of ``form.unit`` since the Unix epoch
    (``cercore.types.coerce_time``; a value with a fraction of a unit is of the wrong
    type). Records in ``form`` that the input wrote instants, and their zone."""
    import pyarrow as pa
    import pyarrow.compute as pc

    typ = col.type
    if pa.types.is_dictionary(typ):
        col = col.dictionary.take(col.indices)
        typ = col.type
    n = len(col)
    if pa.types.is_timestamp(typ):
        ok = _valid(col)
        raw = pc.cast(col, pa.int64())
        raw = (raw if ok is None else pc.fill_null(raw, 0)).to_numpy(zero_copy_only=False)
        have, want = NS_PER_UNIT[typ.unit], NS_PER_UNIT[form.unit]
        if have >= want:  # the column's unit is coarser: scale up (beyond int64: wrong)
            factor = have // want
            limit = INT64_MAX // factor
            wrong = np.abs(raw) > limit
            values = np.where(wrong, 0, raw) * factor
        else:  # finer: a value with a fraction of form.unit is wrong
            div = want // have
            wrong = raw % div != 0
            values = raw // div
        if ok is not None:
            wrong &= ok
        if n and (ok is None or ok.any()):
            form.saw(_arrow_zone(typ.tz))
        return values.astype(np.int64), ok, (wrong if wrong.any() else None)
    if is_arrow_string(typ) or pa.types.is_date(typ):
        ok = _valid(col)
        cells = col.to_pylist()
        values = np.zeros(n, dtype=np.int64)
        wrong = np.zeros(n, dtype=bool)
        for k, v in enumerate(cells):
            if v is None:
                continue
            if pa.types.is_date(typ):  # a date is its midnight
                v = np.datetime64(v, "ns")
            t = coerce_time(v, form.unit)
            if t is NOT_A_VALUE:
                wrong[k] = True
            else:
                values[k] = t
                form.saw_value(v)
        return values, ok, (wrong if wrong.any() else None)
    return arrow_values(col, AttrType.INT)


def _arrow_zone(tz: str | None):
    """The tzinfo of an Arrow timestamp type's zone (None: naive)."""
    if tz is None:
        return None
    import pyarrow as pa

    return pa.scalar(0, pa.timestamp("s", tz)).as_py().tzinfo


def arrow_cells(col, t: AttrType) -> list:
    """The cells of an Arrow array read as attribute type ``t``, as Python values for the
    record decoder, with the columnar path's semantics (``arrow_values``, so both read a
    table alike): a null is None, a value is what the columnar path reads (a whole-number
    double in an int attribute -- pandas' form of an int column with nulls -- is that int),
    and a cell the columnar path finds of the wrong type stays as it is, for the record
    decoder to reject at its own row with its own message."""
    values, ok, wrong = arrow_values(col, t)
    cells = values.tolist()
    if wrong is not None:
        raw = col.to_pylist()
        for k in np.flatnonzero(wrong).tolist():
            cells[k] = raw[k]
    if ok is not None:
        for k in np.flatnonzero(~ok).tolist():
            cells[k] = None
    return cells
