"""The cost model of §5.4, in two modes (messages per time unit of the rates).

``literal`` is the formula as printed::

    c(s) = (Σ_{ε∈ρ} |f(ε)|) · Σ_{ψ∈Ψ} R(ψ)·σ(ψ, 𝒜(s)) + Σ_{ε∈ρ} R(ε)·σ(ε, {ε}∪Ψ)
    c(p) = Σ_k c(s_k) − Σ_{ε∈𝓔(q), sink∈f(ε)} r(ε)

(the printed sum's ``k < n`` is read as ``k ≤ n``). It can go negative: when the sink's own
high-rate type is *pulled*, the step charges only the pull cost while its full rate is still
subtracted (note §3.2a; Fig. 1 with the sink at node 2 gives −1496).

``sink_aware`` (the default, our correction) charges only what crosses the network and
subtracts nothing::

    c(s) = (Σ_{ε∈ρ} |f(ε)∖{sink}|) · Σ_{ψ∈Ψ} R(ψ)·σ(ψ, 𝒜(s))
         + Σ_{ε∈ρ} r(ε)·|f(ε)∖{sink}|·σ(ε, {ε}∪Ψ)

The two agree whenever the sink's local types are pushed. Both use one pull set per step (the
paper), not one per type (the PrePP artifact). For a window-only plan (``predicate_pull`` off)
the responses use ``window_sigma`` instead of the predicate selectivity.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from cercore.network.errors import NetworkError
from cercore.network.network import Network
from cercore.network.plan import Plan, Step
from cercore.network.query import NetQuery
from cercore.network.selectivity import Selectivities

MODES = ("sink_aware", "literal")


@dataclass(frozen=True)
class StepCost:
    requests: float
    responses: float

    @property
    def total(self) -> float:
        return self.requests + self.responses


@dataclass(frozen=True)
class CostReport:
    """Per-step costs, the literal mode's local-event credit, and the total."""

    mode: str
    steps: tuple[StepCost, ...]
    local_credit: float

    @property
    def total(self) -> float:
        return sum(s.total for s in self.steps) - self.local_credit


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise NetworkError(f"cost mode {mode!r}: use one of {', '.join(MODES)}")
    return mode


def step_cost(pull_set: frozenset[str], acquire: Iterable[str], avail: frozenset[str],
              network: Network, sel: Selectivities, sink: Hashable, mode: str,
              predicate_pull: bool = True) -> StepCost:
    """c(s) of the step (Ψ = ``pull_set``, ρ = ``acquire``) with 𝒜(s) = ``avail``."""
    acquire = tuple(sorted(acquire))
    if mode == "literal":
        dests = sum(len(network.sources_of(t)) for t in acquire)
        senders = {t: len(network.sources_of(t)) for t in acquire}
    else:
        senders = {t: len(network.sources_of(t) - {sink}) for t in acquire}
        dests = sum(senders.values())
    requests = 0.0
    if pull_set and dests:
        requests = dests * sum(network.global_rate(u) * sel.sigma(u, avail)
                                for u in sorted(pull_set))
    responses = 0.0
    for t in acquire:
        if not senders[t]:
            continue
        if not pull_set:
            s = 1.0
        elif predicate_pull:
            s = sel.sigma(t, pull_set | {t})
        else:
            s = sel.window_sigma(t, pull_set)
        responses += senders[t] * network.rates.get(t, 0.0) * s
    return StepCost(requests, responses)


def local_credit(types: Iterable[str], network: Network, sink: Hashable, mode: str) -> float:
    """What the literal mode subtracts: the rates of the query types the sink produces."""
    if mode != "literal":
        return 0.0
    return sum(network.rates.get(t, 0.0) for t in types if sink in network.sources_of(t))


def cost_report(plan: Plan, query: NetQuery, network: Network, sel: Selectivities,
                mode: str = "sink_aware") -> CostReport:
    """The cost of ``plan`` step by step (the plan is validated first)."""
    check_mode(mode)
    plan.validate(query, network)
    steps = tuple(step_cost(s.pull_set, s.acquire, plan.available(i), network, sel, plan.sink,
                            mode, plan.predicate_pull) for i, s in enumerate(plan.steps))
    return CostReport(mode, steps, local_credit(query.types, network, plan.sink, mode))


def plan_cost(plan: Plan, query: NetQuery, network: Network, sel: Selectivities,
              mode: str = "sink_aware") -> float:
    """c(plan) in ``mode``."""
    return cost_report(plan, query, network, sel, mode).total


def push_all_plan(query: NetQuery, sink: Hashable) -> Plan:
    """The centralised plan: every type pushed to ``sink`` in one step."""
    return Plan(sink, (Step((), query.types),))


def push_all_cost(query: NetQuery, network: Network, sink: Hashable | None = None) -> float:
    """Events per time unit the centralised push plan sends to ``sink`` (to the best sink
    when None): the denominator of the transmission ratio. Both modes agree here."""
    nodes = network.nodes if sink is None else (sink,)
    return min(sum(network.rates.get(t, 0.0) * len(network.sources_of(t) - {n})
                   for t in query.types) for n in nodes)
