"""Tabular input (pandas DataFrames, Arrow tables and record batches) seen as Arrow."""

from __future__ import annotations

import math
from typing import Any

from cercore.errors import EventError
from cercore.input.decode import arrow_cells, one_array
from cercore.types import AttrType


def is_tabular(events: Any) -> bool:
    """A pandas DataFrame or a pyarrow Table / RecordBatch (checked without importing
    either)."""
    mod = type(events).__module__
    return mod.startswith("pandas") or mod.startswith("pyarrow")


def to_arrow(events: Any):
    """The Arrow form of tabular input: a pandas DataFrame is converted (categoricals stay
    dictionary-encoded), Arrow data is returned as is."""
    if not type(events).__module__.startswith("pandas"):
        return events
    import pyarrow as pa

    if len(set(events.columns)) != len(events.columns):
        dup = next(c for c in events.columns if list(events.columns).count(c) > 1)
        raise EventError(f"the DataFrame has two columns named {dup!r}", field=str(dup))
    try:
        return pa.Table.from_pandas(events, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError,
            OverflowError) as exc:
        # an object column mixing types, or ints beyond int64: name it instead of crashing
        raise EventError(f"cannot read the DataFrame: {exc}") from None


def tabular_columns(events: Any, attr_types: dict[str, AttrType]
                    ) -> tuple[list[str], list[list]]:
    """The column names of tabular input and its cells as lists of Python values (None for
    nulls), read with the columnar path's semantics (``arrow_cells``) so that reading a table
    row by row (a reorder slack, a DataFrame Arrow cannot convert) changes no result: each
    column named in ``attr_types`` is read as that attribute type, any other column as is.

    A DataFrame that Arrow cannot convert as a whole (an object column mixing types, an int
    beyond int64) is converted column by column; in a column that still fails, the cells of
    each Python type are converted together, so a value is judged as it would be in a
    column of its own kind, and a stray value is reported (or skipped) at its own row only."""
    try:
        table = to_arrow(events)
    except EventError:
        if not type(events).__module__.startswith("pandas") or \
                len(set(events.columns)) != len(events.columns):
            raise
        return _pandas_columns(events, attr_types)
    names = table.column_names
    return names, [_cells(one_array(table.column(c)), attr_types.get(c)) for c in names]


def _cells(col, t: AttrType | None) -> list:
    return col.to_pylist() if t is None else arrow_cells(col, t)


def _pandas_columns(frame, attr_types: dict[str, AttrType]) -> tuple[list[str], list[list]]:
    import pyarrow as pa

    names = [str(c) for c in frame.columns]
    columns = []
    for c, name in zip(frame.columns, names):
        try:  # the conversion of to_arrow, for this column alone
            col = pa.Table.from_pandas(frame[[c]], preserve_index=False).column(0)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError,
                OverflowError):
            columns.append(_mixed_cells(frame[c].tolist(), attr_types.get(name)))
            continue
        columns.append(_cells(one_array(col), attr_types.get(name)))
    return names, columns


def _mixed_cells(values: list, t: AttrType | None) -> list:
    """The cells of a column Arrow cannot convert: nulls as None; for an attribute, the
    values of each Python type converted as a column of their own (``arrow_cells``); values
    Arrow cannot convert at all (an int beyond 64 bits, an arbitrary object) as they are,
    for the record decoder to judge."""
    import pandas as pd
    import pyarrow as pa

    cells = [None if v is None or v is pd.NA or v is pd.NaT
             or (isinstance(v, float) and math.isnan(v)) else v for v in values]
    if t is None:
        return cells
    groups: dict[type, list[int]] = {}
    for k, v in enumerate(cells):
        if v is not None:
            groups.setdefault(type(v), []).append(k)
    for rows in groups.values():
        try:
            col = pa.array([cells[k] for k in rows])
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError,
                OverflowError):
            continue
        for k, v in zip(rows, arrow_cells(col, t)):
            cells[k] = v
    return cells
