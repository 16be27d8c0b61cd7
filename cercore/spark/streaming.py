"""Structured Streaming: one cercore engine per key inside ``transformWithState``.

Per key (the PARTITION BY key for the keyed plan, one constant key otherwise) the state is

* ``engine`` — a ValueState ``(version, offset, blob)``: ``blob`` is
  ``pickle.dumps((engine, rows, last_time))`` — the engine (which pickles its evaluator in the
  backend-neutral format), the key's rows a complex event may still report, and the time of
  the last evaluated event; ``offset`` counts the key's events fed to engines that were
  evicted; ``version`` is ``STATE_VERSION`` (a checkpoint written by another format is refused,
  never misread).
* ``buffer`` — a ListState of rows not yet evaluated (the reorder buffer).

Rows arrive in any order. Spark drops rows at or below the watermark before the processor
sees them (they are late: ``late_events`` reports how many), so a buffered row whose event time
is at or below the watermark can never be preceded by a row still to come: an event-time timer
at that time releases it, sorted by (time, sequence), into the engine. When the query has a
time window on the ordering time, its strategy keeps no history (no NEXT/LAST/MAX) and the
watermark has passed the last evaluated time + ε, no future event can complete a partial
match, so the engine is dropped (only ``offset`` stays, so positions keep counting).

Positions in streaming output count the events of the key (of the whole stream for the
single plan) in (time, sequence) order — a global numbering would need a global sort.
"""

from __future__ import annotations

import pickle
from typing import Any

import pyarrow as pa
from pyspark.sql import Row
from pyspark.sql.streaming import StatefulProcessor
from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

from cercore.errors import CercoreError
from cercore.schema import TIME_UNITS_PER_SECOND
from cercore.spark.job import GROUP, KEY, SEQ, TIME, TYPE, US, WM, EngineJob

STATE_VERSION = 1
STATE_SCHEMA = StructType([StructField("version", IntegerType()),
                           StructField("offset", LongType()),
                           StructField("blob", BinaryType())])


