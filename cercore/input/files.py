"""Event files read into Arrow tables: CSV, JSON Lines and Parquet, whole.

Input files hold one event per row: a type column (``event_type`` by default) and one column per
attribute, named as in the declaration. An event type's missing attributes are null (an empty
CSV cell, a JSON ``null`` or an absent key). Columns are read as the declared types
(``cercore.types``: ``int`` -> int64, ``double`` -> float64, ``string`` -> string, ``bool`` ->
bool; a value is converted only where it denotes a value of that type exactly). The time
attribute holds integers or instants: ISO-8601 text (``2024-03-01T09:30:02``, ``...Z``,
``...+01:00``) becomes an Arrow ``timestamp`` column, which the decoder reads as instants
(``cercore.input.decode.arrow_time_values``).

Formats: CSV (``.csv``), JSON Lines (``.jsonl``, ``.ndjson``; ``.json`` may also hold one JSON
array of objects) and Parquet (``.parquet``, ``.pq``). ``cercore.input.lines`` reads CSV and
JSON Lines one line at a time instead (a pipe, a growing file), with the conversions here.
Users reach this through ``cercore.io.read_events``.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from cercore.errors import CercoreError, EventError, did_you_mean
from cercore.input.options import checked_on_error
from cercore.schema import Schema
from cercore.types import NOT_A_VALUE, AttrType, coerce, is_arrow_string, parse_instant

__all__ = ["INPUT_FORMATS", "decode_utf8", "guess_format", "locate_row", "read_events",
           "text_or_file"]

INPUT_FORMATS = ("csv", "jsonl", "parquet")

_EXTENSIONS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl",
               ".parquet": "parquet", ".pq": "parquet"}
_TRUE = ["true", "True", "TRUE", "1"]
_FALSE = ["false", "False", "FALSE", "0"]


def guess_format(path: str | os.PathLike) -> str:
    """The input format implied by a file name's extension."""
    suffix = Path(path).suffix.lower()
    try:
        return _EXTENSIONS[suffix]
    except KeyError:
        raise CercoreError(
            f"cannot tell the format of {str(path)!r} from its extension; use one of "
            f"{', '.join(sorted(_EXTENSIONS))} or give the format explicitly") from None


# ---- reading -------------------------------------------------------------------------------
def read_events(path: str | os.PathLike | IO[bytes], schema: Schema, format: str | None = None,
                type_column: str = "event_type", stream_column: str | None = None, *,
                on_error: str = "raise"):
    """Read an event file into a ``pyarrow.Table`` typed by ``schema``.

    ``path`` is a file name or a binary file object (then ``format`` is required). ``format`` is
    ``"csv"``, ``"jsonl"`` or ``"parquet"``; by default it follows the file extension. Raises
    ``EventError`` for a column no event type declares, a missing type column, or a value that
    does not convert (naming the line or row and the column). ``stream_column`` names an
    optional string column with each event's stream (see ``CompiledQuery.engine``).

    With ``on_error="skip"``, a CSV or JSON row whose values do not convert (or a malformed
    line, or a JSON Lines line that is not UTF-8) does not fail the file: the row stays in
    place with its problem in the column ``cercore.input.REJECT_COLUMN``, and an engine run
    with ``on_error="skip"`` skips that event and counts it as "unreadable in the file" (with
    ``"raise"``, it raises there), so positions still index the file's rows.
    """
    checked_on_error(on_error)
    if format is None:
        if not isinstance(path, (str, os.PathLike)):
            raise CercoreError("read_events: give format= when reading from a file object")
        format = guess_format(path)
    format = {"json": "jsonl", "ndjson": "jsonl", "pq": "parquet"}.get(format.lower(),
                                                                       format.lower())
    if format not in INPUT_FORMATS:
        raise CercoreError(f"unknown input format {format!r}; use one of "
                           + ", ".join(INPUT_FORMATS))
    types = _column_types(schema, type_column, stream_column)
    time = schema.time_attribute
    if format == "parquet":  # typed columns: a bad value is a file-level problem
        return _read_parquet(path, types, type_column, time)
    reader = {"csv": _read_csv, "jsonl": _read_jsonl}[format]
    return reader(path, types, type_column, on_error == "skip", time)


