"""The stateful processor of a streaming ``find``: per key, one cercore engine and the rows the
watermark has not passed yet, in state across micro-batches and restarts (the state layout and
the release rule: ``cercore.spark.streaming.run``'s docstring); ``WatermarkBuffer``, its base,
serves the streaming trend aggregation too."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.streaming import StatefulProcessor
from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

from cercore.errors import CercoreError
from cercore.spark.base.job import (
    TIME,
    US,
    EngineJob,
    first_pending_deadline,
    table_bytes,
    table_from_bytes,
)
from cercore.spark.streaming.rows import (
    InputLayout,
    KeyRun,
    late_mask,
    sorted_rows,
    split_at_watermark,
)
from cercore.types import TIME_UNITS_PER_SECOND

STATE_VERSION = 2


STATE_SCHEMA = StructType([StructField("version", IntegerType()),
                           StructField("offset", LongType()),
                           StructField("blob", BinaryType())])


LATE_SCHEMA = StructType([StructField("count", LongType())])


LATE_STATE = "late"


def ms_after(time: int, unit: str) -> int:
    """The smallest watermark (ms) after which every non-late event has engine time > ``time``
    (Spark's late test: event microseconds ≤ watermark ms · 1000)."""
    per_second = TIME_UNITS_PER_SECOND[unit]
    return -(-(time * 1000) // per_second)


def reached(watermark_ms: int, unit: str) -> int:
    """The latest engine time (in ``unit``) a watermark of ``watermark_ms`` has passed: every
    row at or before it has been released to the engines, and such a row arriving now is
    late (``US`` is the time in microseconds, floored for nanoseconds)."""
    us = watermark_ms * 1000
    if unit == "ns":
        return us * 1000 + 999
    return us * TIME_UNITS_PER_SECOND[unit] // 1_000_000


def release_bound(rows: pa.Table, delay_ms: int) -> int:
    """The watermark (ms) the next micro-batch will have at least, from the rows ``rows`` of
    this one: Spark sets it to the newest event time it saw (microseconds truncated to ms) −
    the delay, and it saw these rows. Every row at or below it can be released now: a row
    still to come is either late or newer. (Only when the stream has no other watermark: the
    default policy takes the least of several.)"""
    newest = int(pc.max(rows.column(US)).as_py())
    ms = newest // 1000 if newest >= 0 else -(-newest // 1000)  # Scala's Long division
    return ms - delay_ms


def ms_after_us(us: int) -> int:
    """The watermark (ms) at which a row of ``us`` microseconds is no longer late-able."""
    return -(-us // 1000)


class WatermarkBuffer(StatefulProcessor):
    """A transformWithState processor (Row API, EventTime mode) with a reorder buffer: rows
    wait in a ListState until the watermark passes their time (column ``US``), and an
    event-time timer then releases them; subclasses evaluate what ``release`` hands them.
    The ``engine`` ValueState (``STATE_SCHEMA``) holds the subclass's state. (The trend
    processor's base; CEQL queries use the columnar ``CerProcessor``.)"""

    def __init__(self, input_schema: StructType) -> None:
        self.input_schema = input_schema
        self.i_us = input_schema.names.index(US)

    def init(self, handle) -> None:
        self.handle = handle
        self.state = handle.getValueState("engine", STATE_SCHEMA)
        self.buffer = handle.getListState("buffer", self.input_schema)

    def handleInputRows(self, key, rows, timerValues):
        rows = [tuple(r) for r in rows]
        if rows:
            self.buffer.appendList(rows)
            self.handle.registerTimer(ms_after_us(min(r[self.i_us] for r in rows)))
        return iter(())

    def release(self, watermark: int) -> tuple[list[tuple], list[tuple]]:
        """(the buffered rows the watermark (ms) has passed, the rest); the buffer keeps the
        rest, and a timer is set for the earliest of them."""
        buffered = list(self.buffer.get()) if self.buffer.exists() else []
        ready = [r for r in buffered if r[self.i_us] <= watermark * 1000]
        rest = [r for r in buffered if r[self.i_us] > watermark * 1000]
        if ready:
            if rest:
                self.buffer.put(rest)
            else:
                self.buffer.clear()
        if rest:
            self.handle.registerTimer(ms_after_us(min(r[self.i_us] for r in rest)))
        return ready, rest

    def close(self) -> None:
        pass


@dataclass
class KeyState:
    """What ``CerProcessor`` keeps for one key between micro-batches."""

    offset: int = 0                 # events of the key fed to engines since evicted
    run: KeyRun | None = None       # the live engine and the rows it may still report
    pending: pa.Table | None = None  # the reorder buffer, sorted by (time, sequence)
    timer: int | None = None        # the event-time timer registered for the key (ms)


class CerProcessor(StatefulProcessor):
    """The ``transformWithStateInPandas`` processor of a CEQL query (EventTime mode)."""

    def __init__(self, job: EngineJob, layout: InputLayout, out_struct: StructType, *,
                 evict_after: int | None, slices: tuple[int, int, int] | None = None,
                 deadlines: bool = False, release_delay_ms: int | None = None) -> None:
        from pyspark.sql.pandas.types import to_arrow_schema

        self.job = job
        self.layout = layout
        self.out_schema = to_arrow_schema(out_struct)  # built once, on the driver
        self.evict_after = evict_after  # ε in engine time units, when eviction is exact
        self.slices = slices  # T-CER: (WA, WS, keep offset), the key being the slice index k
        self.unit = job.schema.time_unit
        self.deadlines = deadlines  # φ ; ABSENT(ψ) WITHIN T: fire what the watermark passes
        # the watermark's delay when it is the stream's only one: rows the *next* watermark
        # will pass are released in the micro-batch that brings them (``release_bound``)
        self.release_delay_ms = release_delay_ms

    # ---- StatefulProcessor API --------------------------------------------------------------
    def init(self, handle) -> None:
        self.handle = handle
        self.state = handle.getValueState("engine", STATE_SCHEMA)
        self.late = handle.getValueState(LATE_STATE, LATE_SCHEMA)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[Any]:
        watermark = timerValues.getCurrentWatermarkInMs()
        table = self.layout.table(rows)
        late = late_mask(table, watermark)
        if late.any():
            counted = late
            if self.slices is not None:  # a row is in several slices: count it in its last
                time = table.column(TIME).to_numpy()
                counted = late & (np.floor_divide(time, self.slices[0]) == int(key[0]))
            if counted.any():
                self._count_late(int(counted.sum()))
            table = table.filter(pa.array(~late))
        state = self._load()
        release = watermark
        if table.num_rows:
            both = table if state.pending is None else pa.concat_tables([state.pending, table])
            state.pending = sorted_rows(both)
            if self.release_delay_ms is not None:
                release = max(watermark, release_bound(table, self.release_delay_ms))
        return self._advance(key, state, watermark, release)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo) -> Iterator[Any]:
        state = self._load()
        if state.timer == expiredTimerInfo.getExpiryTimeInMs():
            state.timer = None  # fired (Spark deletes it after this call)
        return self._advance(key, state, timerValues.getCurrentWatermarkInMs())

    def close(self) -> None:
        pass

    # ---- evaluation ----------------------------------------------------------------------
    def _advance(self, key, state: KeyState, watermark: int,
                 release: int | None = None) -> Iterator[Any]:
        """Release the buffered rows ``release`` (ms; default ``watermark``) has passed into
        the engine, report the complex events whose deadline ``watermark`` has passed, evict
        a dead engine, set the key's next timer and save (a T-CER slice the watermark has
        passed is done: its state is cleared); the complex events as pandas."""
        out = []
        slice_of, slice_done = None, None
        if self.slices is not None:
            advance, size, epsilon = self.slices
            k = int(key[0])
            slice_of = ((advance, epsilon), k)
            slice_done = ms_after(k * advance + size - 1, self.unit)  # its last time passed
        if state.pending is not None:
            ready, rest = split_at_watermark(
                state.pending, watermark if release is None else release)
            if ready.num_rows:
                if state.run is None:
                    state.run = KeyRun(self.job.engine())
                out.append(state.run.feed(ready, self.job, state.offset, self.out_schema,
                                          slice_of))
            state.pending = rest if rest.num_rows else None
        due = None
        if self.deadlines and state.run is not None:
            # every row at or before reached(...) has been fed (the rest would be late): the
            # deadlines up to it have passed, as advance(reached + 1) says locally
            out.append(state.run.fire(reached(watermark, self.unit) + 1, self.job,
                                      state.offset, self.out_schema, slice_of))
            due = first_pending_deadline(state.run.engine)
        frames = iter([b.to_pandas() for b in out if b is not None])
        if slice_done is not None and watermark >= slice_done and state.pending is None:
            self._set_timer(state, None)
            self.state.clear()  # no row of the slice can come any more (it would be late)
            return frames
        timers = []
        if state.pending is not None:
            timers.append(ms_after_us(state.pending.column(US)[0].as_py()))
        elif state.run is not None and self.evict_after is not None \
                and state.run.last_time is not None:
            dead = ms_after(state.run.last_time + self.evict_after, self.unit)
            if watermark >= dead and due is None:
                state.offset += state.run.engine.position  # no partial match can complete
                state.run = None
            else:
                timers.append(dead)
        if due is not None:  # the watermark that passes the earliest pending deadline
            timers.append(ms_after(due, self.unit))
        if slice_done is not None and state.pending is None:
            timers.append(slice_done)
        self._set_timer(state, min(timers) if timers else None)
        self._save(state)
        return frames

    def _set_timer(self, state: KeyState, timer: int | None) -> None:
        """One timer per key: the one ``_advance`` needs next (a stale one would only wake
        the key for nothing)."""
        if timer == state.timer:
            return
        if state.timer is not None:
            self.handle.deleteTimer(state.timer)
        if timer is not None:
            self.handle.registerTimer(timer)
        state.timer = timer

    def _count_late(self, n: int) -> None:
        before = self.late.get()
        self.late.update(((before[0] if before else 0) + n,))

    # ---- state ---------------------------------------------------------------------------
    def _load(self) -> KeyState:
        value = self.state.get()  # None when absent (each call is a round trip to the JVM)
        if value is None:
            return KeyState()
        version, offset, blob = value
        if version != STATE_VERSION:
            raise CercoreError(f"checkpointed cercore state has format version {version}; "
                               f"this cercore reads version {STATE_VERSION} (restart the query "
                               "from a fresh checkpoint)")
        if blob is None:
            return KeyState(offset)
        run, pending, timer = pickle.loads(blob)
        return KeyState(offset, run, table_from_bytes(pending), timer)

    def _save(self, state: KeyState) -> None:
        if state.run is not None:
            state.run.engine.compact()  # the state carries the window's partial matches only
        parts = (state.run, table_bytes(state.pending), state.timer)
        blob = None if parts == (None, None, None) else \
            pickle.dumps(parts, protocol=pickle.HIGHEST_PROTOCOL)
        self.state.update((STATE_VERSION, state.offset, blob))
