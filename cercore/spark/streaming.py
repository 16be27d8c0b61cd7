"""Structured Streaming: one cercore engine per key inside ``transformWithStateInPandas``.

Per key (the PARTITION BY key for the keyed plan, the slice index k for T-CER, one constant key
for the single plan) the state is

* ``engine`` — a ValueState ``(version, offset, blob)``: ``offset`` counts the key's events fed
  to engines that were evicted; ``version`` is ``STATE_VERSION`` (a checkpoint written by
  another format is refused, never misread); ``blob`` pickles a ``KeyState``: the engine with
  the key's rows a complex event may still report (``stream_rows.KeyRun``), the reorder buffer
  — the rows the watermark has not passed yet, sorted by (time, sequence), as one Arrow IPC
  stream, not one state row per event — and the event-time timer set for the key.
* ``late`` — a ValueState ``(count,)``: the key's late rows, kept in state so that the total
  survives a restart (``late_events`` sums it from the checkpoint).

Each micro-batch hands a key's rows over as pandas frames; they become one Arrow table with the
declared types (``stream_rows.InputLayout``). Rows at or below the watermark are late: counted
and dropped. (The operator's input carries no watermarked column, so Spark does not drop them
itself; the watermark still advances, and timers follow it.) The others join the buffer; the
buffered rows the watermark has passed can never be preceded by a row still to come (it would
be late), so they are released, in (time, sequence) order, into the engine in one
``process_arrays`` call — on arrival of the key's next rows or, on a quiet key, by an
event-time timer at the earliest buffered time. When ``find``'s watermark is the stream's only
one, a key does not wait for the next micro-batch either: Spark will set the next watermark to
at least the newest time it saw (these rows included) − the delay, so the rows at or below
the key's newest time − the delay are released in the micro-batch that brings them
(``release_bound``), and only the last delay's worth of rows crosses micro-batches in state.
When the query has a time window on the ordering time, its strategy keeps no history (no
NEXT/LAST/MAX) and the watermark has passed the last evaluated time + ε, no future event can
complete a partial match, so the engine is dropped (only ``offset`` stays, so positions keep
counting).

Absences with a span: a deadline (``φ ; ABSENT(ψ) WITHIN T``) passes when the watermark does.
After evaluating what it released, a key fires the complex events whose deadline is at or
before the latest time the watermark has passed (``reached``: every row of the key up to it has
been evaluated, and one arriving now would be late), as the local engine's ``advance`` past it
would; the rest stay pending in the pickled engine (``Engine.deadlines``, with the rows they
report, ``HeldRows``), across micro-batches and restarts, and an event-time timer wakes a quiet
key when the watermark passes the earliest pending deadline. So streaming reports a deadline
the allowed lateness after event time passes it, and one after the last watermark stays
pending. A key's engine is kept until the watermark passes its last time + max(ε, T) (a
pending deadline can still fire or be ruled out, and a leading ``ABSENT(ψ) WITHIN T ; φ`` can
still look back to its ψ events); T-CER slices grow by the spans (``SparkPlan.slice_size``).

Positions in streaming output count the events of the key (of the whole stream for the
single plan) in (time, sequence) order — a global numbering would need a global sort. A T-CER
slice k holds the events of [k·WA, k·WA + WS); it reports the complex events ending in its
part of the stream (``kept_by_slice``), names itself in ``partition`` ("slice k"), and its state
is cleared once the watermark passes its last time (a row of it would be late by then).
"""

from __future__ import annotations

