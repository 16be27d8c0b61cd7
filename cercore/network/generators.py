"""The paper's generators (§7.1) plus trace synthesis (note §5, "ours").

* :func:`generate_network`: ``n_nodes`` nodes; every node produces each type with probability
  ``event_node_ratio`` (each type gets at least one source); local rates drawn from a Zipf
  distribution with exponent ``skew`` (1.1 = most skewed, 2.0 = nearly equal and low).
* :func:`generate_query`: a nesting depth in [1, l−1], SEQ and AND alternating per level, the
  ``l`` types distributed randomly over the operators; pairwise selectivities uniform in
  [``min_sel``, 1e−2] (for every pair, as the paper's generator does).
* :func:`generate_selectivities`: per-type projection selectivities σ(ε, X) following the PrePP
  artifact's rules: Π_{ε∈X} σ(ε, X) = Π_{pairs⊆X} σ_pair (up to the caps), σ(ε, X) ≤ σ(ε, Y)
  for every (|X|−1)-subset Y ∋ ε, σ(ε, {ε}) = 1.
* :func:`generate_traces`: per node and type a Poisson process of the type's local rate over
  integer times ``[0, duration)``; each event gets ``id`` (uniform in ``[0, id_domain)``, so
  ``x.id = y.id`` has selectivity ≈ 1/id_domain) and ``v`` (uniform in [0, 1)).
* :func:`trace_predicates`: equality on ``id`` along a random spanning tree of the types and
  optional ``v`` comparisons — predicates the traces can satisfy.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence

from cercore.network.errors import NetworkError
from cercore.network.network import Network
from cercore.network.query import Leaf, NetEvent, NetQuery, Node, Op, Predicate
from cercore.network.selectivity import Selectivities

MAX_RATE = 1_000_000


def type_names(n: int) -> list[str]:
    """A, B, ..., Z, T26, T27, ..."""
    return [chr(ord("A") + i) if i < 26 else f"T{i}" for i in range(n)]


def zipf(rng: random.Random, a: float, cap: int = MAX_RATE) -> int:
    """One draw of a Zipf(a) variable (a > 1), capped (rejection sampling, Devroye)."""
    if a <= 1:
        raise NetworkError("the Zipf exponent (event skew) must be > 1")
    b = 2 ** (a - 1)
    while True:
        u, v = 1 - rng.random(), rng.random()
        x = math.floor(u ** (-1 / (a - 1)))
        t = (1 + 1 / x) ** (a - 1)
        if x <= cap and v * x * (t - 1) / (b - 1) <= t / b:
            return x


def generate_network(n_types: int, n_nodes: int = 20, event_node_ratio: float = 0.5,
                     skew: float = 1.3, seed: int | None = 0) -> Network:
    """A random network as in §7.1 (defaults: 20 nodes, ratio 0.5, skew 1.3)."""
    if not 0 < event_node_ratio <= 1:
        raise NetworkError("event_node_ratio must be in (0, 1]")
    if n_nodes < 1 or n_types < 1:
        raise NetworkError("need at least one node and one type")
    rng = random.Random(seed)
    nodes = tuple(range(n_nodes))
    sources, rates = {}, {}
    for t in type_names(n_types):
        srcs = [n for n in nodes if rng.random() < event_node_ratio]
        sources[t] = srcs or [rng.choice(nodes)]
        rates[t] = float(zipf(rng, skew))
    return Network(nodes, sources, rates)


def generate_query(n_types: int, window: float = 1.0, min_sel: float = 1e-4,
                   seed: int | None = 0) -> tuple[NetQuery, dict[frozenset[str], float]]:
    """A random SEQ/AND query over the first ``n_types`` types and its pairwise
    selectivities."""
    if n_types < 2:
        raise NetworkError("a generated query needs at least two types")
    if not 0 < min_sel <= 1e-2:
        raise NetworkError("min_sel must be in (0, 1e-2]")
    rng = random.Random(seed)
    types = type_names(n_types)
    rng.shuffle(types)
    depth = rng.randint(1, n_types - 1)
    root = _tree(types, depth, rng.choice(("SEQ", "AND")), rng)
    pairs = {frozenset(p): rng.uniform(min_sel, 1e-2) for p in itertools.combinations(types, 2)}
    return NetQuery(root, window), pairs


def _tree(types: list[str], depth: int, kind: str, rng: random.Random) -> Node:
    """``types`` under an operator of ``kind``; ``depth`` more levels below if there is room."""
    if len(types) == 1:
        return Leaf(types[0])
    if depth <= 1 or len(types) == 2:
        return Op(kind, tuple(Leaf(t) for t in types))
    # keep 1..len-1 types at this level; the rest go one level down as a single child
    inner_n = rng.randint(2, len(types) - 1) if len(types) > 2 else 0
    inner, outer = types[:inner_n], types[inner_n:]
    child = _tree(inner, depth - 1, "AND" if kind == "SEQ" else "SEQ", rng)
    kids: list[Node] = [Leaf(t) for t in outer]
    kids.insert(rng.randint(0, len(kids)), child)
    return Op(kind, tuple(kids))


def generate_selectivities(query: NetQuery, network: Network,
                           pairwise: dict[frozenset[str], float], seed: int | None = 0
                           ) -> Selectivities:
    """A catalog with σ(ε, X) for every X ⊆ 𝓔(q), |X| ≥ 2, by the artifact's rules."""
    rng = random.Random(seed)
    types = sorted(query.types)
    proj: dict[tuple[str, frozenset[str]], float] = {}
    for size in range(2, len(types) + 1):
        for xs in map(frozenset, itertools.combinations(types, size)):
            target = math.log(math.prod(pairwise.get(frozenset(p), 1.0)
                                        for p in itertools.combinations(sorted(xs), 2)))
            members = sorted(xs)  # sorted: draws must not depend on set iteration order
            caps = {t: min((proj[(t, xs - {u})] for u in members if u != t and size > 2),
                           default=1.0) for t in members}
            weights = {t: rng.random() + 1e-9 for t in members}
            free, fixed = set(members), {}
            while free:  # split log(target) by weight; clip at the caps and re-split the rest
                rest = target - sum(math.log(fixed[t]) for t in sorted(fixed))
                total = sum(weights[t] for t in sorted(free))
                share = {t: math.exp(min(0.0, rest * weights[t] / total)) for t in sorted(free)}
                over = {t for t in free if share[t] > caps[t]}
                if not over:
                    fixed.update(share)
                    break
                for t in over:
                    fixed[t] = caps[t]
                free -= over
            for t in xs:
                proj[(t, xs)] = max(0.0, min(1.0, fixed[t]))
    return Selectivities.for_query(query, network, pairwise, {(t, xs): v for (t, xs), v
                                                              in proj.items()})


