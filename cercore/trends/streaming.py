"""Deprecated path, kept for one release: Structured Streaming for trend aggregation lives in
``cercore.spark.trends_streaming`` (reached through ``cercore.spark.aggregate`` on a streaming
DataFrame). Taking a name from here warns; pyspark is imported only then."""

from __future__ import annotations

from cercore.deprecation import deprecated

MOVED = ("STATE_VERSION", "TrendProcessor", "run_streaming")


def __getattr__(name: str):
    if name not in MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from cercore.spark import trends_streaming

    deprecated(f"cercore.trends.streaming.{name}", f"cercore.spark.trends_streaming.{name}")
    return getattr(trends_streaming, name)
