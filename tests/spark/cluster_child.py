"""The driver programs of tests/spark/test_cluster.py, each run in its own process against the
standalone cluster (``CERCORE_CLUSTER``, the master's URL) with executors that lack cercore:

    spark-submit --master URL --archives A#cercore_lib \\
        --conf spark.executorEnv.PYTHONPATH=cercore_lib cluster_child.py batch BASE
    python cluster_child.py SCENARIO BASE ARCHIVE      (SparkSession.builder: the same confs)
    python cluster_child.py connect BASE ARCHIVE sc://HOST:PORT      (a Spark Connect client)

Scenarios write their results under BASE/out (Parquet, or a pickle of Python rows) for the
test to compare with the local engine, and print progress lines the test reads.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))

from cluster_data import (  # noqa: E402
    DECL,
    QUERIES,
    SQL_QUERY,
    TREND_QUERY,
    TREND_SCHEMA,
)

import cercore  # noqa: E402
from cercore.spark import aggregate_rows, find, register  # noqa: E402


def builder(archive: str | None, ui_port: int | None = None):
    """The documented classic session: the cluster's master, the archive and the path."""
    from pyspark.sql import SparkSession

    b = (SparkSession.builder.master(os.environ["CERCORE_CLUSTER"]).appName("cercore-cluster")
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "4")
         .config("spark.default.parallelism", "2")  # the cluster's cores: no probe job
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.shuffle.readHostLocalDisk", "false")  # as if on separate hosts
         .config("spark.sql.streaming.stateStore.providerClass",
                 "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"))
    # (SparkSession.builder is one object per process: set what a later session changes)
    b = b.config("spark.ui.enabled", str(bool(ui_port)).lower())
    if ui_port:
        b = b.config("spark.ui.port", str(ui_port))
    if archive:
        b = (b.config("spark.archives", f"{archive}#cercore_lib")
             .config("spark.executorEnv.PYTHONPATH", "cercore_lib"))
    return b


def where_cercore(rows):
    """(On an executor) the Python, the cercore it imports and its backend."""
    import sys

    import cercore

    yield f"{sys.executable} {cercore.__file__} {cercore.BACKEND}"


def batch(spark, base: str) -> None:
    """keyed and T-CER find (also in place, over the events in order), a trend aggregate,
    cer_find through SQL."""
    out = os.path.join(base, "out")
    found = spark.sparkContext.parallelize(range(2), 2).mapPartitions(where_cercore).collect()
    print("\n".join("executor " + f for f in sorted(set(found))), flush=True)
    events = spark.read.parquet(os.path.join(base, "events.parquet"))
    for name in ("keyed", "tcer"):
        find(events, QUERIES[name], schema=DECL, time="ts", sequence="seq") \
            .write.mode("overwrite").parquet(os.path.join(out, name))
    # the same events in order, one file per read partition: the in-place plan
    spark.conf.set("spark.sql.files.openCostInBytes", str(1 << 30))
    ordered = spark.read.parquet(os.path.join(base, "ordered"))
    for name in ("keyed", "tcer"):
        find(ordered, QUERIES[name], schema=DECL, time="ts", sequence="seq", ordered=True) \
            .write.mode("overwrite").parquet(os.path.join(out, name + "-ordered"))
    spark.conf.unset("spark.sql.files.openCostInBytes")
    trend = spark.read.parquet(os.path.join(base, "trend.parquet"))
    rows = aggregate_rows(trend, TREND_QUERY, schema=TREND_SCHEMA, sequence="seq")
    with open(os.path.join(out, "trend.pickle"), "wb") as f:
        pickle.dump(rows, f)
    write_cer_find(spark, events, out)
    print("done", flush=True)


