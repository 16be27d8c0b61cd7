"""Deprecated path, kept for one release: trend aggregation on Spark lives in
``cercore.spark.trends`` -- ``cercore.spark.aggregate(df, query, *, spark=None, ...)`` and
``cercore.spark.aggregate_rows(df, query, *, spark=None, ...)``. The functions here keep the
old argument order and warn."""

from __future__ import annotations

from typing import Any

from cercore.deprecation import deprecated
from cercore.spark import trends
from cercore.spark.trends import POSITION, PREFIX

__all__ = ["POSITION", "PREFIX", "aggregate", "run_spark"]


def aggregate(query, events: Any, spark=None, **options):
    """Deprecated: ``cercore.spark.aggregate(events, query, spark=spark, ...)``."""
    deprecated("cercore.trends.spark.aggregate(query, events, spark)",
               "cercore.spark.aggregate(events, query, spark=spark)")
    return trends.aggregate(events, query, spark=spark, **options)


def run_spark(query, events: Any, spark, **options) -> list[dict]:
    """Deprecated: ``cercore.spark.aggregate_rows(events, query, spark=spark, ...)``."""
    deprecated("cercore.trends.spark.run_spark(query, events, spark)",
               "cercore.spark.aggregate_rows(events, query, spark=spark)")
    return trends.aggregate_rows(events, query, spark=spark, **options)
