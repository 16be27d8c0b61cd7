"""Stopping a streaming ``find`` quietly (``cercore.spark.stop_query``): a plain
``query.stop()`` during a micro-batch makes Spark log the cancellation as ERRORs with stack
traces (the sink aborting its job, each task aborting). ``stop_query`` waits for the batch to
finish, or cancels it with those reports silenced; either way nothing is logged at ERROR, no
Python traceback is printed, and a restart from the checkpoint still loses and repeats
nothing. A query that failed for real still raises, and its failure is still logged.

Spark's log is read through a log4j appender added to the root logger for the test (the JVM's
stderr is not this process's), Python's stderr through ``capfd``.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from contextlib import contextmanager

import pytest
from spark_helpers import write_file

from cercore.spark import find, stop_query
from cercore.spark.streaming.lifecycle import CANCEL_LOGGERS

pytestmark = pytest.mark.spark

DDL = "event_type string, id long, v long, ts long, seq long"
QUERY = "SELECT * FROM S WHERE A; B+; C FILTER B[v >= 0] PARTITION BY [id] WITHIN 10 [ts]"


@contextmanager
def jvm_log(spark):
    """Everything log4j logs at the root logger's level (ERROR here) while inside, as text."""
    jvm = spark.sparkContext._jvm
    log4j = jvm.org.apache.logging.log4j
    ctx = log4j.LogManager.getContext(False)
    config = ctx.getConfiguration()
    writer = jvm.java.io.StringWriter()
    layout = log4j.core.layout.PatternLayout.newBuilder().withPattern("%p %c: %m%n%ex").build()
    appender = log4j.core.appender.WriterAppender.createAppender(
        layout, None, writer, "cercore-test-capture", False, True)
    appender.start()
    config.addAppender(appender)
    config.getRootLogger().addAppender(appender, None, None)
    ctx.updateLoggers()
    try:
        yield writer
    finally:
        config.getRootLogger().removeAppender("cercore-test-capture")
        appender.stop()
        ctx.updateLoggers()


def rows(k: int, n: int, seed: int) -> list[tuple]:
    rng = random.Random(seed)
    return [(rng.choice("AABBC"), rng.randrange(40), rng.randrange(-1, 3), 1000 * k + i // 10,
             100_000 * k + i) for i in range(n)]


def by_events(rs) -> Counter:
    return Counter((r["partition"], tuple(e["seq"] for e in r["events"])) for r in rs)


def start(spark, base: str, trigger: dict):
    source = (spark.readStream.schema(DDL).option("maxFilesPerTrigger", 1)
              .parquet(os.path.join(base, "in")))
    out = find(source, QUERY, time="ts", sequence="seq", time_unit="s", watermark="5 seconds")
    return (out.writeStream.format("parquet").option("path", os.path.join(base, "out"))
            .option("checkpointLocation", os.path.join(base, "checkpoint"))
            .trigger(**trigger).start())


def wait_for_a_batch(query, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = query.status
        if status["isTriggerActive"] and status["isDataAvailable"]:
            return
        time.sleep(0.05)
    raise AssertionError("no micro-batch started")


@pytest.mark.parametrize("timeout", [0.0, 120.0])  # cancel the batch / let it finish
def test_stop_during_a_batch_is_quiet_and_loses_nothing(spark, tmp_path, capfd, timeout):
    base = str(tmp_path)
    os.makedirs(os.path.join(base, "in"))
    files = [rows(0, 50, 1), rows(1, 1500, 2), rows(2, 50, 3)]
    write_file(spark, os.path.join(base, "in"), "b0", files[0], DDL)
    query = start(spark, base, {"processingTime": "200 milliseconds"})
    try:
        query.processAllAvailable()
        write_file(spark, os.path.join(base, "in"), "b1", files[1], DDL)
        wait_for_a_batch(query)
        capfd.readouterr()
        with jvm_log(spark) as log:
            stop_query(query, timeout=timeout)
            assert not query.isActive
            time.sleep(1)  # anything Spark would still report about the cancelled batch
            text = log.toString()
    finally:
        if query.isActive:
            query.stop()
    err = capfd.readouterr().err
    assert "ERROR" not in text, text
    assert "Traceback" not in err and "ERROR" not in err, err
    log4j = spark.sparkContext._jvm.org.apache.logging.log4j
    loggers = log4j.LogManager.getContext(False).getConfiguration().getLoggers()
    assert not any(loggers.containsKey(name) for name in CANCEL_LOGGERS)  # as they were
    # restart from the checkpoint: everything, once (the batch the stop cut short is redone)
    write_file(spark, os.path.join(base, "in"), "b2", files[2], DDL)
    flush = [("C", 99, 0, 10**6, 10**9)]
    write_file(spark, os.path.join(base, "in"), "b3", flush, DDL)
    start(spark, base, {"availableNow": True}).awaitTermination()
    got = by_events(spark.read.parquet(os.path.join(base, "out")).collect())
    events = [r for f in files for r in f] + flush
    want = by_events(find(spark.createDataFrame(events, DDL), QUERY, time="ts",
                          sequence="seq").collect())
    assert sum(want.values()) > 100
    assert got == want


def test_a_failed_query_still_raises_and_is_logged(spark, tmp_path):
    from pyspark.errors import StreamingQueryException

    base = str(tmp_path)
    os.makedirs(os.path.join(base, "in"))
    write_file(spark, os.path.join(base, "in"), "b0", rows(0, 50, 1), DDL)
    source = spark.readStream.schema(DDL).parquet(os.path.join(base, "in"))

    def sink(df, batch_id):
        raise RuntimeError("the sink is broken")

    out = find(source, QUERY, time="ts", sequence="seq", time_unit="s", watermark="5 seconds")
    with jvm_log(spark) as log:
        query = (out.writeStream.foreachBatch(sink)
                 .option("checkpointLocation", os.path.join(base, "checkpoint")).start())
        deadline = time.monotonic() + 120
        while query.isActive and time.monotonic() < deadline:
            time.sleep(0.1)
        with pytest.raises(StreamingQueryException, match="the sink is broken"):
            stop_query(query)
        assert "ERROR" in log.toString()
