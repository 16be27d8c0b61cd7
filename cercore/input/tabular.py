"""Tabular input (pandas DataFrames, Arrow tables and record batches) seen as Arrow."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from cercore.errors import EventError


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


def tabular_rows(events: Any) -> Iterator[dict]:
    """Every row of tabular input as a dict of Python values (None for nulls). A DataFrame
    that Arrow cannot convert (an object column mixing types, an int beyond int64) is read
    row by row from pandas, so each bad value is reported (or skipped) at its own row."""
    try:
        table = to_arrow(events)
    except EventError:
        if not type(events).__module__.startswith("pandas") or \
                len(set(events.columns)) != len(events.columns):
            raise
        yield from _pandas_rows(events)
        return
    yield from table.to_pylist()


def _pandas_rows(frame) -> Iterator[dict]:
    import pandas as pd

    names = [str(c) for c in frame.columns]
    columns = [frame[c].tolist() for c in frame.columns]
    for values in zip(*columns):
        yield {n: None if v is None or v is pd.NA or v is pd.NaT
               or (isinstance(v, float) and math.isnan(v)) else v
               for n, v in zip(names, values)}
