"""Turn user input (``(type, attrs)`` pairs, Event objects, Arrow tables, pandas frames) into
validated columnar batches.

Validation (DESIGN.md "Bad input"): an unknown event type, an attribute the type does not
declare, a declared attribute missing from a record, or a value of the wrong type is an
EventError naming the position and field. With ``on_error="skip"`` the event is skipped and
counted instead; its position is still consumed, so positions always index the input.
An explicit ``None`` (or a null cell) is a null value: predicates on it are false.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cercore.errors import EventError
from cercore.predicates import Columns
from cercore.runtime.output import Event
from cercore.schema import AttrType, Schema, did_you_mean

_DTYPES = {AttrType.INT: np.int64, AttrType.DOUBLE: np.float64, AttrType.BOOL: np.bool_,
           AttrType.STRING: object}
_FILL = {AttrType.INT: 0, AttrType.DOUBLE: 0.0, AttrType.BOOL: False, AttrType.STRING: ""}
SKIPPED = -1  # type id of an event that failed validation and was skipped


@dataclass
class Batch:
    """Events ``first_position .. first_position + n - 1`` as columns.

    ``type_ids[k] == SKIPPED`` marks a skipped event. When ``error`` is set (``on_error="raise"``)
    the batch holds only the events before the bad one, and the engine raises after them.
    """

    first_position: int
    n: int
    type_ids: np.ndarray
    columns: Columns
    error: EventError | None = None
    # stream id of each event (int16), -1 where untagged (it belongs to every stream declaring
    # its type); None: the whole batch is untagged
    streams: np.ndarray | None = None

    def truncate(self, n: int, error: EventError) -> None:
        """Keep only the first ``n`` events; the engine raises ``error`` after them."""
        self.n = n
        self.type_ids = self.type_ids[:n]
        self.columns = Columns(n, {a: v[:n] for a, v in self.columns.values.items()},
                               {a: v[:n] for a, v in self.columns.valid.items()})
        if self.streams is not None:
            self.streams = self.streams[:n]
        self.error = error

    def event(self, k: int, schema: Schema) -> Event:
        """Materialise event ``k`` of this batch."""
        et = schema.event_types[schema.type_names[self.type_ids[k]]]
        attrs: dict[str, Any] = {}
        for a, _ in et.attributes:
            ok = self.columns.valid[a][k]
            v = self.columns.values[a][k]
            attrs[a] = (v.item() if hasattr(v, "item") else v) if ok else None
        return Event(et.name, self.first_position + k, attrs)

    def attribute_dicts(self, schema: Schema) -> list[dict[str, Any] | None]:
        """Every event's attributes as a dict (None for a skipped event): ``event(k)`` for
        the whole batch, converting each column to Python values once."""
        values = {a: v.tolist() for a, v in self.columns.values.items()}
        valid = {a: v.tolist() for a, v in self.columns.valid.items()}
        declared = [[(a, values[a], valid[a]) for a, _ in schema.event_types[n].attributes]
                    for n in schema.type_names]
        return [None if tid == SKIPPED else
                {a: vals[k] if oks[k] else None for a, vals, oks in declared[tid]}
                for k, tid in enumerate(self.type_ids.tolist())]


@dataclass
class SkipLog:
    """Counts of skipped events by reason, plus the first few messages."""

    count: int = 0
    by_reason: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)

    def add(self, err: EventError, reason: str) -> None:
        self.count += 1
        self.by_reason[reason] += 1
        if len(self.examples) < 20:
            self.examples.append(str(err))


class EventDecoder:
    """Validates input events against the schema and lays them out as columns."""

    def __init__(self, schema: Schema, on_error: str = "raise") -> None:
        if on_error not in ("raise", "skip"):
            raise ValueError("on_error must be 'raise' or 'skip'")
        self.schema = schema
        self.on_error = on_error
        self.attr_types = schema.attribute_types()
        self.type_ids = {n: e.id for n, e in schema.event_types.items()}
        self.declared = {n: dict(e.attributes) for n, e in schema.event_types.items()}
        # per type: (attribute, type, the Python type a valid value usually has exactly)
        self.checks = {n: tuple((a, t, _EXACT[t]) for a, t in e.attributes)
                       for n, e in schema.event_types.items()}
        self.skips = SkipLog()

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
                if self.on_error == "raise":
                    error = e
                    break
                self.skips.add(e, _reason(e))
                tid, row = SKIPPED, {}
            type_ids.append(tid)
            for a in names:
                v = row.get(a)
                valid[a].append(v is not None)
                values[a].append(_FILL[self.attr_types[a]] if v is None else v)
        n = len(type_ids)
        cols = Columns(n, {a: np.array(values[a], dtype=_DTYPES[self.attr_types[a]])
                           for a in names},
                       {a: np.array(valid[a], dtype=bool) for a in names})
        return Batch(first_position, n, np.array(type_ids, dtype=np.int32), cols, error)

    @staticmethod
    def _split(rec, pos: int) -> tuple[str, dict]:
        if isinstance(rec, Event):
            return rec.type, rec.attributes
        if isinstance(rec, tuple) and len(rec) == 2 and isinstance(rec[1], dict):
            return rec
        raise EventError("expected a (type, attributes) pair or an Event, got "
                         f"{type(rec).__name__}", position=pos)

    def _check_record(self, typ: str, attrs: dict, pos: int) -> tuple[int, dict]:
        declared = self.declared.get(typ)
        if declared is None:
            raise EventError(f"unknown event type {typ!r}" + did_you_mean(str(typ), self.declared),
                             position=pos, field="event_type")
        if not declared.keys() >= attrs.keys():
            for a in attrs:
                if a not in declared:
                    raise EventError(f"{typ} has no attribute {a!r}" + did_you_mean(a, declared),
                                     position=pos, field=a)
        row = {}
        for a, t, exact in self.checks[typ]:
            v = attrs.get(a, _MISSING)
            if v is None or type(v) is exact:  # the common case: already the right type
                row[a] = v
            elif v is _MISSING:
                raise EventError(f"{typ} event lacks attribute {a!r}", position=pos, field=a)
            else:
                row[a] = _check_value(v, t, typ, a, pos)
        return self.type_ids[typ], row

    # ---- Arrow --------------------------------------------------------------------------
    def tag_streams(self, batch: Batch, names: list) -> None:
        """Tag the batch's events with their streams (names, None = untagged): an unknown
        stream, or one that does not carry the event's type, is an EventError (or a counted
        skip)."""
        ids = self.schema.stream_ids
        codes = np.full(batch.n, -1, dtype=np.int16)
        for k in range(batch.n):
            name = names[k]
            tid = batch.type_ids[k]
            if name is None or tid == SKIPPED:
                continue
            err = None
            if name not in ids:
                err = EventError(f"unknown stream {name!r}" + did_you_mean(str(name), ids),
                                 position=batch.first_position + k, field="stream")
            else:
                typ = self.schema.type_names[tid]
                if typ not in self.schema.streams[name].event_types:
                    err = EventError(f"stream {name} carries no {typ} events",
                                     position=batch.first_position + k, field="stream")
            if err is None:
                codes[k] = ids[name]
            elif self.on_error == "raise":
                batch.streams = codes
                batch.truncate(k, err)
                return
            else:
                self.skips.add(err, "stream")
                batch.type_ids[k] = SKIPPED
        batch.streams = codes

    def _arrow_type_ids(self, tcol) -> np.ndarray:
        """Type ids of a column of type names, vectorised (SKIPPED where unknown)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        names = list(self.type_ids)
        try:
            idx = pc.index_in(tcol, value_set=pa.array(names, pa.string()))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # not strings: row by row
            return np.array([self.type_ids.get(t, SKIPPED) for t in tcol.to_pylist()],
                            dtype=np.int32)
        ids = np.array([self.type_ids[n] for n in names] + [SKIPPED], dtype=np.int32)
        return ids[idx.fill_null(len(names)).to_numpy(zero_copy_only=False)]

    def from_arrow(self, table, first_position: int, type_column: str = "event_type",
                   ignore: tuple[str, ...] = ()) -> Batch:
        """Decode a ``pyarrow.Table`` / ``RecordBatch``: a type column plus attribute columns
        (columns in ``ignore`` are read by the caller)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if type_column not in table.column_names:
            raise EventError(f"the input has no {type_column!r} column")
        n = table.num_rows
        for c in table.column_names:
            if c != type_column and c not in self.attr_types and c not in ignore:
                raise EventError(f"column {c!r} is not an attribute of any event type"
                                 + did_you_mean(c, self.attr_types), field=c)
        tcol = table.column(type_column)
        type_ids = self._arrow_type_ids(tcol)

        def tname(k: int):
            return tcol[int(k)].as_py()

        bad = np.zeros(n, dtype=bool)
        messages: dict[int, EventError] = {}
        for k in np.flatnonzero(type_ids == SKIPPED):
            messages[int(k)] = EventError(
                f"unknown event type {tname(k)!r}" + did_you_mean(str(tname(k)), self.declared),
                position=first_position + int(k), field=type_column)
            bad[k] = True
        values: dict[str, np.ndarray] = {}
        valid: dict[str, np.ndarray] = {}
        for a, t in self.attr_types.items():
            owner_ids = [self.type_ids[e] for e, d in self.declared.items() if a in d]
            owners = np.isin(type_ids, owner_ids)
            if a not in table.column_names:
                if owners.any():
                    k = int(np.flatnonzero(owners)[0])
                    messages.setdefault(k, EventError(
                        f"{tname(k)} event lacks attribute {a!r} (no such column)",
                        position=first_position + k, field=a))
                    bad |= owners
                values[a] = np.full(n, _FILL[t], dtype=_DTYPES[t])
                valid[a] = np.zeros(n, dtype=bool)
                continue
            col = table.column(a)
            if isinstance(col, pa.ChunkedArray):
                col = col.combine_chunks()
            ok = np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), dtype=bool) & owners
            vals, wrong = _arrow_values(col, t)
            if wrong is not None:
                w = wrong & ok
                for k in np.flatnonzero(w)[:1]:
                    messages.setdefault(int(k), EventError(
                        f"attribute {a!r} must be {t.value}, got {col[int(k)].as_py()!r}",
                        position=first_position + int(k), field=a))
                bad |= w
                ok &= ~w
            values[a] = vals
            valid[a] = ok
        error = None
        if bad.any():
            if self.on_error == "raise":
                k = int(np.flatnonzero(bad)[0])
                error = messages.get(k) or EventError("invalid event", position=first_position + k)
                n = k
                type_ids = type_ids[:n]
                values = {a: v[:n] for a, v in values.items()}
                valid = {a: v[:n] for a, v in valid.items()}
            else:
                for k in np.flatnonzero(bad):
                    e = messages.get(int(k)) or EventError(
                        "invalid value", position=first_position + int(k))
                    self.skips.add(e, _reason(e))
                type_ids = np.where(bad, SKIPPED, type_ids).astype(np.int32)
                for a in valid:
                    valid[a] = valid[a] & ~bad
        return Batch(first_position, n, type_ids, Columns(n, values, valid), error)


def _reason(e: EventError) -> str:
    msg = str(e)
    for key in ("unknown event type", "has no attribute", "lacks attribute", "must be",
                "time goes backwards", "time attribute", "expected a"):
        if key in msg:
            return key
    return "invalid event"


_MISSING = object()
_EXACT = {AttrType.INT: int, AttrType.DOUBLE: float, AttrType.STRING: str, AttrType.BOOL: bool}


def _check_value(v, t: AttrType, typ: str, a: str, pos: int):
    if v is None:
        return None
    if t is AttrType.INT:
        if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            return int(v)
    elif t is AttrType.DOUBLE:
        numeric = isinstance(v, (int, float, np.integer, np.floating))
        if numeric and not isinstance(v, (bool, np.bool_)):
            return float(v)
    elif t is AttrType.STRING:
        if isinstance(v, str):
            return v
    elif isinstance(v, (bool, np.bool_)):
        return bool(v)
    raise EventError(f"{typ}.{a} must be {t.value}, got {type(v).__name__} {v!r}",
                     position=pos, field=a)


def _arrow_values(col, t: AttrType) -> tuple[np.ndarray, np.ndarray | None]:
    """(numpy values with nulls filled, mask of values of the wrong type or None)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(col)
    typ = col.type
    if pa.types.is_null(typ):
        return np.full(n, _FILL[t], dtype=_DTYPES[t]), None
    if t is AttrType.STRING:
        if pa.types.is_string(typ) or pa.types.is_large_string(typ):
            return np.array(pc.fill_null(col, "").to_pylist(), dtype=object), None
        return np.full(n, "", dtype=object), np.ones(n, dtype=bool)
    if t is AttrType.BOOL:
        if pa.types.is_boolean(typ):
            return np.asarray(pc.fill_null(col, False).to_numpy(zero_copy_only=False)), None
        return np.zeros(n, dtype=bool), np.ones(n, dtype=bool)
    if not (pa.types.is_integer(typ) or pa.types.is_floating(typ)):
        return np.zeros(n, dtype=_DTYPES[t]), np.ones(n, dtype=bool)
    raw = np.asarray(pc.fill_null(col, 0).to_numpy(zero_copy_only=False))
    if t is AttrType.DOUBLE:
        return raw.astype(np.float64), None
    if pa.types.is_floating(typ):  # e.g. pandas ints with NaN nulls: accept integral values
        wrong = raw != np.floor(raw)
        return np.where(wrong, 0, raw).astype(np.int64), wrong
    return raw.astype(np.int64), None