def ms_after(time: int, unit: str) -> int:
    """The smallest watermark (ms) after which every non-late event has engine time > ``time``
    (Spark's late test: event microseconds ≤ watermark ms · 1000)."""
    per_second = TIME_UNITS_PER_SECOND[unit]
    return -(-(time * 1000) // per_second)


class WatermarkBuffer(StatefulProcessor):
    """A transformWithState processor (Row API, EventTime mode) with a reorder buffer: rows
    wait in a ListState until the watermark passes their time (column ``US``), and an
    event-time timer then releases them; subclasses evaluate what ``release`` hands them.
    The ``engine`` ValueState (``STATE_SCHEMA``) holds the subclass's state."""

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


class CerProcessor(WatermarkBuffer):
    """The transformWithState processor of a CEQL query."""

    def __init__(self, job: EngineJob, input_schema: StructType, *, keyed: bool,
                 evict_after: int | None) -> None:
        super().__init__(input_schema)
        self.job = job
        self.keyed = keyed
        self.evict_after = evict_after  # ε in engine time units, when eviction is exact
        names = input_schema.names
        self.i_time, self.i_seq = names.index(TIME), names.index(SEQ)
        self.i_key = names.index(KEY)
        self.i_events = [names.index(c) for c in job.event_columns]
        self.engine_columns = sorted({TYPE, *(src for _, src in job.engine_sources),
                                      *([job.stream_column] if job.stream_column else [])},
                                     key=names.index)

    # ---- StatefulProcessor API --------------------------------------------------------------
    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        watermark = timerValues.getCurrentWatermarkInMs()
        ready, rest = self.release(watermark)
        out: list[Row] = []
        offset, saved = self._load()
        if ready:
            out, saved = self._evaluate(key, ready, offset, saved or (self.job.engine(), {}, None))
        if not rest and saved is not None and self.evict_after is not None \
                and saved[2] is not None:
            dead = ms_after(saved[2] + self.evict_after, self.job.schema.time_unit)
            if watermark >= dead:
                offset += saved[0].position  # evict: no partial match can complete any more
                saved = None
            else:
                self.handle.registerTimer(dead)
        self._save(offset, saved)
        return iter(out)

    # ---- state ---------------------------------------------------------------------------
    def _load(self) -> tuple[int, Any]:
        if not self.state.exists():
            return 0, None
        version, offset, blob = self.state.get()
        if version != STATE_VERSION:
            raise CercoreError(f"checkpointed cercore state has format version {version}; "
                               f"this cercore reads version {STATE_VERSION} (restart the query "
                               "from a fresh checkpoint)")
        return offset, (pickle.loads(blob) if blob is not None else None)

    def _save(self, offset: int, saved) -> None:
        blob = None if saved is None else pickle.dumps(saved, protocol=pickle.HIGHEST_PROTOCOL)
        self.state.update((STATE_VERSION, offset, blob))

    # ---- evaluation ----------------------------------------------------------------------
    def _evaluate(self, key, ready: list[tuple], offset: int, saved) -> tuple[list[Row], tuple]:
        """Feed ``ready`` rows to the engine in (time, seq) order; the complex events they
        complete and the new saved state."""
        engine, rows, _ = saved
        ready.sort(key=lambda r: (r[self.i_time], r[self.i_seq]))
        first = engine.position
        names = self.input_schema.names
        table = pa.table({c: pa.array([r[names.index(c)] for r in ready])
                          for c in self.engine_columns})
        matches = engine.process_arrays(self.job.engine_table(table))
        for k, r in enumerate(ready):
            rows[first + k] = (r[self.i_time], r[self.i_key],
                               tuple(r[i] for i in self.i_events))
        out = []
        for i in range(len(matches)):
            s, e = int(matches.start[i]), int(matches.end[i])
            ps = matches.positions[matches.offsets[i]:matches.offsets[i + 1]].tolist()
            out.append(Row(partition=key[0] if self.keyed else rows[e][1],
                           start=offset + s, end=offset + e,
                           start_time=rows[s][0], end_time=rows[e][0],
                           positions=[offset + p for p in ps],
                           events=[rows[p][2] for p in ps]))
        kept = engine.store.starts[0] if engine.store.starts else engine.position
        for p in [p for p in rows if p < kept]:
            del rows[p]  # no complex event can report them any more
        return out, (engine, rows, ready[-1][self.i_time])


def ms_after_us(us: int) -> int:
    """The watermark (ms) at which a row of ``us`` microseconds is no longer late-able."""
    return -(-us // 1000)



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


def run_streaming(prep, plan, out_struct, watermark: str):
    """The streaming complex events of ``prep`` under the keyed or single ``plan``."""
    from pyspark.sql import functions as F

    from cercore.spark.plan import KEYED

    if prep.time is None:
        raise CercoreError("streaming needs an event-time column: pass time= or declare a "
                           "primary_time attribute")
    analysed = prep.job.compiled().analysed
    w = analysed.window
    evict_after = None
    if (w.kind in ("time", "attr") and w.attribute == prep.time
            and analysed.strategy not in ("NEXT", "LAST", "MAX")):
        evict_after = int(w.epsilon)
    df = prep.df
    keyed = plan.kind == KEYED
    if keyed:
        df = df.filter(F.col(KEY).isNotNull())
        group = KEY
    else:
        group = GROUP
        df = df.withColumn(group, F.lit(""))
    df = with_event_time(df, TIME, prep.schema.time_unit, watermark)
    processor = CerProcessor(prep.job, df.schema, keyed=keyed, evict_after=evict_after)
    return df.groupBy(group).transformWithState(processor, out_struct, "Append", "EventTime")


def late_events(query) -> int:
    """Rows a streaming ``find`` dropped as late (event time at or below the watermark),
    summed over the progress reports ``query`` (a StreamingQuery) still holds."""
    total = 0
    for progress in query.recentProgress:
        for op in progress.get("stateOperators", []) if isinstance(progress, dict) else \
                progress.stateOperators:
            n = op.get("numRowsDroppedByWatermark") if isinstance(op, dict) else \
                op.numRowsDroppedByWatermark
            total += int(n or 0)
    return total


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
