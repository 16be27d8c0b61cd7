"""A streaming query's life after it starts: the late rows it counted (``late_events``, from
the checkpoint) and a clean stop (``stop_query``: waits for the running micro-batch's tasks,
silencing Spark's cancellation noise), on a classic or a Spark Connect session."""

from __future__ import annotations

import os

from cercore.errors import CercoreError
from cercore.spark.streaming.processor import LATE_STATE

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
