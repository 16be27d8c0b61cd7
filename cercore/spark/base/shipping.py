"""Getting cercore onto Spark's executors, and knowing before a job runs that it is there.

``pack(out)`` — the artifact to ship: a ``.tar.gz`` of the packages cercore's workers import
that executors do not already have with pyspark: ``cercore`` and ``cercore_fast`` (the
compiled kernels of this platform, as imported here), ``lark`` and ``google-re2`` (copied from
this Python's installed distributions, so the versions are the driver's). Not pyspark,
pyarrow, numpy or pandas: executors run pyspark and have those. Unpacked on an executor under
the alias ``cercore_lib`` and put on the Python workers' path::

    cercore spark-pack cercore-spark.tar.gz
    spark-submit --master spark://HOST:7077 \\
        --archives cercore-spark.tar.gz#cercore_lib \\
        --conf spark.executorEnv.PYTHONPATH=cercore_lib  app.py

(Spark Connect: the server started with ``--conf spark.executorEnv.PYTHONPATH=cercore_lib``,
then per session ``spark.addArtifacts("cercore-spark.tar.gz#cercore_lib", archive=True)``;
docs/deploying.md has the whole recipe, run by tests/spark/test_cluster.py.) The compiled
modules (cercore's kernels, google-re2's ``_re2``) load only on executors of the same OS,
architecture and Python minor version as the machine that packed them: pack it there.

``require_cercore(spark)`` — one tiny job per session that imports cercore on the executors;
where it is missing, a ``CercoreError`` on the driver saying how to ship it, instead of a
``ModuleNotFoundError`` from a worker after four task retries.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from importlib import metadata
from pathlib import Path

from cercore.errors import CercoreError

#: the alias the archive is unpacked under on executors (``--archives X#cercore_lib``)
ALIAS = "cercore_lib"
#: the distributions shipped besides cercore (cercore's dependencies executors lack)
SHIPPED = ("lark", "google-re2")
#: what is left out of cercore's own folders: sources the executors never read
_SKIP = ("__pycache__", "*.c", "*.cpp", "*.pyc", "*.html")

PROBE = "spark.cercore.probe"  # "false": skip the executor check (a conf of the session)

_probed: set[str] = set()


def pack(out: str | os.PathLike, *, compress: bool = True) -> Path:
    """Write the executors' archive of cercore to ``out`` (``.tar.gz``); return its path."""
    import cercore
    import cercore_fast

    out = Path(out)
    with tempfile.TemporaryDirectory(prefix="cercore-pack-") as tmp:
        root = Path(tmp)
        for module in (cercore, cercore_fast):
            src = Path(module.__file__).parent
            shutil.copytree(src, root / src.name, ignore=shutil.ignore_patterns(*_SKIP))
        for name in SHIPPED:
            _copy_distribution(name, root)
        out.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(out, "w:gz" if compress else "w") as tar:
            for item in sorted(root.iterdir()):
                tar.add(item, arcname=item.name)
    return out


def _copy_distribution(name: str, root: Path) -> None:
    """Copy an installed distribution's files (its modules and dist-info) under ``root``."""
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError as err:
        raise CercoreError(f"cannot pack {name!r}: it is not installed in this Python "
                           f"(pip install {name})") from err
    files = dist.files
    if not files:
        raise CercoreError(f"cannot pack {name!r}: its installed files are not listed")
    for file in files:
        parts = Path(file).parts
        if not parts or parts[0] == ".." or "__pycache__" in parts or Path(file).is_absolute():
            continue  # scripts outside site-packages, bytecode
        src = Path(dist.locate_file(file))
        if src.is_file():
            dst = root.joinpath(*parts)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)


HOW_TO_SHIP = (
    "ship it with the job: `cercore spark-pack cercore-spark.tar.gz`, then "
    "`--archives cercore-spark.tar.gz#cercore_lib --conf "
    "spark.executorEnv.PYTHONPATH=cercore_lib` (spark-submit; the same two confs "
    "spark.archives and spark.executorEnv.PYTHONPATH on SparkSession.builder); on Spark "
    "Connect `spark.addArtifacts('cercore-spark.tar.gz#cercore_lib', archive=True)` with "
    "the server started with that PYTHONPATH; or install cercore in the executors' Python "
    "(docs/deploying.md)")

# The probe's worker function, compiled here from text so that cloudpickle ships it by value:
# a function of this module would be pickled by reference and fail to unpickle (with the
# very ModuleNotFoundError it is meant to catch) where cercore is missing.
_PROBE_SOURCE = '''
def check(_=None):
    import importlib
    import sys
    importlib.invalidate_caches()
    try:
        import cercore
        return "ok " + cercore.__version__ + " " + cercore.BACKEND
    except Exception as err:  # ModuleNotFoundError, a broken lark, ...
        # a failed import leaves "no finder" for a path entry missing so far (a Connect
        # session's artifact not yet added) in this reused worker: forget it
        importlib.invalidate_caches()
        return ("missing " + type(err).__name__ + ": " + str(err) + " (Python "
                + sys.executable + ")")


def probe(rows):
    for _ in rows:
        pass
    yield check()
'''


def _probe_functions():
    """(check, probe): the worker functions, compiled from ``_PROBE_SOURCE``."""
    namespace: dict = {"__name__": "cercore_executor_probe"}
    exec(compile(_PROBE_SOURCE, "<cercore executor probe>", "exec"), namespace)
    return namespace["check"], namespace["probe"]


def require_cercore(spark) -> None:
    """Raise ``CercoreError`` unless cercore imports on the session's executors: one tiny
    job (a partition per core) the first time a session asks, then cached; a session with
    ``spark.cercore.probe=false`` skips it."""
    from cercore.spark.base.session import is_connect, parallelism, session_key

    connect = is_connect(spark)
    # a classic session's id may be reused by a later session: its application id is not
    key = session_key(spark) + ("" if connect else " " + spark.sparkContext.applicationId)
    if key in _probed:
        return
    if str(spark.conf.get(PROBE, "true")).lower() == "false":
        _probed.add(key)
        return
    found = _run_probe(spark, min(max(parallelism(spark), 1), 64), connect)
    missing = sorted({f for f in found if not f.startswith("ok ")})
    if missing:
        raise CercoreError("cercore cannot be imported on the Spark executors ("
                           + "; ".join(missing) + "): " + HOW_TO_SHIP)
    _probed.add(key)


def _run_probe(spark, parts: int, connect: bool) -> list[str]:
    check, probe = _probe_functions()
    if connect:  # no RDDs on Spark Connect: a Python UDF
        from pyspark.sql import functions as F
        from pyspark.sql.types import StringType

        udf = F.udf(check, StringType())
        rows = spark.range(0, parts, 1, parts).select(udf("id").alias("f")).distinct()
        return [r.f for r in rows.collect()]
    rdd = spark.sparkContext.parallelize(range(parts), parts)
    return sorted(set(rdd.mapPartitions(probe).collect()))
