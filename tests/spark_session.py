"""The settings of the one local SparkSession every Spark test shares
(``spark_session_builder``): the ``spark`` fixture (tests/conftest.py) starts it once per test
session, so a test anywhere -- tests/spark, tests/test_one_predicate_meaning.py -- can take it
(mark the test ``@pytest.mark.spark``); scripts that want the same settings build it here.

Settings follow shared/notes/ecosystem.md §1.4: local[2], two shuffle partitions, the RocksDB
state store (streaming transformWithState refuses the default provider), the UI and progress
bars off, the worker Python = this interpreter (a bare ``python3`` would lack
pandas/pyarrow/cercore), and C1-only JIT, which roughly halves JVM warm-up. The session also
serves Spark Connect on ``CONNECT_PORT`` (tests/spark/conftest.py's ``connect`` fixture).
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A TCP port free on the loopback interface now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CONNECT_PORT = free_port()


def spark_session_builder(app_name: str = "cercore-tests", connect_port: int | None = None):
    """The builder behind the ``spark`` fixture (exposed for scripts that want the same
    settings); with ``connect_port`` the session also serves Spark Connect there."""
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # workers import cercore from the checkout even when it is not installed
    paths = [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    builder = (SparkSession.builder.master("local[2]").appName(app_name)
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
    if connect_port is not None:
        builder = (builder.config("spark.plugins",
                                  "org.apache.spark.sql.connect.SparkConnectPlugin")
                   .config("spark.connect.grpc.binding.address", "127.0.0.1")
                   .config("spark.connect.grpc.binding.port", str(connect_port)))
    return builder


