"""The streaming processor's rows in columnar form (worker side; pyarrow, numpy and pandas, no
pyspark import, so it is tested without a JVM).

``transformWithStateInPandas`` hands a key's rows over as pandas frames. pandas turns a nullable
integer column into float64 (a long above 2**53 would change) and a float null into NaN, so the
driver sends every numeric column as two (``InputLayout``): the value with nulls filled, and a
null mask; ``rows_table`` rebuilds the exact Arrow column from the pair. Every other column is
converted by its declared Arrow type.

A key's state keeps its rows as Arrow tables serialised as IPC streams (``table_bytes``), never
one state row per event: the reorder buffer (rows the watermark has not passed yet, sorted by
(time, sequence)) and the rows a later complex event may still report (``KeyRun.held``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cercore.spark.job import POS, SEQ, TIME, US, EngineJob, complex_event_batch

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


def table_bytes(table: pa.Table | None) -> bytes | None:
    """``table`` as an Arrow IPC stream (None: no rows). IPC, not pickle: a slice is written
    without the rest of its buffers."""
    if table is None or table.num_rows == 0:
        return None
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table.combine_chunks())
    return sink.getvalue().to_pybytes()


def table_from_bytes(data: bytes | None) -> pa.Table | None:
    if data is None:
        return None
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


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
    """One key's engine and the rows a later complex event may still report (``held``,
    starting at engine position ``held_first``); ``last_time`` is the time of the last
    evaluated row. Pickled into the key's state (the rows as IPC)."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self.held: pa.Table | None = None
        self.held_first = 0
        self.last_time: int | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"engine": self.engine, "held": table_bytes(self.held),
                "held_first": self.held_first, "last_time": self.last_time}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.engine = state["engine"]
        self.held = table_from_bytes(state["held"])
        self.held_first = state["held_first"]
        self.last_time = state["last_time"]

    def feed(self, ready: pa.Table, job: EngineJob, offset: int,
             out_schema: pa.Schema) -> pa.RecordBatch | None:
        """Evaluate ``ready`` (sorted, after every row fed before) in one engine call; the
        complex events it completes as one output batch (None: none), positions counted
        from ``offset``."""
        if self.held is None or self.held.num_rows == 0:
            self.held, self.held_first = ready, self.engine.position
        else:
            self.held = pa.concat_tables([self.held, ready])
        matches = self.engine.process_arrays(job.engine_table(ready))
        self.last_time = ready.column(TIME)[-1].as_py()
        out = self._output(matches, job, offset, out_schema)
        self._prune()
        return out

    def _output(self, matches, job: EngineJob, offset: int,
                out_schema: pa.Schema) -> pa.RecordBatch | None:
        if not len(matches.start):
            return None
        # only the rows the complex events report, so the cost follows the output
        need = np.unique(np.concatenate([matches.start, matches.end, matches.positions]))
        table = self.held.take(pa.array(need - self.held_first))
        table = table.append_column(POS, pa.array(need + offset, pa.int64()))
        start, end, local = (np.searchsorted(need, x) for x in
                             (matches.start, matches.end, matches.positions))
        return complex_event_batch(table, job, start, end, matches.offsets, local, out_schema)

    def _prune(self) -> None:
        """Drop the held rows before the engine's oldest stored event: no complex event can
        report them any more."""
        store = self.engine.store
        oldest = store.starts[0] if store.starts else self.engine.position
        drop = min(max(oldest - self.held_first, 0), self.held.num_rows)
        if drop:
            self.held = self.held.slice(drop)
            self.held_first += drop
