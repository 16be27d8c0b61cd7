"""The streaming processor's rows in columnar form (worker side; pyarrow, numpy and pandas, no
pyspark import, so it is tested without a JVM).

``transformWithStateInPandas`` hands a key's rows over as pandas frames. pandas turns a nullable
integer column into float64 (a long above 2**53 would change) and a float null into NaN, so the
driver sends every numeric column as two (``InputLayout``): the value with nulls filled, and a
null mask; ``rows_table`` rebuilds the exact Arrow column from the pair. Every other column is
converted by its declared Arrow type.

A key's state keeps its rows as Arrow tables serialised as IPC streams
(``cercore.spark.base.job.table_bytes``), never one state row per event: the reorder buffer
(rows the watermark has not passed yet, sorted by (time, sequence)) and the rows a later
complex event may still report (``KeyRun.held``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cercore.spark.base.job import (
    POS,
    SEQ,
    TIME,
    US,
    EngineJob,
    HeldRows,
    complex_event_batch,
    evaluate,
    fire_deadlines,
    kept_by_slice,
    reported_rows,
)

NULL_MASK = "__cer_null"  # prefix of the null-mask columns of the operator's input


@dataclass(frozen=True)
class InputColumn:
    """One column the processor rebuilds: its name, Arrow type, position in the operator's
    input and, for a numeric column, the position of its null mask there."""

    name: str
    arrow_type: pa.DataType
    index: int
    mask: int | None = None


@dataclass(frozen=True)
class InputLayout:
    """Where each column of the processor's rows is in the operator's input frames."""

    columns: tuple[InputColumn, ...]  # every input column but the null masks

    def table(self, frames) -> pa.Table:
        """One Arrow table of the pandas ``frames`` (columns by position: pandas renames
        columns whose names start with an underscore)."""
        import pandas as pd

        frames = [f for f in frames if len(f)]
        if not frames:
            return self.empty()
        pdf = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        arrays = []
        for col in self.columns:
            values = pdf.iloc[:, col.index]
            if col.mask is None:
                arrays.append(pa.array(values, type=col.arrow_type, from_pandas=True))
            else:
                mask = pdf.iloc[:, col.mask].to_numpy(dtype=bool)
                data = values.to_numpy(dtype=col.arrow_type.to_pandas_dtype())
                arrays.append(pa.array(data, type=col.arrow_type,
                                       mask=mask if mask.any() else None))
        return pa.Table.from_arrays(arrays, names=[c.name for c in self.columns])

    def empty(self) -> pa.Table:
        return pa.schema([(c.name, c.arrow_type) for c in self.columns]).empty_table()


def sorted_rows(table: pa.Table) -> pa.Table:
    """``table`` sorted by (time, sequence); equal pairs keep their order (arrival)."""
    order = pc.sort_indices(table, sort_keys=[(TIME, "ascending"), (SEQ, "ascending")])
    return table.take(order)


def late_mask(table: pa.Table, watermark_ms: int) -> np.ndarray:
    """Which rows are late: at or below the watermark (Spark's test: event microseconds ≤
    watermark ms · 1000)."""
    return table.column(US).to_numpy() <= watermark_ms * 1000


def split_at_watermark(rows: pa.Table, watermark_ms: int) -> tuple[pa.Table, pa.Table]:
    """(the rows of the sorted ``rows`` the watermark has passed, the rest): a prefix, since
    the microseconds grow with the time."""
    us = rows.column(US).to_numpy()
    n = int(np.searchsorted(us, watermark_ms * 1000, side="right"))
    return rows.slice(0, n), rows.slice(n)


class KeyRun:
    """One key's engine and the rows a later complex event may still report (``held``);
    ``last_time`` is the time of the last evaluated row. Pickled into the key's state."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self.held = HeldRows()
        self.last_time: int | None = None

    def feed(self, ready: pa.Table, job: EngineJob, offset: int, out_schema: pa.Schema,
             slice_of: tuple[tuple[int, int], int] | None = None) -> pa.RecordBatch | None:
        """Evaluate ``ready`` (sorted, after every row fed before) in one engine call; the
        complex events it completes as one output batch (None: none), positions counted
        from ``offset``. ``slice_of`` = ((WA, ε), k) when the key is T-CER slice k: only the
        complex events that slice reports (``kept_by_slice``, by event time)."""
        self.held.add(self.engine.position, ready)
        matches = evaluate(self.engine, job.engine_table(ready))
        self.last_time = ready.column(TIME)[-1].as_py()
        out = self._output(matches, job, offset, out_schema, slice_of)
        self.held.prune(self.engine)
        return out

    def fire(self, t: int, job: EngineJob, offset: int, out_schema: pa.Schema,
             slice_of: tuple[tuple[int, int], int] | None = None) -> pa.RecordBatch | None:
        """Event time has reached ``t`` (no event before it can come any more: the
        watermark): the complex events whose deadline is before ``t`` (a query with
        ``φ ; ABSENT(ψ) WITHIN T``), as ``feed`` reports them (None: none)."""
        matches = fire_deadlines(self.engine, t)
        out = None if matches is None else self._output(matches, job, offset, out_schema,
                                                          slice_of)
        self.held.prune(self.engine)
        return out

    def _output(self, matches, job: EngineJob, offset: int, out_schema: pa.Schema,
                slice_of) -> pa.RecordBatch | None:
        if not len(matches.start):
            return None
        table, positions, start, end, local = reported_rows(self.held, matches)
        offsets = matches.offsets
        if slice_of is not None:
            start, end, offsets, local = kept_by_slice(
                table.column(TIME).to_numpy(), *slice_of, start, end, offsets, local)
        if not len(start):
            return None
        table = table.append_column(POS, pa.array(positions + offset, pa.int64()))
        return complex_event_batch(table, job, start, end, offsets, local, out_schema)