def _column_types(schema: Schema, type_column: str, stream_column: str | None
                  ) -> dict[str, AttrType]:
    """The type of every column an event file may have, but the type column's."""
    types = schema.attribute_types()
    for role, col in (("type", type_column), ("stream", stream_column)):
        if col in types:
            raise CercoreError(f"{role} column {col!r} is also an attribute name; "
                               f"choose another {role} column")
    if stream_column is not None:  # read like a string attribute that no event type declares
        types = {**types, stream_column: AttrType.STRING}
    return types


def _name(path) -> str:
    return str(path) if isinstance(path, (str, os.PathLike)) else getattr(path, "name", "<input>")


def _check_columns(columns: list[str], types: dict[str, AttrType], type_column: str,
                   where: str) -> None:
    seen: set[str] = set()
    for c in columns:
        if c in seen:
            raise EventError(f"{where}: column {c!r} appears twice", field=c)
        seen.add(c)
        if c != type_column and c not in types:
            raise EventError(f"{where}: column {c!r} is not an attribute of any event type"
                             + did_you_mean(c, types), field=c)
    if type_column not in seen:
        raise EventError(f"{where}: no {type_column!r} column (the event type); columns are "
                         + ", ".join(repr(c) for c in columns), field=type_column)


def _read_csv(path, types: dict[str, AttrType], type_column: str, lenient: bool = False,
              time: str | None = None):
    import pyarrow as pa
    import pyarrow.csv as pacsv

    where = _name(path)
    data = path.read() if hasattr(path, "read") else Path(path).read_bytes()
    if isinstance(data, str):
        data = data.encode()
    header = _csv_header(data.split(b"\n", 1)[0].decode("utf-8-sig", "replace"), types,
                         type_column, where)
    # the time column's type is Arrow's guess: int64 for integers, timestamp for ISO-8601
    column_types = {c: types[c].arrow_type() for c in header if c not in (type_column, time)}
    column_types[type_column] = pa.string()
    convert = pacsv.ConvertOptions(
        column_types=column_types, null_values=[""], strings_can_be_null=True,
        quoted_strings_can_be_null=False, true_values=_TRUE, false_values=_FALSE)
    read = pacsv.ReadOptions(column_names=header, skip_rows=1)
    try:
        return pacsv.read_csv(io.BytesIO(data), read_options=read, convert_options=convert)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        # the cells Arrow's fast path does not read (``+7``, ``7.0`` for an int): the csv
        # module reads every row, by the cell readers below, whatever ``on_error`` says --
        # raising at the first bad row, or keeping bad rows as rejected
        rows = _csv_rows(data, header, types, type_column, where, time)
        if not lenient:
            rows = list(rows)
            problem = next((p for _, p in rows if p is not None), None)
            if problem is not None:
                raise problem from None
        return _rows_table(rows, header, types, type_column, time)


def _csv_header(line: str, types: dict[str, AttrType], type_column: str,
                where: str) -> list[str]:
    """The column names of a CSV header line (decoded), checked against ``types``."""
    try:
        header = next(csv.reader([line.rstrip("\r\n")]), [])
    except csv.Error as exc:  # e.g. a carriage return inside the header line
        raise EventError(f"{where}: unreadable CSV header: {exc}") from None
    if not header or header == [""]:
        raise EventError(f"{where}: empty CSV file (expected a header line)")
    header = [h.strip() for h in header]
    _check_columns(header, types, type_column, where)
    return header


def _csv_rows(data: bytes, header: list[str], types: dict[str, AttrType], type_column: str,
              where: str, time: str | None = None
              ) -> Iterator[tuple[dict[str, Any], EventError | None]]:
    """Every data row with the csv module (slow path, only after Arrow failed): its values
    (converted; None where empty or bad) and the row's first problem, if any."""
    text = data.decode("utf-8-sig", "replace")
    return _csv_line_rows(io.StringIO(text, newline=""), header, types, type_column, where,
                          time)


