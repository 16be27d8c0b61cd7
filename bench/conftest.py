"""Fixtures for the pytest-benchmark suites (``python -m pytest bench``; not part of ``tests/``)."""

from __future__ import annotations

import pytest

import cercore
from cercore.cli.demo import demo_queries, stock_schema, stock_trace
from cercore.runtime.backend import CYTHON_AVAILABLE

BACKENDS = ["python"] + (["cython"] if CYTHON_AVAILABLE else [])


@pytest.fixture(scope="session")
def stock():
    """(schema, the whole stock trace prefix as an Arrow table)."""
    schema = stock_schema()
    return schema, stock_trace(schema)


@pytest.fixture(scope="session")
def compiled(stock):
    schema, _ = stock
    return {q.name: cercore.compile(q.text, schema) for q in demo_queries()}


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param