import os
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
from cercore.spark.job import (
    GROUP,
    KEY,
    TIME,
    US,
    WM,
    EngineJob,
    first_pending_deadline,
    table_bytes,
    table_from_bytes,
)
from cercore.spark.stream_rows import (
    NULL_MASK,
    InputColumn,
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


def watermark_column(time_col, unit: str):
    """Event time as a timestamp for ``withWatermark`` (integer times in ``unit``)."""
    from pyspark.sql import functions as F

    if unit == "s":
        return F.timestamp_seconds(time_col)
    if unit == "ms":
        return F.timestamp_millis(time_col)
    if unit == "us":
        return F.timestamp_micros(time_col)
    return F.timestamp_micros(F.floor(time_col / F.lit(1000)).cast("long"))


def with_event_time(df, time_column: str, unit: str, watermark: str):
    """``df`` without the rows that have no time, with the time as a watermarked timestamp
    (``WM``, ``watermark`` = the allowed lateness) and in microseconds (``US``)."""
    from pyspark.sql import functions as F

    df = df.filter(F.col(time_column).isNotNull())
    df = df.withColumn(WM, watermark_column(F.col(time_column), unit))
    df = df.withColumn(US, F.unix_micros(F.col(WM)))
    return df.withWatermark(WM, watermark)


NUMERIC_TYPES = ("ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType")


def input_layout(schema: StructType) -> InputLayout:
    """Where the processor finds each column of a DataFrame with Spark ``schema`` once
    ``operator_input`` has added the null masks (one per numeric column, after the rest)."""
    from pyspark.sql.pandas.types import to_arrow_type

    columns, masks = [], 0
    for i, f in enumerate(schema.fields):
        mask = None
        if type(f.dataType).__name__ in NUMERIC_TYPES:
            mask = len(schema.fields) + masks
            masks += 1
        columns.append(InputColumn(f.name, to_arrow_type(f.dataType), i, mask))
    return InputLayout(tuple(columns))


def operator_input(df) -> tuple[Any, InputLayout]:
    """``df`` as the pandas processor receives it exactly: each numeric column with its nulls
    filled, plus a null-mask column (pandas would turn a nullable long into float64), and
    where the processor finds each column."""
    from pyspark.sql import functions as F

    from cercore.spark.frames import _quote

    layout = input_layout(df.schema)
    values, masks = [], []
    for c, f in zip(layout.columns, df.schema.fields):
        col = F.col(_quote(f.name))
        if c.mask is not None:
            masks.append(col.isNull().alias(f"{NULL_MASK}{len(masks)}"))
            col = F.coalesce(col, F.lit(0).cast(f.dataType)).alias(f.name)
        values.append(col)
    return df.select(*values, *masks), layout


STREAM_SLICE_SPANS = 4  # default T-CER slice advance WA, in span limits D_C


def eviction_span(analysed, time: str) -> int | None:
    """How long after a key's last evaluated time (on ``time``, the stream's event time) its
    engine can be dropped once the watermark has passed it, or None: never. Once the watermark
    passes the last time + ε, no partial match can complete (a time window on ``time``, no
    NEXT/LAST/MAX); + T, no pending deadline (``φ ; ABSENT(ψ) WITHIN T``) can be ruled out and
    no later complex event looks back to a ψ event (``ABSENT(ψ) WITHIN T ; φ``)."""
    spans = [a for a in (analysed.deadline, analysed.lookback)
             if a is not None]
    for a in spans:
        if a.attribute != time:
            raise CercoreError(f"the span of ABSENT(...) WITHIN is measured on {a.attribute!r}, "
                               f"but the stream's event time (its watermark) is {time!r}: "
                               f"pass time={a.attribute!r}")
    w = analysed.window
    if (w.kind in ("time", "attr") and w.attribute == time
            and analysed.strategy not in ("NEXT", "LAST", "MAX")):
        return max([int(w.epsilon)] + [int(a.span) for a in spans])
    return None


DELAY_KEY = "spark.watermarkDelayMs"  # the metadata Spark puts on a watermarked column


def run_streaming(prep, plan, out_struct, watermark: str, slice_advance: int | None = None):
    """The streaming complex events of ``prep`` under the keyed, T-CER (by event time) or
    single ``plan``. T-CER slices advance by ``slice_advance`` (default
    ``STREAM_SLICE_SPANS`` × D_C: an event is in at most two slices)."""
    from pyspark.sql import functions as F

    from cercore.spark.batch import slices_of
    from cercore.spark.plan import KEYED, TCER

    if prep.time is None:
        raise CercoreError("streaming needs an event-time column: pass time= or declare a "
                           "primary_time attribute")
    analysed = prep.job.compiled().analysed
    evict_after = eviction_span(analysed, prep.time)
    df = prep.df
    slices = None
    if plan.kind == KEYED:
        df = df.filter(F.col(KEY).isNotNull())
        group = KEY
    elif plan.kind == TCER:  # one state per slice; `partition` names it
        advance = slice_advance or STREAM_SLICE_SPANS * (plan.span_limit + plan.reach
                                                         + plan.lookback)
        size = plan.slice_size(advance)
        slices = (advance, size, plan.keep_offset)
        group = GROUP
        df = df.withColumn(GROUP, slices_of(TIME, size, advance))
        df = df.withColumn(KEY, F.concat(F.lit("slice "), F.col(GROUP).cast("string")))
    else:
        group = GROUP
        df = df.withColumn(group, F.lit(""))
    # without the watermarked column the operator's input has no event-time attribute, so
    # Spark does not drop late rows before the processor (which counts them in its state);
    # the watermark node stays in the plan: the watermark advances and timers follow it
    df = with_event_time(df, TIME, prep.schema.time_unit, watermark)
    release_delay = None
    if not any(DELAY_KEY in f.metadata for f in prep.df.schema.fields):  # ours is the only one
        release_delay = int(df.schema[WM].metadata[DELAY_KEY])
    df, layout = operator_input(df.drop(WM))
    processor = CerProcessor(prep.job, layout, out_struct, evict_after=evict_after,
                             slices=slices, deadlines=analysed.deadline is not None,
                             release_delay_ms=release_delay)
    return df.groupBy(group).transformWithStateInPandas(processor, out_struct, "Append",
                                                        "EventTime")


CONNECT_NO_CHECKPOINT = (
    "late_events(query) reads the query's checkpoint, and a Spark Connect StreamingQuery does not "
    "say where it is (pyspark 4.3: the Connect protocol's StreamingQueryCommand and its result "
    "carry no checkpoint location, and pyspark.sql.connect.streaming.StreamingQuery has none): "
    "pass the location given to .option('checkpointLocation', ...) instead, "
    "late_events(path, spark)")


def late_events(query_or_checkpoint, spark=None) -> int:
    """Late rows a streaming ``find`` counted (event time at or below the watermark when they
    arrived; they are not evaluated), over the query's whole life, restarts included: the
    count is kept in the query's state and read from its checkpoint with Spark's state data
    source, as of the last committed micro-batch. ``query_or_checkpoint`` is a StreamingQuery
    (running or stopped; of a classic session: a Spark Connect query does not tell its
    checkpoint) or its checkpoint location; ``spark`` is the session to read with (the active
    one by default)."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    if isinstance(query_or_checkpoint, (str, os.PathLike)):
        path = os.fspath(query_or_checkpoint)
    elif hasattr(query_or_checkpoint, "_jsq"):  # a classic StreamingQuery knows its checkpoint
        path = query_or_checkpoint._jsq.streamingQuery().resolvedCheckpointRoot()
    else:
        raise CercoreError(CONNECT_NO_CHECKPOINT)
    spark = spark or SparkSession.active()
    if not _has_commits(path):
        return 0
    state = (spark.read.format("statestore").option("path", path)
             .option("stateVarName", LATE_STATE).load())
    total = state.agg(F.sum("value.count")).first()[0]
    return int(total or 0)


def _has_commits(path: str) -> bool:
    """Whether the checkpoint at ``path`` (local or a Hadoop URI) has a committed batch."""
    local = path[len("file:"):] if path.startswith("file:") else path
    if "://" in local:
        return True  # a remote store: let the reader say
    commits = os.path.join(local, "commits")
    return os.path.isdir(commits) and any(n.isdigit() for n in os.listdir(commits))


# Where Spark reports the micro-batch a stop() cancels (all at ERROR, most with stack traces):
# the writers aborting their job and tasks (file sinks; DataSource V2 sinks such as
# foreachBatch's and noop), Utils' "Aborting task" around each killed task, a broadcast or a
# shuffle file whose write the interrupt cut short.
CANCEL_LOGGERS = ("org.apache.spark.sql.execution.datasources.FileFormatWriter",
                  "org.apache.spark.sql.execution.datasources.v2.WriteToDataSourceV2Exec",
                  "org.apache.spark.sql.execution.datasources.v2.DataWritingSparkTask",
                  "org.apache.spark.util.Utils",
                  "org.apache.spark.broadcast.TorrentBroadcast",
                  "org.apache.spark.storage.DiskBlockObjectWriter")


def stop_query(query, timeout: float = 60.0) -> None:
    """Stop a streaming query (a StreamingQuery, e.g. of ``find``) quietly.

    ``query.stop()`` interrupts the micro-batch in progress, and Spark logs that cancellation
    as ERRORs with stack traces (the sink aborting its job, each task aborting) although
    nothing failed. Here the stop waits, up to ``timeout`` seconds, for the moment between two
    micro-batches, so the batch in progress completes and is committed; if one is still
    running then, it is cancelled with the loggers above silenced until its tasks have ended
    (and restored after). A query that had already failed raises its
    ``StreamingQueryException``, as ``awaitTermination`` would."""
    import time

    deadline = time.monotonic() + timeout
    while query.isActive and _trigger_active(query) and time.monotonic() < deadline:
        time.sleep(0.02)
    sc = _spark_context(query)
    if query.isActive:
        with _silenced(sc, CANCEL_LOGGERS):
            query.stop()
            if sc is not None:
                _await_tasks_of_run(sc, str(query.runId), deadline=time.monotonic() + 60)
    error = query.exception()
    if error is not None:
        raise error


def _trigger_active(query) -> bool:
    try:
        return bool(query.status["isTriggerActive"])
    except Exception:  # the query ended meanwhile
        return False


def _spark_context(query):
    """The SparkContext of a classic (JVM) query; None under Spark Connect."""
    if not hasattr(query, "_jsq"):
        return None
    from pyspark import SparkContext

    return SparkContext._active_spark_context


class _silenced:
    """Context: the log4j2 loggers ``names`` off, then as they were (no JVM: nothing)."""

    saved: dict

    def __init__(self, sc, names) -> None:
        self.jvm = None if sc is None else sc._jvm
        self.names = names

    def __enter__(self):
        if self.jvm is None:
            return self
        log4j = self.jvm.org.apache.logging.log4j
        ctx = log4j.LogManager.getContext(False)
        config = ctx.getConfiguration()
        self.saved = {}
        for name in self.names:
            own = config.getLoggers().containsKey(name)
            self.saved[name] = config.getLoggerConfig(name).getLevel() if own else None
            log4j.core.config.Configurator.setLevel(name, log4j.Level.OFF)
        return self

    def __exit__(self, *exc) -> None:
        if self.jvm is None:
            return
        log4j = self.jvm.org.apache.logging.log4j
        ctx = log4j.LogManager.getContext(False)
        config = ctx.getConfiguration()
        for name, level in self.saved.items():
            if level is None:  # it had no configuration of its own: follow its parents again
                config.removeLogger(name)
            else:
                log4j.core.config.Configurator.setLevel(name, level)
        ctx.updateLoggers()


def _await_tasks_of_run(sc, run_id: str, deadline: float) -> None:
    """Until no task of the jobs of ``run_id`` (a streaming query's job group) is running any
    more (killed tasks report their abort when they end, after the job is gone)."""
    import time

    tracker = sc.statusTracker()
    while time.monotonic() < deadline:
        busy = False
        for job in tracker.getJobIdsForGroup(run_id):
            info = tracker.getJobInfo(job)
            for stage in (info.stageIds if info is not None else ()):
                s = tracker.getStageInfo(stage)
                busy = busy or (s is not None and s.numActiveTasks > 0)
        if not busy:
            return
        time.sleep(0.05)
