"""Shared fixtures: schemas from the papers, backends, and a helper that runs a query."""

from __future__ import annotations

import pytest
from support import ABC_DECL, BACKENDS, HT_DECL

import cercore


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    """Every runtime test runs on every available backend."""
    return request.param


@pytest.fixture
def ht_schema() -> cercore.Schema:
    return cercore.Schema.parse(HT_DECL)


@pytest.fixture
def abc_schema() -> cercore.Schema:
    return cercore.Schema.parse(ABC_DECL)