def generate_traces(network: Network, types: Sequence[str], duration: int, seed: int | None = 0,
                    id_domain: int = 10) -> dict:
    """Local traces: node → time-ordered events (uids unique network-wide)."""
    rng = random.Random(seed)
    traces: dict = {n: [] for n in network.nodes}
    uid = 0
    for t in sorted(types):
        r = network.rates.get(t, 0.0)
        for n in sorted(network.sources_of(t), key=str):
            time = 0.0
            while r > 0:
                time += rng.expovariate(r)
                if time >= duration:
                    break
                traces[n].append(NetEvent(uid, t, int(time), n,
                                          {"id": rng.randrange(id_domain), "v": rng.random()}))
                uid += 1
    for n in traces:
        traces[n].sort(key=lambda e: e.key)
    return traces


def trace_predicates(types: Sequence[str], seed: int | None = 0, inequalities: int = 0
                     ) -> tuple[Predicate, ...]:
    """``id`` equality along a random spanning tree of ``types`` plus ``inequalities``
    random ``v`` comparisons between distinct type pairs."""
    rng = random.Random(seed)
    order = list(types)
    rng.shuffle(order)
    preds = [Predicate(order[i], "id", "==", rng.choice(order[:i]), "id")
             for i in range(1, len(order))]
    pairs = list(itertools.combinations(sorted(types), 2))
    for a, b in rng.sample(pairs, min(inequalities, len(pairs))):
        preds.append(Predicate(a, "v", rng.choice(("<", ">")), b, "v"))
    return tuple(preds)
