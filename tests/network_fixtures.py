"""Shared inputs of the network (PrePP) tests: the paper's Fig. 1 network with the note's
selectivities, and a brute-force matcher written straight from the query semantics."""

from __future__ import annotations

import itertools

from cercore.network import NetQuery, Network, Predicate, Selectivities, seq

FIG1_NETWORK = Network((1, 2, 3), {"A": [1], "B": [2], "C": [3]},
                       {"A": 1, "B": 2000, "C": 2000})  # per minute
FIG1_QUERY = NetQuery(seq("C", "B", "A"), 0.5,  # 30 s
                      (Predicate("A", "x", "==", "B", "x"), Predicate("B", "y", "<", "C", "y")))
# note §6 examples 3 and 6; the entries the note leaves open are the least selective values
# consistent with the generator rules (σ(ε, X) ≤ σ(ε, Y) for Y ⊂ X)
FIG1_PROJECTION = {
    ("A", ("A", "B")): 1, ("B", ("A", "B")): 1 / 2000,
    ("A", ("A", "C")): 1, ("C", ("A", "C")): 0.5,
    ("B", ("B", "C")): 1, ("C", ("B", "C")): 0.25,
    ("A", ("A", "B", "C")): 1, ("B", ("A", "B", "C")): 1 / 2000, ("C", ("A", "B", "C")): 0.25,
}


def fig1_selectivities() -> Selectivities:
    return Selectivities.for_query(FIG1_QUERY, FIG1_NETWORK,
                                   {("A", "B"): 0.001, ("B", "C"): 0.5}, FIG1_PROJECTION)


def brute_force_matches(query: NetQuery, events, types=None) -> set[frozenset[int]]:
    """Every set of events, one per type of a branch (restricted to ``types``), that satisfies
    the definition: SEQ order by (t, uid), all pairwise predicates, span ≤ window."""
    types = set(query.types if types is None else types)
    out = set()
    for b in query.branches:
        shape = sorted(b.types & types)
        if not shape:
            continue
        pools = [[e for e in events if e.type == t] for t in shape]
        for combo in itertools.product(*pools):
            if max(e.t for e in combo) - min(e.t for e in combo) > query.window:
                continue
            if any((x.type, y.type) in b.before and not (x.t, x.uid) < (y.t, y.uid)
                   for x in combo for y in combo):
                continue
            if query.predicates_hold(combo):
                out.add(frozenset(e.uid for e in combo))
    return out
