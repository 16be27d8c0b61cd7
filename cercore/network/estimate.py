"""Rates and selectivities from historical traces (the inputs of the cost model).

* rates: per type, the sources are the nodes whose traces hold the type; the local rate is the
  mean number of events per source per time unit over the trace's time span;
* pairwise σ_{a,b}: among pairs of an a event and a b event within one window of each other,
  the fraction that satisfies every predicate over {a, b};
* σ(ε, X) for every X ⊆ 𝓔(q) with |X| ≥ 2: the fraction of distinct ε events occurring in at
  least one partial match over X — found by the cercore engine over the global trace (2^l
  runs for l types; ``max_size`` bounds |X|).

:mod:`cercore.spark.network.plans` computes the same on Spark.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Hashable, Sequence

from cercore.network.evaluate import QueryEvaluator, global_trace, passes_filters, schema_for
from cercore.network.network import Network
from cercore.network.query import NetEvent, NetQuery, pair_test
from cercore.network.selectivity import Selectivities


def estimate_network(query: NetQuery, traces: dict[Hashable, Sequence[NetEvent]],
                     duration: float | None = None) -> Network:
    """The network the traces imply: sources and mean local rates of the query's types."""
    counts: dict[str, dict[Hashable, int]] = defaultdict(lambda: defaultdict(int))
    times = []
    for n, tr in traces.items():
        for e in tr:
            if e.type in query.types:
                counts[e.type][n] += 1
                times.append(e.t)
    span = duration if duration is not None else (max(times) - min(times) + 1 if times else 1)
    sources = {t: list(counts[t]) for t in query.types if counts[t]}
    rates = {t: sum(counts[t].values()) / len(counts[t]) / span for t in sources}
    return Network(tuple(traces), sources, rates)


def estimate_pairwise(query: NetQuery, events: Sequence[NetEvent]) -> dict[frozenset, float]:
    """σ_{a,b} for every pair of types the predicates relate."""
    by_type: dict[str, list[NetEvent]] = defaultdict(list)
    for e in events:
        by_type[e.type].append(e)
    out = {}
    for pair in sorted({p.pair for p in query.predicates}, key=sorted):
        a, b = sorted(pair)
        holds = pair_test(p for p in query.predicates if p.pair == pair)
        total = hits = 0
        for x, y in itertools.product(by_type[a], by_type[b]):
            if abs(x.t - y.t) <= query.window:
                total += 1
                hits += holds(x, y)
        out[pair] = hits / total if total else 1.0
    return out


def estimate_projection(query: NetQuery, events: Sequence[NetEvent], schema=None,
                        max_size: int | None = None, backend: str = "auto"
                        ) -> dict[tuple[str, frozenset], float]:
    """σ(ε, X) for every X (2 ≤ |X| ≤ ``max_size``) from partial matches over X."""
    events = global_trace(events)
    schema = schema or schema_for(query, events)
    totals = defaultdict(int)
    for e in events:
        totals[e.type] += 1
    types = sorted(query.types)
    out = {}
    for size in range(2, min(len(types), max_size or len(types)) + 1):
        for xs in map(frozenset, itertools.combinations(types, size)):
            ev = QueryEvaluator(query, schema, xs, backend=backend)
            seen = defaultdict(set)
            for m in ev.feed([e for e in events if e.type in xs]):
                for e in m:
                    seen[e.type].add(e.uid)
            for t in xs:
                out[(t, xs)] = len(seen[t]) / totals[t] if totals[t] else 1.0
    return out


def estimate_catalog(query: NetQuery, traces: dict[Hashable, Sequence[NetEvent]],
                     max_size: int | None = None, backend: str = "auto"
                     ) -> tuple[Network, Selectivities]:
    """Network and selectivity catalog estimated from local traces (type filters applied)."""
    events = global_trace(traces)
    schema = schema_for(query, events)
    kept = {n: passes_filters(query, sorted(tr, key=lambda e: e.key), schema, backend)
            for n, tr in traces.items()}
    network = estimate_network(query, kept)
    flat = global_trace(kept)
    sel = Selectivities.for_query(query, network, estimate_pairwise(query, flat),
                                  estimate_projection(query, flat, schema, max_size, backend))
    return network, sel
