"""Cost model (§5.4, both modes) and planners (§6) on the note's worked examples (§6 of
seed-004-prepp.md), the Pull Acquisition reduction (Thm 1), and random instances against a
brute-force enumeration of every correct plan."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from network_fixtures import FIG1_NETWORK, FIG1_QUERY, fig1_selectivities

from cercore.network import (
    MODES,
    NetQuery,
    Network,
    NetworkError,
    Plan,
    Selectivities,
    Step,
    and_,
    cost_report,
    make_plan,
    plan_cost,
    plan_exact,
    plan_greedy,
    plan_push_all,
    plan_sampling,
    plan_window_pushpull,
    push_all_cost,
)
from cercore.network.generators import (
    generate_network,
    generate_query,
    generate_selectivities,
)
from cercore.network.planners import _Search, compositions, ordered_bell, weak_orderings

SEL = fig1_selectivities()
P1 = Plan(1, (Step((), "ABC"),))
P3 = Plan(1, (Step((), "A"), Step("A", "B"), Step("B", "C")))


def cost(plan, mode="sink_aware"):
    return plan_cost(plan, FIG1_QUERY, FIG1_NETWORK, SEL, mode)


# ---- note §6, examples 1-3 and 6-7 --------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_push_all_is_4000_per_minute(mode):
    assert cost(P1, mode) == pytest.approx(4000)
    assert push_all_cost(FIG1_QUERY, FIG1_NETWORK, 1) == pytest.approx(4000)


@pytest.mark.parametrize("mode", MODES)
def test_window_push_pull_is_2002_per_minute(mode):
    p2 = Plan(1, (Step((), "A"), Step("A", "BC")), predicate_pull=False)
    assert cost(p2, mode) == pytest.approx(2002)
    r = plan_window_pushpull(FIG1_QUERY, FIG1_NETWORK, SEL, mode)
    assert r.per_sink[1] == pytest.approx(2002)


def test_prepp_p3_is_503_per_minute_step_by_step():
    lit = cost_report(P3, FIG1_QUERY, FIG1_NETWORK, SEL, "literal")
    assert [s.requests for s in lit.steps] == pytest.approx([0, 1, 1])
    assert [s.responses for s in lit.steps] == pytest.approx([1, 1, 500])
    assert lit.local_credit == 1 and lit.total == pytest.approx(503)
    aware = cost_report(P3, FIG1_QUERY, FIG1_NETWORK, SEL, "sink_aware")
    assert [s.total for s in aware.steps] == pytest.approx([0, 2, 501])
    assert aware.local_credit == 0 and aware.total == pytest.approx(503)


@pytest.mark.parametrize("steps, expected", [
    ((Step((), "A"), Step("A", "B"), Step("A", "C")), 1003),
    ((Step((), "A"), Step("A", "B"), Step("AB", "C")), 504),
    ((Step((), "A"), Step("A", "BC")), 1003),
])
@pytest.mark.parametrize("mode", MODES)
def test_alternative_plans_at_node_1(steps, expected, mode):
    assert cost(Plan(1, steps), mode) == pytest.approx(expected)


def test_sink_placement_pitfall():
    lit = plan_exact(FIG1_QUERY, FIG1_NETWORK, SEL, "literal")
    assert lit.per_sink == pytest.approx({1: 503, 2: -1496, 3: -1496})
    assert lit.cost == pytest.approx(-1496)  # impossible: fewer than zero messages
    aware = plan_exact(FIG1_QUERY, FIG1_NETWORK, SEL, "sink_aware")
    assert aware.per_sink == pytest.approx({1: 503, 2: 502, 3: 3})
    assert aware.plan.sink == 3 and aware.cost == pytest.approx(3)
    node2 = Plan(2, (Step((), "A"), Step((), "B"), Step("B", "C")))
    assert cost(node2) == pytest.approx(502)
    node3 = Plan(3, (Step((), "A"), Step("A", "B"), Step((), "C")))
    assert cost(node3) == pytest.approx(3)


def test_exact_and_sampling_return_p3_at_node_1():
    net1 = Network((1, 2, 3, 4), {"A": [1], "B": [2], "C": [3]}, {"A": 1, "B": 2000, "C": 2000})
    sel = Selectivities(SEL.rates_per_window, SEL.pairwise, SEL.projection)
    exact = plan_exact(FIG1_QUERY, net1, sel)
    assert exact.per_sink[1] == pytest.approx(503)
    s = _Search(FIG1_QUERY, FIG1_NETWORK, SEL, "sink_aware")
    best = min((s.plan_for(g, 1) for g in weak_orderings(("A", "B", "C"))), key=lambda r: r[1])
    assert best == (P3.steps, pytest.approx(503))
    small = plan_sampling(FIG1_QUERY, FIG1_NETWORK, SEL, samples=3, top_k=2, seed=1)
    assert small.per_sink[1] == pytest.approx(503)


def test_sink_aware_equals_literal_when_sink_types_are_pushed():
    for sink in (1, 2, 3):
        local = FIG1_NETWORK.local_types(sink)
        rest = tuple(t for t in "ABC" if t not in local)
        plan = Plan(sink, (Step((), local), Step(local, rest)))
        assert cost(plan, "literal") == pytest.approx(cost(plan, "sink_aware"))


# ---- Thm 1: the Pull Acquisition reduction (note example 10) -----------------------------
def _vertex_cover_instance(edges, k):
    verts = sorted({v for e in edges for v in e})
    q = NetQuery(and_(*verts, "Z"), 1)
    net = Network(("sink", *verts, "z"), {**{v: [v] for v in verts}, "Z": ["z"]},
                  {**{v: 1 for v in verts}, "Z": 4})
    proj = {}
    avail = frozenset(verts)
    for v in verts:
        proj[(v, avail)] = 1.0
    for size in range(1, len(verts) + 1):
        for psi in itertools.combinations(verts, size):
            cover = all(set(e) & set(psi) for e in edges) and len(psi) <= k
            proj[("Z", (*psi, "Z"))] = 1 / 5 if cover else 1.0
    sel = Selectivities.for_query(q, net, {}, proj)
    return q, net, sel, avail


def _pull_costs(edges, k):
    q, net, sel, avail = _vertex_cover_instance(edges, k)
    s = _Search(q, net, sel, "sink_aware")
    best = s.best_pull_set(frozenset("Z"), avail, "sink")
    from cercore.network.cost import step_cost
    every = {frozenset(p): step_cost(frozenset(p), "Z", avail, net, sel, "sink",
                                     "sink_aware").total
             for n in range(len(avail) + 1) for p in itertools.combinations(sorted(avail), n)}
    return best, every


def test_pull_acquisition_path_k1():
    best, every = _pull_costs([("a", "b"), ("b", "c")], 1)
    assert best == (frozenset("b"), pytest.approx(1.8))
    assert every[frozenset("a")] == pytest.approx(5) and every[frozenset()] == pytest.approx(4)
    assert [p for p, c in every.items() if c < 4] == [frozenset("b")]


def test_pull_acquisition_triangle():
    tri = [("a", "b"), ("b", "c"), ("a", "c")]
    best, every = _pull_costs(tri, 1)
    assert best == (frozenset(), pytest.approx(4))        # no solution: nothing beats pushing
    assert not [p for p, c in every.items() if c < 4]
    _, every2 = _pull_costs(tri, 2)
    assert sorted(sorted(p) for p, c in every2.items() if c < 4) == [["a", "b"], ["a", "c"],
                                                                    ["b", "c"]]
    assert all(every2[frozenset(p)] == pytest.approx(2.8) for p in ("ab", "ac", "bc"))


# ---- search-space counts (note example 9) --------------------------------------------------
def test_weak_ordering_counts():
    expected = [1, 3, 13, 75, 541, 4683, 47293, 545835, 7087261, 102247563]
    assert [ordered_bell(n) for n in range(1, 11)] == expected
    for n in range(1, 6):
        orders = list(weak_orderings(tuple("ABCDE"[:n])))
        assert len(orders) == expected[n - 1] == len(set(orders))
    f = frozenset
    assert set(compositions(("C", "B", "A"))) == {  # Example 8: the ordering and 3 variants
        (f("C"), f("B"), f("A")), (f("CB"), f("A")), (f("C"), f("BA")), (f("CBA"),)}
    assert len(list(compositions(tuple("ABCDE")))) == 16


def test_exact_refuses_large_queries():
    net = generate_network(9, 3, seed=1)
    q, pw = generate_query(9, seed=1)
    with pytest.raises(NetworkError, match="capped at 8 types"):
        plan_exact(q, net, Selectivities.for_query(q, net, pw))


def test_unknown_planner_and_mode():
    with pytest.raises(NetworkError, match="unknown planner"):
        make_plan("magic", FIG1_QUERY, FIG1_NETWORK, SEL)
    with pytest.raises(NetworkError, match="cost mode"):
        plan_cost(P3, FIG1_QUERY, FIG1_NETWORK, SEL, "cheap")


# ---- random instances vs brute force ------------------------------------------------------
def all_plans(types, avail=frozenset()):
    """Every correct step sequence (independent of the planners' weak orderings)."""
    rest = sorted(set(types) - avail)
    if not rest:
        yield ()
        return
    for n in range(1, len(rest) + 1):
        for rho in itertools.combinations(rest, n):
            for m in range(len(avail) + 1):
                for psi in itertools.combinations(sorted(avail), m):
                    for tail in all_plans(types, avail | set(rho)):
                        yield (Step(psi, rho),) + tail


def instance(seed, n_types, n_nodes, ratio, skew):
    net = generate_network(n_types, n_nodes, ratio, skew, seed)
    q, pw = generate_query(n_types, 0.01, 1e-3, seed)
    return q, net, generate_selectivities(q, net, pw, seed)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), n_types=st.integers(2, 3), n_nodes=st.integers(1, 4),
       ratio=st.sampled_from([0.3, 0.6, 1.0]), skew=st.sampled_from([1.1, 1.5, 2.0]),
       mode=st.sampled_from(MODES))
