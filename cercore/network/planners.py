"""Plan construction (§6): exact search, sampling with top-k and step merging, greedy, and
the baselines push-all and time-window-only push-pull. Every planner also chooses the sink.

Sinks are grouped by the set of query types they produce: nodes with the same local types
have identical costs under both modes, so each group is planned once.

* ``plan_exact``: every weak ordering of the types (ordered Bell numbers: 13 for 3 types,
  545,835 for 8) with the best pull set per step; refuses more than ``max_types`` (8).
* ``plan_sampling``: ``samples`` random single-step orderings (seeded), each step with its best
  pull set; the ``top_k`` best orderings are then cut in all 2^{n-1} ways (merging adjacent
  steps, pull sets re-optimised). Defaults s = 1024, k = 10 (the paper's).
* ``plan_greedy``: types in ascending global rate, the first pushed, each later one pulled
  with the best pull set of at most ``max_pull_set`` (3) available types.
* ``plan_push_all``: one push step.
* ``plan_window_pushpull``: PPoP-style: push the lowest-rate types, pull the rest by window
  only (no predicates); the number of pushed types is optimised, so it degenerates to
  push-all when pulling does not pay off.

Best pull sets are cached per ``(𝒜(s), ρ, sink group)`` and plan costs per grouping (§6.2).
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from cercore.network.cost import (
    check_mode,
    local_credit,
    push_all_cost,
    step_cost,
)
from cercore.network.errors import NetworkError
from cercore.network.network import Network
from cercore.network.plan import Plan, Step
from cercore.network.query import NetQuery
from cercore.network.selectivity import Selectivities

PLANNERS = ("exact", "sampling", "greedy", "push_all", "window")
MAX_EXACT_TYPES = 8


@dataclass
class PlanResult:
    """A planner's answer: the plan, its cost in ``mode``, the search time and how many
    pull-set evaluations the search made."""

    plan: Plan
    cost: float
    mode: str
    planner: str
    seconds: float = 0.0
    evaluations: int = 0
    per_sink: dict = field(default_factory=dict)  # best cost per sink group representative


class _Search:
    """Shared state of one planning run: cost evaluation with pull-set and plan caches."""

    def __init__(self, query: NetQuery, network: Network, sel: Selectivities, mode: str,
                 max_pull_set: int | None = None, predicate_pull: bool = True) -> None:
        network.require_types(query.types)
        self.query, self.network, self.sel = query, network, sel
        self.mode = check_mode(mode)
        self.max_pull_set = max_pull_set
        self.predicate_pull = predicate_pull
        self.pull_cache: dict = {}
        self.tables: dict = {}
        self.plan_cache: dict = {}
        self.evaluations = 0

    def sink_groups(self) -> list[Hashable]:
        """One representative node per distinct set of local query types."""
        seen: dict[frozenset[str], Hashable] = {}
        for n in self.network.nodes:
            key = self.network.local_types(n) & set(self.query.types)
            seen.setdefault(key, n)
        return list(seen.values())

    def best_pull_set(self, acquire: frozenset[str], avail: frozenset[str], sink: Hashable
                      ) -> tuple[frozenset[str], float]:
        key = (avail, acquire, sink)
        hit = self.pull_cache.get(key)
        if hit is not None:
            return hit
        psis, req, resp, order = self._table(acquire, avail)
        # the sink only scales the two parts: destinations of requests, senders of responses
        if self.mode == "literal":
            senders = [len(self.network.sources_of(t)) for t in order]
            dests = sum(senders)
        else:
            senders = [len(self.network.sources_of(t) - {sink}) for t in order]
            dests = sum(senders)
        weights = np.array([s * self.network.rates.get(t, 0.0) for s, t in zip(senders, order)])
        costs = dests * req + resp @ weights
        self.evaluations += len(psis)
        i = int(np.argmin(costs))  # first minimum: the smallest pull set among equals
        self.pull_cache[key] = (psis[i], float(costs[i]))
        return self.pull_cache[key]

    def _table(self, acquire: frozenset[str], avail: frozenset[str]):
        """Sink-independent parts of c((Ψ, ρ)) for every candidate Ψ ⊆ 𝒜: the request rate
        Σ R(ψ)σ(ψ, 𝒜) and the response selectivity of each ρ type (cached)."""
        key = (avail, acquire)
        hit = self.tables.get(key)
        if hit is not None:
            return hit
        order = sorted(acquire)
        limit = len(avail) if self.max_pull_set is None else min(self.max_pull_set, len(avail))
        weight = {u: self.network.global_rate(u) * self.sel.sigma(u, avail) for u in avail}
        psis, req, resp = [], [], []
        for size in range(limit + 1):
            for psi in itertools.combinations(sorted(avail), size):
                ps = frozenset(psi)
                psis.append(ps)
                req.append(sum(weight[u] for u in psi))
                if not ps:
                    resp.append([1.0] * len(order))
                elif self.predicate_pull:
                    resp.append([self.sel.sigma(t, ps | {t}) for t in order])
                else:
                    resp.append([self.sel.window_sigma(t, ps) for t in order])
        self.tables[key] = (psis, np.array(req), np.array(resp).reshape(len(psis), len(order)),
                            order)
        return self.tables[key]

    def plan_for(self, groups: Iterable[frozenset[str]], sink: Hashable
                 ) -> tuple[tuple[Step, ...], float]:
        """The best plan with these acquisition groups in this order (cached)."""
        groups = tuple(groups)
        key = (groups, sink)
        hit = self.plan_cache.get(key)
        if hit is not None:
            return hit
        steps, total, avail = [], 0.0, frozenset()
        for g in groups:
            psi, c = self.best_pull_set(g, avail, sink)
            steps.append(Step(psi, g))
            total += c
            avail |= g
        total -= local_credit(self.query.types, self.network, sink, self.mode)
        self.plan_cache[key] = (tuple(steps), total)
        return self.plan_cache[key]

    def result(self, name: str, best: dict[Hashable, tuple[tuple[Step, ...], float]],
               t0: float) -> PlanResult:
        sink = min(best, key=lambda n: (best[n][1], self.network.nodes.index(n)))
        steps, cost = best[sink]
        return PlanResult(Plan(sink, steps, self.predicate_pull), cost, self.mode, name,
                          time.perf_counter() - t0, self.evaluations,
                          {n: c for n, (_, c) in best.items()})


def weak_orderings(items: tuple[str, ...]) -> Iterator[tuple[frozenset[str], ...]]:
    """Every ordered partition of ``items`` into non-empty blocks."""
    if not items:
        yield ()
        return
    first, rest = items[0], items[1:]
    for sub in weak_orderings(rest):
        # put ``first`` into an existing block, or into a new block at any position
        for i in range(len(sub)):
            yield sub[:i] + (sub[i] | {first},) + sub[i + 1:]
        for i in range(len(sub) + 1):
            yield sub[:i] + (frozenset((first,)),) + sub[i:]


def compositions(order: tuple[str, ...]) -> Iterator[tuple[frozenset[str], ...]]:
    """All 2^{n-1} ways to cut ``order`` into consecutive groups."""
    n = len(order)
    for cuts in itertools.product((False, True), repeat=max(n - 1, 0)):
        groups, cur = [], [order[0]]
        for t, cut in zip(order[1:], cuts):
            if cut:
                groups.append(frozenset(cur))
                cur = [t]
            else:
                cur.append(t)
        groups.append(frozenset(cur))
        yield tuple(groups)


def plan_exact(query: NetQuery, network: Network, sel: Selectivities,
               mode: str = "sink_aware", max_types: int = MAX_EXACT_TYPES) -> PlanResult:
    """The optimal plan over all weak orderings and pull sets (and sinks)."""
    n = len(query.types)
    if n > max_types:
        raise NetworkError(f"exact search over {n} types would visit "
                           f"{ordered_bell(n):,} orderings; it is capped at {max_types} types "
                           "(use the sampling planner)")
    t0 = time.perf_counter()
    s = _Search(query, network, sel, mode)
    best = {}
    for sink in s.sink_groups():
        best[sink] = min((s.plan_for(groups, sink) for groups in
                          weak_orderings(tuple(sorted(query.types)))), key=lambda r: r[1])
    return s.result("exact", best, t0)


def plan_sampling(query: NetQuery, network: Network, sel: Selectivities,
                  mode: str = "sink_aware", samples: int = 1024, top_k: int = 10,
                  seed: int | None = 0) -> PlanResult:
    """§6.1: sampled single-step orderings, top-k, then every merge of adjacent steps."""
    if samples < 1 or top_k < 1:
        raise NetworkError("sampling needs samples >= 1 and top_k >= 1")
    t0 = time.perf_counter()
    s = _Search(query, network, sel, mode)
    rng = random.Random(seed)
    types = sorted(query.types)
    orders = [tuple(rng.sample(types, len(types))) for _ in range(samples)]
    best = {}
    for sink in s.sink_groups():
        scored = {}
        for order in orders:
            if order not in scored:
                scored[order] = s.plan_for((frozenset((t,)) for t in order), sink)[1]
        top = sorted(scored, key=lambda o: (scored[o], o))[:top_k]
        best[sink] = min((s.plan_for(groups, sink) for order in top
                          for groups in compositions(order)), key=lambda r: r[1])
    return s.result("sampling", best, t0)


def plan_greedy(query: NetQuery, network: Network, sel: Selectivities,
                mode: str = "sink_aware", max_pull_set: int = 3) -> PlanResult:
    """Ascending global rate; first type pushed; pull sets of at most ``max_pull_set``."""
    t0 = time.perf_counter()
    s = _Search(query, network, sel, mode, max_pull_set=max_pull_set)
    order = sorted(query.types, key=lambda t: (network.global_rate(t), t))
    best = {sink: s.plan_for((frozenset((t,)) for t in order), sink)
            for sink in s.sink_groups()}
    return s.result("greedy", best, t0)


def plan_push_all(query: NetQuery, network: Network, sel: Selectivities,
                  mode: str = "sink_aware") -> PlanResult:
    """Every type pushed to the best sink."""
    t0 = time.perf_counter()
    s = _Search(query, network, sel, mode)
    best = {sink: s.plan_for((frozenset(query.types),), sink) for sink in s.sink_groups()}
    return s.result("push_all", best, t0)


def plan_window_pushpull(query: NetQuery, network: Network, sel: Selectivities,
                         mode: str = "sink_aware") -> PlanResult:
    """Time-window-only push-pull: push the ``i`` lowest-rate types, pull all others with
    them by window (no predicate filtering); ``i`` and the sink optimised."""
    t0 = time.perf_counter()
    s = _Search(query, network, sel, mode, predicate_pull=False)
    order = sorted(query.types, key=lambda t: (network.global_rate(t), t))
    best = {}
    for sink in s.sink_groups():
        options = []
        for i in range(1, len(order) + 1):
            pushed, pulled = frozenset(order[:i]), frozenset(order[i:])
            steps = [Step((), pushed)]
            cost = step_cost(frozenset(), pushed, frozenset(), network, sel, sink, mode).total
            if pulled:
                steps.append(Step(pushed, pulled))
                cost += step_cost(pushed, pulled, pushed, network, sel, sink, mode,
                                  predicate_pull=False).total
            cost -= local_credit(query.types, network, sink, mode)
            options.append((tuple(steps), cost))
        best[sink] = min(options, key=lambda r: r[1])
    return s.result("window", best, t0)


def make_plan(planner: str, query: NetQuery, network: Network, sel: Selectivities,
              mode: str = "sink_aware", **options) -> PlanResult:
    """Run the planner named ``planner`` (one of PLANNERS)."""
    fns = {"exact": plan_exact, "sampling": plan_sampling, "greedy": plan_greedy,
           "push_all": plan_push_all, "window": plan_window_pushpull}
    if planner not in fns:
        raise NetworkError(f"unknown planner {planner!r}; use one of {', '.join(PLANNERS)}")
    return fns[planner](query, network, sel, mode, **options)


def transmission_ratio(result: PlanResult, query: NetQuery, network: Network) -> float:
    """Plan cost / cost of pushing everything to the best sink."""
    base = push_all_cost(query, network)
    return result.cost / base if base else 0.0


def ordered_bell(n: int) -> int:
    """Number of weak orderings of n items (Fubini numbers)."""
    a = [1]
    for m in range(1, n + 1):
        a.append(sum(_binom(m, k) * a[m - k] for k in range(1, m + 1)))
    return a[n]


def _binom(n: int, k: int) -> int:
    from math import comb
    return comb(n, k)