def _csv_line_rows(lines: Iterable[str], header: list[str], types: dict[str, AttrType],
                   type_column: str, where: str, time: str | None = None
                   ) -> Iterator[tuple[dict[str, Any], EventError | None]]:
    """``_csv_rows`` over text lines (line ends kept; the header line first, skipped), each
    read only when the row before it has been handled: a file read whole, or a stream read
    line by line (``cercore.input.lines``). ``time``: the time column (integers or
    ISO-8601 instants)."""
    reader = csv.reader(lines)
    next(reader, None)
    # per column: None (strings, the type column) or the cell's converter
    converters = [None if col == type_column else _time_cell if col == time
                  else _CELL_READERS[types[col]] for col in header]
    columns = list(zip(header, converters))
    for row_number, row in enumerate(reader, start=1):
        line = reader.line_num
        if not row:
            continue
        if len(row) != len(header):
            yield {}, EventError(f"{where}, line {line}: expected {len(header)} fields, "
                                 f"found {len(row)}")
            continue
        values: dict[str, Any] = {}
        problem = None
        for (col, convert), cell in zip(columns, row):
            if cell == "":
                values[col] = None
            elif convert is None:
                values[col] = cell
            elif (v := convert(cell)) is not NOT_A_VALUE:
                values[col] = v
            else:
                values[col] = None
                problem = problem or EventError(
                    f"{where}, line {line} (row {row_number}), column {col!r}: cannot read "
                    f"{cell!r} as " + ("an integer or an ISO-8601 time" if col == time
                                       else types[col].value), field=col)
        yield values, problem


# The numbers a cell may write (ASCII, no digit separators, blanks around): every form Arrow's
# CSV reader (the fast path) reads -- so a cell means the same whichever path reads its file --
# and more: an integer (decimal, or 0x hexadecimal as Arrow reads it), a decimal, an exponent,
# inf, infinity, nan.
_INT_TEXT = re.compile(r"\s*[+-]?[0-9]+\s*", re.ASCII)
_HEX_TEXT = re.compile(r"\s*0[xX][0-9a-fA-F]+\s*", re.ASCII)
_FLOAT_TEXT = re.compile(r"\s*[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                         r"|inf(?:inity)?|nan)\s*", re.ASCII | re.IGNORECASE)


def _int_cell(cell: str) -> Any:
    """The number the cell writes, read as an int attribute reads any number
    (``cercore.types.coerce``: ``7.0`` and ``1e3`` are whole numbers, ``7.5`` is not)."""
    if _INT_TEXT.fullmatch(cell):
        return coerce(int(cell), AttrType.INT)
    if _HEX_TEXT.fullmatch(cell):
        return coerce(int(cell, 16), AttrType.INT)
    if _FLOAT_TEXT.fullmatch(cell):
        return coerce(float(cell), AttrType.INT)
    return NOT_A_VALUE


def _time_cell(cell: str) -> Any:
    """A time cell: an integer (as ``_int_cell``) or an ISO-8601 instant (a datetime)."""
    v = _int_cell(cell)
    return v if v is not NOT_A_VALUE else _time_text(cell)


def _time_text(text: str) -> Any:
    instant = parse_instant(text)
    return NOT_A_VALUE if instant is None else instant


def _time_array(values: list):
    """The Arrow column of a time attribute's values: int64 for integers, ``timestamp[us]``
    for datetimes (``timestamp[us, UTC]`` when any states its zone; naive ones are UTC);
    a column mixing the two is kept as text, for the decoder to name the odd cells."""
    import pyarrow as pa

    present = [v for v in values if v is not None]
    instants = [v for v in present if isinstance(v, dt.datetime)]
    if not instants:
        return pa.array(values, type=pa.int64())
    if len(instants) < len(present):
        return pa.array([None if v is None else v.isoformat() if isinstance(v, dt.datetime)
                         else str(v) for v in values], type=pa.string())
    if all(v.tzinfo is None for v in instants):
        return pa.array(values, type=pa.timestamp("us"))
    # one offset throughout (+02:00): kept, so times are reported as written; else UTC
    offsets = {v.utcoffset() for v in instants}
    zone = "UTC"
    if len(offsets) == 1 and None not in offsets:
        minutes = int(next(iter(offsets)).total_seconds()) // 60
        zone = f"{'-' if minutes < 0 else '+'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    return pa.array([None if v is None else v.replace(tzinfo=dt.UTC) if v.tzinfo is None
                     else v for v in values], type=pa.timestamp("us", zone))