def test_exact_is_optimal_over_every_correct_plan(seed, n_types, n_nodes, ratio, skew, mode):
    q, net, sel = instance(seed, n_types, n_nodes, ratio, skew)
    best = min(plan_cost(Plan(n, steps), q, net, sel, mode)
               for n in net.nodes for steps in all_plans(q.types))
    exact = plan_exact(q, net, sel, mode)
    assert exact.cost == pytest.approx(best, rel=1e-9, abs=1e-9)
    assert plan_cost(exact.plan, q, net, sel, mode) == pytest.approx(exact.cost)
    for planner in (plan_sampling, plan_greedy, plan_push_all, plan_window_pushpull):
        r = planner(q, net, sel, mode)
        r.plan.validate(q, net)
        assert plan_cost(r.plan, q, net, sel, mode) == pytest.approx(r.cost)
        assert r.cost >= exact.cost - 1e-9


SAMPLING_FACTOR = 1.5  # stated bound on small instances (measured worst case ≈ 1.0)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), n_types=st.integers(3, 5),
       skew=st.sampled_from([1.1, 1.3, 2.0]))
def test_sampling_within_stated_factor_of_exact(seed, n_types, skew):
    q, net, sel = instance(seed, n_types, 6, 0.5, skew)
    exact = plan_exact(q, net, sel)
    sampled = plan_sampling(q, net, sel, seed=seed)
    assert exact.cost - 1e-9 <= sampled.cost <= SAMPLING_FACTOR * exact.cost + 1e-9
    assert sampled.cost <= plan_greedy(q, net, sel).cost + 1e-9 or n_types > 3


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), n_types=st.integers(2, 4))
def test_sink_aware_costs_are_never_negative_and_bounded_by_push_all(seed, n_types):
    q, net, sel = instance(seed, n_types, 5, 0.5, 1.3)
    r = plan_sampling(q, net, sel, samples=16, top_k=3, seed=seed)
    assert 0 <= r.cost <= push_all_cost(q, net) + 1e-9
    assert plan_push_all(q, net, sel).cost == pytest.approx(push_all_cost(q, net))


def test_sampling_is_seeded():
    q, net, sel = instance(7, 6, 10, 0.5, 1.3)
    a = plan_sampling(q, net, sel, samples=8, top_k=2, seed=3)
    b = plan_sampling(q, net, sel, samples=8, top_k=2, seed=3)
    assert (a.plan, a.cost) == (b.plan, b.cost)
