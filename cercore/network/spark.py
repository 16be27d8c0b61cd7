"""Deprecated path, kept for one release: PrePP on Spark lives in ``cercore.spark.network`` --
``cercore.spark.run_plan(events, query, *, plan, network=None, spark=None, ...)`` and the
estimators ``cercore.spark.estimate_rates`` / ``cercore.spark.estimate_pairwise``. The
functions here keep the old argument order and warn."""

from __future__ import annotations

from cercore.deprecation import deprecated
from cercore.network.network import Network
from cercore.network.plan import Plan
from cercore.network.query import NetQuery
from cercore.spark import network as spark_network
from cercore.spark.network import SparkPlanRun

__all__ = ["SparkPlanRun", "apply_filters", "estimate_pairwise_spark", "estimate_rates_spark",
           "events_dataframe", "run_plan_spark"]


def events_dataframe(spark, traces, time_attribute: str = "t"):
    """Deprecated: ``cercore.spark.events_dataframe(traces, spark=spark)``."""
    deprecated("cercore.network.spark.events_dataframe(spark, traces)",
               "cercore.spark.events_dataframe(traces, spark=spark)")
    return spark_network.events_dataframe(traces, spark=spark, time_attribute=time_attribute)


def apply_filters(query: NetQuery, events, backend: str = "auto"):
    """Deprecated: ``cercore.spark.network.apply_filters(events, query, backend=...)``."""
    deprecated("cercore.network.spark.apply_filters(query, events)",
               "cercore.spark.network.apply_filters(events, query)")
    return spark_network.apply_filters(events, query, backend=backend)


def run_plan_spark(spark, query: NetQuery, plan: Plan, events, network: Network | None = None,
                   backend: str = "auto") -> SparkPlanRun:
    """Deprecated: ``cercore.spark.run_plan(events, query, plan=plan, spark=spark, ...)``."""
    deprecated("cercore.network.spark.run_plan_spark(spark, query, plan, events)",
               "cercore.spark.run_plan(events, query, plan=plan, spark=spark)")
    return spark_network.run_plan(events, query, plan=plan, network=network, spark=spark,
                                  backend=backend)


def estimate_rates_spark(events, duration: float | None = None,
                         time_attribute: str = "t") -> Network:
    """Deprecated: ``cercore.spark.estimate_rates(events, duration=..., ...)``."""
    deprecated("cercore.network.spark.estimate_rates_spark", "cercore.spark.estimate_rates")
    return spark_network.estimate_rates(events, duration=duration,
                                        time_attribute=time_attribute)


def estimate_pairwise_spark(query: NetQuery, events) -> dict[frozenset, float]:
    """Deprecated: ``cercore.spark.estimate_pairwise(events, query)``."""
    deprecated("cercore.network.spark.estimate_pairwise_spark(query, events)",
               "cercore.spark.estimate_pairwise(events, query)")
    return spark_network.estimate_pairwise(events, query)
