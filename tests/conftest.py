"""Shared fixtures: schemas from the papers, backends, a helper that runs a query, and the one
local SparkSession (``spark``; its settings: spark_session.py)."""

from __future__ import annotations

import pytest
from spark_session import CONNECT_PORT, spark_session_builder
from support import ABC_DECL, BACKENDS, HT_DECL

import cercore


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request) -> str:
    """The one way a test runs on each backend: ask for ``backend`` ("python", and "cython" when
    the extension is built). Module-scoped so that Hypothesis tests can take it (a function-scoped
    fixture fails their health check); it is a plain string, nothing to tear down. Tests that
    compare the backends with each other loop over ``support.BACKENDS`` instead."""
    return request.param


@pytest.fixture
def ht_schema() -> cercore.Schema:
    return cercore.Schema.parse(HT_DECL)


@pytest.fixture
def abc_schema() -> cercore.Schema:
    return cercore.Schema.parse(ABC_DECL)


@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession shared by the whole test session; skipped without pyspark."""
    pytest.importorskip("pyspark")
    session = spark_session_builder(connect_port=CONNECT_PORT).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
