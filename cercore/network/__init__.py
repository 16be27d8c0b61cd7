"""Distributed CER with predicate-based push-pull plans (PrePP; Purtzel, Akili, Weidlich,
DEBS 2022; corrections to the printed paper in docs/network.md): network model, queries in
PrePP's fragment, plans, the cost model in the paper's literal and the sink-aware mode,
planners, a discrete-event network simulator evaluating at the sink with the cercore engine,
rate and selectivity estimation, generators, and a Spark batch realisation
(``cercore.spark.network.plans``).
See docs/network.md."""

from cercore.network.cost import (
    MODES,
    CostReport,
    StepCost,
    cost_report,
    plan_cost,
    push_all_cost,
    push_all_plan,
)
from cercore.network.errors import NetworkError, PlanError
from cercore.network.network import Network
from cercore.network.plan import Plan, Step
from cercore.network.planners import (
    PLANNERS,
    PlanResult,
    make_plan,
    plan_exact,
    plan_greedy,
    plan_push_all,
    plan_sampling,
    plan_window_pushpull,
    transmission_ratio,
)
from cercore.network.query import (
    Leaf,
    NetEvent,
    NetQuery,
    Op,
    Predicate,
    and_,
    or_,
    seq,
)
from cercore.network.selectivity import Selectivities

__all__ = [
    "MODES", "PLANNERS", "CostReport", "Leaf", "NetEvent", "NetQuery", "Network", "NetworkError",
    "Op", "Plan", "PlanError", "PlanResult", "Predicate", "Selectivities", "Step", "StepCost",
    "and_", "cost_report", "make_plan", "or_", "plan_cost", "plan_exact", "plan_greedy",
    "plan_push_all", "plan_sampling", "plan_window_pushpull", "push_all_cost", "push_all_plan",
    "seq", "transmission_ratio",
]