def missing_then_stream(base: str, archive: str) -> None:
    """A session without the archive: the CercoreError before any job. Then the documented
    session: a streaming find over the first half of the files (printing each committed
    micro-batch: the test kills an executor meanwhile), stopped, and restarted from its
    checkpoint over the rest."""
    spark = builder(None).getOrCreate()
    events = spark.read.parquet(os.path.join(base, "events.parquet"))
    try:
        find(events, QUERIES["keyed"], schema=DECL, time="ts", sequence="seq")
        print("no error", flush=True)
    except cercore.CercoreError as err:
        print("error:", str(err).replace("\n", " "), flush=True)
    spark.stop()
    print(f"missing checked at {time.monotonic() - T0:.1f} s", flush=True)
    spark = builder(archive, int(os.environ["CERCORE_UI_PORT"])).getOrCreate()
    print(f"app {spark.sparkContext.applicationId}", flush=True)
    files = sorted(os.listdir(os.path.join(base, "all")))
    os.makedirs(os.path.join(base, "in"))
    for part in (files[:len(files) // 2], files[len(files) // 2:]):
        for name in part:
            os.rename(os.path.join(base, "all", name), os.path.join(base, "in", name))
        q = start_stream(spark, base)
        seen = -1
        while q.isActive:
            q.awaitTermination(0.2)
            progress = q.lastProgress
            if progress is not None and progress["batchId"] != seen:
                seen = progress["batchId"]
                print(f"batch {seen}", flush=True)
        q.awaitTermination()
        print(f"run ended at batch {q.lastProgress['batchId']}, "
              f"{time.monotonic() - T0:.1f} s", flush=True)
    report_executors(spark)
    spark.stop()
    print("done", flush=True)


def start_stream(spark, base: str):
    ddl = "event_type string, id long, v long, ts long, seq long"
    source = (spark.readStream.schema(ddl).option("maxFilesPerTrigger", 1)
              .parquet(os.path.join(base, "in")))
    out = find(source, QUERIES["keyed"], schema=DECL, time="ts", sequence="seq",
               time_unit="s", watermark="6 seconds")
    return (out.writeStream.format("parquet").option("path", os.path.join(base, "out"))
            .option("checkpointLocation", os.path.join(base, "checkpoint"))
            .trigger(availableNow=True).start())


def big(spark, base: str) -> None:
    """A keyed find over many events in 5 engine partitions (the test kills an executor)."""
    events = spark.read.parquet(os.path.join(base, "events.parquet"))
    print("running", flush=True)
    find(events, QUERIES["keyed"], schema=DECL, time="ts", sequence="seq", num_partitions=5) \
        .write.mode("overwrite").parquet(os.path.join(base, "out", "big"))
    report_executors(spark)
    print("done", flush=True)


def connect(base: str, archive: str, remote: str) -> None:
    """A Spark Connect client of the cluster's Connect server (started with
    ``--conf spark.executorEnv.PYTHONPATH=cercore_lib``): without the artifact, the
    CercoreError; with ``addArtifacts(archive#cercore_lib, archive=True)``, a keyed find and
    cer_find through SQL."""
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote(remote).getOrCreate()
    events = spark.read.parquet(os.path.join(base, "events.parquet"))
    try:
        find(events, QUERIES["keyed"], schema=DECL, time="ts", sequence="seq")
        print("no error", flush=True)
    except cercore.CercoreError as err:
        print("error:", str(err).replace("\n", " "), flush=True)
    spark.addArtifacts(f"{archive}#cercore_lib", archive=True)
    out = os.path.join(base, "out")
    find(events, QUERIES["keyed"], schema=DECL, time="ts", sequence="seq") \
        .write.mode("overwrite").parquet(os.path.join(out, "keyed"))
    write_cer_find(spark, events, out)
    spark.stop()
    print("done", flush=True)


def write_cer_find(spark, events, out: str) -> None:
    """``cer_find`` through ``spark.sql`` over ``events``, written to ``out``/sql."""
    register(spark)
    events.createOrReplaceTempView("events")
    decl = DECL.replace("'", "''")
    spark.sql(f"SELECT * FROM cer_find(TABLE(events) WITH SINGLE PARTITION ORDER BY (ts, seq), "
              f"'{SQL_QUERY}', '{decl}')").write.mode("overwrite").parquet(
        os.path.join(out, "sql"))


def report_executors(spark) -> None:
    """The executors the application had and lost, from the driver's REST API."""
    ui = spark.sparkContext.uiWebUrl
    if not ui:
        return
    app = spark.sparkContext.applicationId
    with urllib.request.urlopen(f"{ui}/api/v1/applications/{app}/allexecutors") as r:
        execs = [e for e in json.load(r) if e["id"] != "driver"]
    print("executors " + json.dumps({"total": len(execs),
                                     "lost": sum(not e["isActive"] for e in execs),
                                     "failed_tasks": sum(e["failedTasks"] for e in execs)}),
          flush=True)


T0 = time.monotonic()


def main(scenario: str, base: str, archive: str | None = None, remote: str = "") -> None:
    if scenario == "missing_then_stream":
        missing_then_stream(base, archive)
    elif scenario == "connect":
        connect(base, archive, remote)
    else:
        ui = int(os.environ["CERCORE_UI_PORT"]) if os.environ.get("CERCORE_UI_PORT") else None
        spark = builder(archive, ui).getOrCreate()  # under spark-submit: its confs
        print(f"app {spark.sparkContext.applicationId}", flush=True)
        {"batch": batch, "big": big}[scenario](spark, base)
        spark.stop()
    print(f"took {time.monotonic() - T0:.1f} s", flush=True)
    shutil.rmtree(os.path.join(base, "spark-warehouse"), ignore_errors=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
