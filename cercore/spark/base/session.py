"""What cercore asks of a SparkSession, answered the same way on a classic (JVM-attached)
session and on a Spark Connect session: nothing here touches ``sparkContext``, ``_jvm`` or
``_jdf``, which Spark Connect does not have.

``parallelism(spark)`` — the cores cercore sizes its partitions by, Spark's
``defaultParallelism`` read without a SparkContext, in this order:

1. ``spark.default.parallelism``, when set: Spark's ``defaultParallelism`` is exactly that;
2. the master ``local`` / ``local[N]`` / ``local[N, F]`` / ``local[*]``: N (``*``: the cores
   of this machine, where a local master runs), which is what a local scheduler reports;
3. otherwise (a cluster), a probe: the partitions of ``spark.range`` without a partition count,
   which Spark sizes by ``spark.sql.leafNodeDefaultParallelism``, else ``defaultParallelism``
   (one tiny job, once per session).
"""

from __future__ import annotations

import os
import re

_LOCAL = re.compile(r"local(?:\[(\*|\d+)(?:\s*,\s*\d+)?\])?$")
_probed: dict[str, int] = {}


def is_connect(spark) -> bool:
    """Whether ``spark`` is a Spark Connect session (no JVM in this process to reach)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def parallelism(spark) -> int:
    """The cores the session's jobs run on (Spark's ``defaultParallelism``), at least 1."""
    conf = spark.conf
    value = conf.get("spark.default.parallelism", None)
    if value:
        return max(int(value), 1)
    master = (conf.get("spark.master", None) or "").strip()
    local = _LOCAL.match(master)
    if local:
        n = local.group(1)
        if n is None:
            return 1
        return max(os.cpu_count() or 1, 1) if n == "*" else max(int(n), 1)
    return _probe(spark)


def _probe(spark) -> int:
    """``defaultParallelism`` of a cluster: the distinct partitions of a ``spark.range``
    whose slices Spark sizes by it (cached per session)."""
    from pyspark.sql import functions as F

    key = session_key(spark)
    if key not in _probed:
        hint = spark.conf.get("spark.sql.leafNodeDefaultParallelism", None)
        if hint:
            _probed[key] = max(int(hint), 1)
        else:
            parts = spark.range(0, 1 << 16).select(F.spark_partition_id().alias("p"))
            _probed[key] = max(parts.distinct().count(), 1)
    return _probed[key]


def session_key(spark) -> str:
    session_id = getattr(spark, "session_id", None)  # Connect sessions have one
    return str(session_id) if session_id is not None else str(id(spark))