def _double_cell(cell: str) -> Any:
    return float(cell) if _FLOAT_TEXT.fullmatch(cell) else NOT_A_VALUE


def _bool_cell(cell: str) -> Any:
    return True if cell in _TRUE else False if cell in _FALSE else NOT_A_VALUE


# a CSV cell's value for each attribute type (None: the cell itself), or NOT_A_VALUE
_CELL_READERS = {AttrType.STRING: None, AttrType.INT: _int_cell, AttrType.DOUBLE: _double_cell,
                 AttrType.BOOL: _bool_cell}


def _rows_table(rows: Iterable[tuple[dict[str, Any], EventError | None]], columns: list[str],
                types: dict[str, AttrType], type_column: str, time: str | None = None):
    """A table of converted rows; a row with a problem keeps its place, nulled, with the
    problem's message in REJECT_COLUMN."""
    import pyarrow as pa

    from cercore.input import REJECT_COLUMN

    data: dict[str, list] = {c: [] for c in columns}
    rejected: list[str | None] = []
    for values, problem in rows:
        for c in columns:
            data[c].append(None if problem is not None else values.get(c))
        rejected.append(None if problem is None else str(problem))
    arrays = {c: _time_array(data[c]) if c == time else
              pa.array(data[c], type=pa.string() if c == type_column
                       else types[c].arrow_type()) for c in columns}
    arrays[REJECT_COLUMN] = pa.array(rejected, type=pa.string())
    return pa.table(arrays)


