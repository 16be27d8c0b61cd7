"""Tabular input (pandas DataFrames, Arrow tables and record batches) seen as Arrow."""

from __future__ import annotations

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
