"""A streaming ``find`` in its own process, for the crash test (test_spark_kill.py):

    python stream_child.py BASE QUERY

reads BASE/in (Parquet files, one per micro-batch), writes the complex events to the Parquet
sink BASE/out with the checkpoint BASE/checkpoint, until every file is processed; prints
"batch N" as each micro-batch commits, so the parent knows when to kill it.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))

from spark_session import spark_session_builder  # noqa: E402
from test_spark_streaming import start_available  # noqa: E402


def main(base: str, query: str) -> None:
    spark = spark_session_builder("cercore-stream-child").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    q = start_available(spark, base, query)
    while q.isActive:
        q.awaitTermination(0.2)
        progress = q.lastProgress
        if progress is not None:
            print(f"batch {progress['batchId']}", flush=True)
    q.awaitTermination()
    print("done", flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
