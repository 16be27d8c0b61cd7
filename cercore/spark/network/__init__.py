"""PrePP on Spark: push-pull plans run as semi-join reductions (``run_plan``), and the
network's statistics estimated at scale (``estimate_rates``, ``estimate_pairwise``)."""

from cercore.spark.network.plans import (
    SparkPlanRun,
    apply_filters,
    estimate_pairwise,
    estimate_rates,
    events_dataframe,
    run_plan,
)

__all__ = ["SparkPlanRun", "apply_filters", "estimate_pairwise", "estimate_rates",
           "events_dataframe", "run_plan"]
