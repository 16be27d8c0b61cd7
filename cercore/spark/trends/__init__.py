"""Trend aggregation on Spark: ``aggregate`` / ``aggregate_rows`` and the batch runs
(``batch``), the workers (``job``), the result rows (``rows``) and streaming (``streaming``)."""

from cercore.spark.trends.batch import aggregate, aggregate_rows, trend_query

__all__ = ["aggregate", "aggregate_rows", "trend_query"]
