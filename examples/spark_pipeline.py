"""CSV or Parquet events in -> cercore on Spark -> Parquet complex events out.

Run it on a local Spark (needs ``pip install 'cercore[spark]'`` and Java 17+)::

    python examples/spark_pipeline.py                       # the bundled trades.csv
    python examples/spark_pipeline.py --input events.parquet --output out/ \\
        --query "SELECT * FROM S WHERE BUY AS b; SELL AS s FILTER s[price > b.price] ..."

On a cluster, ship cercore to the executors and submit the same script::

    pip wheel --no-deps . -w dist/                          # cercore-*.whl (with cercore_fast)
    spark-submit --master yarn --deploy-mode cluster \\
        --archives venv.tar.gz#venv \\                       # a venv with cercore[spark] ...
        --conf spark.pyspark.python=./venv/bin/python \\
        examples/spark_pipeline.py --input s3://bucket/events/ --output s3://bucket/matches/

(``venv.tar.gz`` from ``venv-pack`` or ``conda-pack``; a pure-Python cercore also works as
``--py-files cercore.zip``, without the Cython kernels.)
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

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers run this interpreter
    from pyspark.sql import SparkSession

    from cercore.spark import explain, find

    builder = SparkSession.builder.appName("cercore-spark-pipeline")
    if args.master:
        builder = builder.master(args.master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit: run locally
        builder = builder.master("local[2]")
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
