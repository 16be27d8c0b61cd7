"""Spark Connect fixtures for the Spark tests. The classic ``spark`` session fixture and its
settings are in tests/conftest.py and tests/spark_session.py (any test may take it).

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

import pytest
from spark_session import CONNECT_PORT

CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"


@pytest.fixture(scope="session")
def connect_session(spark):
    """A Spark Connect client of the ``spark`` fixture's JVM (use ``connect`` in tests); the
    Connect client's packages come with the test command's extras (``.[connect]``)."""
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession
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
