"""Deprecated path, kept for one release: CEQL over Spark DataFrames lives in
``cercore.spark.ceql`` (``cercore.spark.find(df, query, *, schema=None, backend="auto",
...)``). ``find`` here keeps the old order ``find(df, query, schema, backend, ...)`` and
warns."""

from __future__ import annotations

from cercore.deprecation import deprecated
from cercore.spark import ceql
from cercore.spark.ceql import explain, output_schema

__all__ = ["explain", "find", "output_schema"]


def find(df, query: str, schema=None, backend: str = "auto", **options):
    """Deprecated: ``cercore.spark.find(df, query, schema=schema, backend=backend, ...)``."""
    deprecated("cercore.spark.api.find(df, query, schema, backend)",
               "cercore.spark.find(df, query, schema=schema, backend=backend)")
    return ceql.find(df, query, schema=schema, backend=backend, **options)