def _read_jsonl(path, types: dict[str, AttrType], type_column: str, lenient: bool = False,
                time: str | None = None):
    where = _name(path)
    data = path.read() if hasattr(path, "read") else Path(path).read_bytes()
    try:
        text = decode_utf8(data, where) if isinstance(data, bytes) else data
    except EventError:
        if not lenient or data.lstrip().startswith((b"[", b"\xef\xbb\xbf[")):
            raise  # raise mode, or one JSON array: the file is no JSON
        # JSON Lines skipping bad rows: a line that is not UTF-8 is one rejected row (the
        # escaped bytes mark it, _json_lines); the other lines are read as they are
        text = data.decode("utf-8-sig", "surrogateescape")
    records: Iterable[tuple[int, Any]]
    if text.lstrip().startswith("["):  # a .json file holding one array of objects
        try:
            array = json.loads(text)
        except json.JSONDecodeError as exc:
            raise EventError(f"{where}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
        except RecursionError:
            raise EventError(f"{where}: JSON nested too deeply") from None
        records = ((i, obj) for i, obj in enumerate(array, start=1))
        unit = "item"
    else:
        records = _json_lines(text, where)
        unit = "line"
    rows: list[tuple[dict[str, Any], EventError | None]] = []
    columns = [type_column]  # in order of first appearance
    null_type_at = None  # the first object whose type is null
    for number, obj in records:
        values, problem = _json_row(obj, types, type_column, f"{where}, {unit} {number}",
                                    time)
        if problem is not None and not lenient:
            raise problem
        for key in values:
            if key not in columns:
                columns.append(key)
        rows.append((values, problem))
        if null_type_at is None and problem is None and type_column in values \
                and values[type_column] is None:
            null_type_at = number
    if rows and all(v.get(type_column) is None for v, p in rows if p is None) \
            and any(p is None for _, p in rows):
        # no event has a type: the file's fault (a wrong type column?), not one row's
        if null_type_at is not None:
            raise EventError(f"{where}, {unit} {null_type_at}: {type_column!r} (the event "
                             "type) is null, and no object has a type", field=type_column)
        raise EventError(f"{where}: no {type_column!r} key (the event type) in any object",
                         field=type_column)
    ordered = [type_column] + sorted(columns[1:], key=list(types).index)
    table = _rows_table(rows, ordered, types, type_column, time)
    return table if any(p is not None for _, p in rows) else table.drop_columns(
        [table.column_names[-1]])


def _json_row(obj: Any, types: dict[str, AttrType], type_column: str, where: str,
              time: str | None = None) -> tuple[dict[str, Any], EventError | None]:
    """One JSON object's values, converted, and its first problem (values of a bad row are
    dropped; a key no event type declares fails the file). ``time``: the time attribute,
    whose strings are read as ISO-8601 instants (datetimes)."""
    if isinstance(obj, EventError):  # a malformed line
        return {}, obj
    if not isinstance(obj, dict):
        return {}, EventError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    values: dict[str, Any] = {}
    for key, v in obj.items():
        if key != type_column and key not in types:
            raise EventError(f"{where}: column {key!r} is not an attribute of any event type"
                             + did_you_mean(key, types), field=key)
        if v is None:
            values[key] = None
        elif key == type_column:
            if not isinstance(v, str):
                return {}, EventError(f"{where}: {type_column!r} must be a string, got {v!r}",
                                      field=key)
            values[key] = v
        else:
            if key == time and isinstance(v, str):
                converted = _time_text(v)
            else:
                converted = coerce(v, types[key])
            if converted is NOT_A_VALUE:
                return {}, EventError(f"{where}, column {key!r}: cannot read {v!r} as "
                                      + ("an integer or an ISO-8601 time" if key == time
                                         else types[key].value), field=key)
            values[key] = converted
    return values, None


def locate_row(path: str | os.PathLike, row: int, format: str | None = None) -> str | None:
    """Where the ``row``-th event (0-based: its position when read whole, no reorder
    slack) is written in the file ``path``, as ``"FILE, line N"`` (``"FILE, row N"`` for
    Parquet, ``"FILE, item N"`` for one JSON array), for messages about an event found bad
    after reading (time going backwards); None when the file has no such row. Reads the
    file again: called only for an error."""
    where = str(path)
    format = format or guess_format(path)
    format = {"json": "jsonl", "ndjson": "jsonl", "pq": "parquet"}.get(format, format)
    if format == "parquet":
        return f"{where}, row {row}"
    try:
        text = Path(path).read_bytes().decode("utf-8-sig", "replace")
    except OSError:
        return None
    if format == "csv":  # data rows as the readers count them: empty rows are no events
        reader = csv.reader(io.StringIO(text, newline=""))
        next(reader, None)
        k = 0
        for cells in reader:
            if not cells:
                continue
            if k == row:
                return f"{where}, line {reader.line_num}"
            k += 1
        return None
    if text.lstrip().startswith("["):
        return f"{where}, item {row + 1}"
    k = 0
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        if k == row:
            return f"{where}, line {number}"
        k += 1
    return None


def text_or_file(value: str) -> str:
    """``value`` itself (query or declaration text), or the contents of the file it names
    (``-``: standard input)."""
    if value == "-":
        return sys.stdin.read()
    if "\n" not in value and len(value) < 4096 and os.path.isfile(value):
        return decode_utf8(Path(value).read_bytes(), value)
    return value


def decode_utf8(data: bytes, where: str) -> str:
    """``data`` as UTF-8 text (a BOM allowed), or an EventError naming the bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        text = exc.object  # what was decoded: without the BOM, so index that
        line = text[:exc.start].count(b"\n") + 1
        raise EventError(f"{where}, line {line}: not UTF-8 text (byte "
                         f"0x{text[exc.start]:02x})") from None


# the code points ``surrogateescape`` decodes a byte that is not UTF-8 to (valid UTF-8 never
# decodes to a lone surrogate)
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def _json_lines(text: str, where: str) -> Iterator[tuple[int, Any]]:
    """(line number, parsed object) per non-blank line; an EventError in place of the object
    for a malformed line (the caller raises it, or keeps the row as rejected)."""
    # lines end at "\n" only (JSON Lines): ``str.splitlines`` also breaks at U+2028, U+0085
    # and others, which JSON strings may hold as they are
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        bad = _ESCAPED_BYTE.search(line)
        if bad is not None:  # decoded with surrogateescape: a byte that is not UTF-8
            yield number, EventError(f"{where}, line {number}: not UTF-8 text (byte "
                                     f"0x{ord(bad.group()) - 0xdc00:02x})")
            continue
        yield number, _json_line(line, number, where)


def _json_line(line: str, number: int, where: str) -> Any:
    """One non-blank line of JSON Lines parsed, or an EventError naming line ``number``."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        return EventError(f"{where}, line {number}: invalid JSON ({exc.msg}, "
                          f"column {exc.colno})")
    except RecursionError:
        return EventError(f"{where}, line {number}: JSON nested too deeply")


def _read_parquet(path, types: dict[str, AttrType], type_column: str,
                  time: str | None = None):
    import pyarrow as pa
    import pyarrow.parquet as pq

    where = _name(path)
    try:
        # string columns are read as dictionaries straight from Parquet's dictionary pages:
        # half the read time, and the engine compares codes, not strings
        fields = pq.read_schema(path)
        strings = [f.name for f in fields if is_arrow_string(f.type)
                   and (f.name == type_column or types.get(f.name) is AttrType.STRING)]
        if hasattr(path, "seek"):
            path.seek(0)
        table = pq.read_table(path, read_dictionary=strings)
    except (pa.ArrowInvalid, OSError) as exc:
        raise EventError(f"{where}: cannot read Parquet: {exc}") from None
    _check_columns(table.column_names, types, type_column, where)
    columns = {}
    for name in table.column_names:
        col = table.column(name)
        if name == type_column:
            typ = col.type.value_type if pa.types.is_dictionary(col.type) else col.type
            if not (is_arrow_string(typ) or pa.types.is_null(typ)):
                raise EventError(f"{where}: column {name!r} must hold strings, not {col.type}",
                                 field=name)
            columns[name] = col  # read as it is: the engine maps names through the dictionary
            continue
        if name == time and (pa.types.is_timestamp(col.type) or pa.types.is_date(col.type)):
            columns[name] = col  # instants: the decoder reads them (arrow_time_values)
            continue
        t = types[name]
        columns[name] = _cast_column(col, t, name, where)
    return pa.table(columns)


def _cast_column(col, t: AttrType, name: str, where: str):
    import pyarrow as pa
    import pyarrow.compute as pc

    target = t.arrow_type()
    typ = col.type
    if pa.types.is_dictionary(typ):
        if t is AttrType.STRING and is_arrow_string(typ.value_type):
            return col  # dictionary-encoded strings stay encoded: the engine reads the codes
        col = col.cast(typ.value_type)
        typ = col.type
    if t is AttrType.STRING and is_arrow_string(typ):
        return col  # string, large_string and string_view are all read as they are
    ok = (pa.types.is_null(typ)
          or (t is AttrType.BOOL and pa.types.is_boolean(typ))
          or (t is AttrType.DOUBLE and (pa.types.is_integer(typ) or pa.types.is_floating(typ)))
          or (t is AttrType.INT and (pa.types.is_integer(typ) or pa.types.is_floating(typ))))
    if not ok:
        raise EventError(f"{where}: column {name!r} has type {typ}, expected {t.value}",
                         field=name)
    try:
        return pc.cast(col, target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        values = col.to_pylist()
        for row, v in enumerate(values):
            if v is not None and coerce(v, t) is NOT_A_VALUE:
                raise EventError(f"{where}, row {row}, column {name!r}: cannot read {v!r} as "
                                 f"{t.value}", field=name) from None
        raise EventError(f"{where}: column {name!r} does not convert to {t.value}",
                         field=name) from None
