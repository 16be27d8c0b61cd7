"""CSV or Parquet events in -> cercore on Spark -> Parquet complex events out.

Run it on a local Spark (needs ``pip install 'cercore[spark]'`` and Java 17+)::

    python examples/spark_pipeline.py                       # the bundled trades.csv
    python examples/spark_pipeline.py --input events.parquet --output out/ \\
        --query "SELECT * FROM S WHERE BUY AS b; SELL AS s FILTER s[price > b.price] ..."

On a cluster (client mode; a standalone master runs Python apps in client mode only), ship
cercore to the executors -- they need pyspark's Python packages, not cercore -- and submit
the same script (docs/deploying.md; tests/spark/test_cluster.py runs exactly this)::

    cercore spark-pack cercore-spark.tar.gz        # cercore + kernels, lark, google-re2: ~6 MB
    spark-submit --master spark://HOST:7077 \\
        --archives cercore-spark.tar.gz#cercore_lib \\
        --conf spark.executorEnv.PYTHONPATH=cercore_lib \\
        examples/spark_pipeline.py --input events.parquet --output matches/

The driver runs this script's Python, which needs cercore installed. Without a master (run
directly) it starts local[2], whose workers run this same interpreter.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_QUERY = """
SELECT * FROM S
WHERE BUY AS b1; BUY AS b2; SELL AS s
FILTER b2[price > 40.0] AND s[volume >= 2000]
PARTITION BY [name]
WITHIN 30 SECONDS
"""
CSV_SCHEMA = "event_type string, name string, price double, volume long, ts timestamp"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--input", default=str(HERE / "data" / "trades.csv"),
                   help="CSV (header row) or Parquet file or folder of events")
    p.add_argument("--output", default="spark_pipeline_out",
                   help="folder for the Parquet complex events")
    p.add_argument("--query", default=DEFAULT_QUERY, help="CEQL query text")
    p.add_argument("--time", default="ts", help="event-time column")
    p.add_argument("--master", default=None, help="Spark master (default: local[2], or "
                   "whatever spark-submit was given)")
    args = p.parse_args(argv)

    from pyspark.sql import SparkSession

    from cercore.spark import explain, find

    builder = SparkSession.builder.appName("cercore-spark-pipeline")
    if args.master:
        builder = builder.master(args.master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit: run locally,
        builder = builder.master("local[2]")  # where the workers can run this interpreter
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (builder.config("spark.sql.session.timeZone", "UTC")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("WARN")

    if args.input.endswith(".csv"):
        events = spark.read.csv(args.input, header=True, schema=CSV_SCHEMA)
    else:
        events = spark.read.parquet(args.input)
    print(explain(events, args.query, time=args.time).split("\nquery:")[0])
    matches = find(events, args.query, time=args.time)
    matches.write.mode("overwrite").parquet(args.output)
    written = spark.read.parquet(args.output)
    print(f"{written.count()} complex events written to {args.output}/")
    written.orderBy("end", "start").select("partition", "start", "end", "positions") \
        .show(5, truncate=False)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
