"""``cercore spark-pack OUT.tar.gz``: the archive that ships cercore to Spark's executors
(``cercore.spark.base.shipping.pack``; the recipe: docs/deploying.md)."""

from __future__ import annotations

import sys


def add_subcommands(sub) -> None:
    """Add ``spark-pack`` to the ``cercore`` subparsers."""
    pack = sub.add_parser(
        "spark-pack", help="build the archive that ships cercore to Spark executors",
        description="Write a .tar.gz of cercore (with this platform's compiled kernels), lark "
                    "and google-re2 -- what Spark executors need besides pyspark -- to ship "
                    "with --archives OUT#cercore_lib --conf "
                    "spark.executorEnv.PYTHONPATH=cercore_lib (see docs/deploying.md).")
    pack.add_argument("out", metavar="OUT.tar.gz", help="the archive to write")
    pack.set_defaults(func=cmd_spark_pack)


def cmd_spark_pack(args) -> int:
    from cercore.spark.base.shipping import ALIAS, pack

    out = pack(args.out)
    size = out.stat().st_size
    sys.stdout.write(f"{out}: {size / 1e6:.1f} MB; ship it with --archives {out}#{ALIAS} "
                     f"--conf spark.executorEnv.PYTHONPATH={ALIAS}\n")
    return 0
