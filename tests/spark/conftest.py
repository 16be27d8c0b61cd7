"""The one local SparkSession every Spark test shares (session-scoped: a JVM start costs
10–20 s here, so nobody should start a second one).

Use it as the ``spark`` fixture and mark the test ``@pytest.mark.spark``. Settings follow
shared/notes/ecosystem.md §1.4: local[2], two shuffle partitions, the RocksDB state store
(streaming transformWithState refuses the default provider), the UI and progress bars off, the
worker Python = this interpreter (a bare ``python3`` would lack pandas/pyarrow/cercore), and
C1-only JIT, which roughly halves JVM warm-up.

The same JVM also serves Spark Connect (the ``SparkConnectPlugin`` on a free loopback port),
so ``connect`` — a Spark Connect client session on it — costs no second JVM. Exactly this is
what ``SparkSession.builder.remote("local[2]")`` does in a user's process: it starts a classic
session with the plugin, then connects to it. Only one thing is process-wide: pyspark routes
``pyspark.sql.functions`` to their Connect versions while ``SPARK_CONNECT_MODE_ENABLED`` is in
the environment, so ``connect`` sets it for its test only (a classic test after it must see
classic functions again).
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


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


@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession shared by the whole test session; skipped without pyspark."""
    pytest.importorskip("pyspark")
    session = spark_session_builder(connect_port=CONNECT_PORT).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"


@pytest.fixture(scope="session")
def connect_session(spark):
    """A Spark Connect client of the ``spark`` fixture's JVM (use ``connect`` in tests);
    skipped without the Connect client's packages (``pip install -e '.[connect]'``)."""
    try:
        from pyspark.sql.connect.session import SparkSession as RemoteSparkSession
    except ImportError as err:  # grpcio, zstandard, ... missing
        pytest.skip(f"Spark Connect client unavailable: {err}")
    before = os.environ.get(CONNECT_MODE)
    os.environ[CONNECT_MODE] = "1"
    try:
        session = RemoteSparkSession.builder.remote(
            f"sc://127.0.0.1:{CONNECT_PORT}").getOrCreate()
    finally:
        _restore(CONNECT_MODE, before)
    yield session
    os.environ[CONNECT_MODE] = "1"
    try:
        session.stop()
    finally:
        _restore(CONNECT_MODE, before)


@pytest.fixture
def connect(connect_session):
    """The Spark Connect session, with pyspark in Connect mode for this test only."""
    before = os.environ.get(CONNECT_MODE)
    os.environ[CONNECT_MODE] = "1"
    yield connect_session
    _restore(CONNECT_MODE, before)


def _restore(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
