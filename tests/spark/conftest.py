"""The one local SparkSession every Spark test shares (session-scoped: a JVM start costs
10–20 s here, so nobody should start a second one).

Use it as the ``spark`` fixture and mark the test ``@pytest.mark.spark``. Settings follow
shared/notes/ecosystem.md §1.4: local[2], two shuffle partitions, the RocksDB state store
(streaming transformWithState refuses the default provider), the UI and progress bars off, the
worker Python = this interpreter (a bare ``python3`` would lack pandas/pyarrow/cercore), and
C1-only JIT, which roughly halves JVM warm-up.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def spark_session_builder(app_name: str = "cercore-tests"):
    """The builder behind the ``spark`` fixture (exposed for scripts that want the same
    settings)."""
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # workers import cercore from the checkout even when it is not installed
    paths = [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return (SparkSession.builder.master("local[2]").appName(app_name)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.default.parallelism", "2")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .config("spark.sql.streaming.stateStore.providerClass",
                    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
            .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"]))


@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession shared by the whole test session; skipped without pyspark."""
    pytest.importorskip("pyspark")
    session = spark_session_builder().getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
