"""The discrete-event simulator: on random networks, queries (SEQ/AND/OR, predicates,
filters), traces and correct plans, the matches detected at the sink equal the centralised
evaluation with the cercore engine and a brute-force evaluation from the definitions."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from network_fixtures import brute_force_matches

from cercore.network import (
    NetEvent,
    NetQuery,
    Network,
    NetworkError,
    Plan,
    PlanError,
    Predicate,
    Step,
    seq,
)
from cercore.network.evaluate import centralised_matches
from cercore.network.generators import generate_traces, trace_predicates
from cercore.network.planners import plan_sampling
from cercore.network.query import Leaf, Op
from cercore.network.selectivity import Selectivities
from cercore.network.simulator import simulate

TYPES = "ABCD"


@st.composite
def trees(draw, types):
    if len(types) == 1:
        return Leaf(types[0])
    kind = draw(st.sampled_from(["SEQ", "AND", "OR"]))
    n = draw(st.integers(2, len(types)))
    cuts = sorted(draw(st.lists(st.integers(1, len(types) - 1), min_size=n - 1,
                                max_size=n - 1, unique=True)))
    parts = [types[a:b] for a, b in zip([0, *cuts], [*cuts, len(types)])]
    return Op(kind, tuple(draw(trees(p)) for p in parts))


@st.composite
def scenarios(draw):
    n_types = draw(st.integers(2, 4))
    types = list(draw(st.permutations(TYPES[:n_types])))
    root = draw(trees(types))
    pairs = list(itertools.combinations(sorted(types), 2))
    preds = tuple(Predicate(a, attr, op, b, attr)
                  for a, b in draw(st.lists(st.sampled_from(pairs), unique=True, max_size=3))
                  for attr, op in [draw(st.sampled_from([("id", "=="), ("v", "<"),
                                                         ("v", ">="), ("id", "!=")]))])
    filters = {t: "v > 0" for t in draw(st.lists(st.sampled_from(types), unique=True,
                                                 max_size=1))}
    window = draw(st.integers(0, 12))
    query = NetQuery(root, window, preds, filters)
    nodes = tuple(range(draw(st.integers(1, 4))))
    sources = {t: draw(st.lists(st.sampled_from(nodes), min_size=1, unique=True))
               for t in types}
    network = Network(nodes, sources, {t: 1.0 for t in types})
    traces = {n: [] for n in nodes}
    uid = 0
    for t in types:
        for _ in range(draw(st.integers(0, 6))):
            n = draw(st.sampled_from(sorted(sources[t])))
            traces[n].append(NetEvent(uid, t, draw(st.integers(0, 30)), n,
                                      {"id": draw(st.integers(0, 2)),
                                       "v": draw(st.integers(0, 3))}))
            uid += 1
    # a random correct plan: a weak ordering and random pull sets
    order = draw(st.permutations(types))
    cuts = draw(st.lists(st.booleans(), min_size=n_types - 1, max_size=n_types - 1))
    groups, cur = [], [order[0]]
    for t, cut in zip(order[1:], cuts):
        if cut:
            groups.append(cur)
            cur = [t]
        else:
            cur.append(t)
    groups.append(cur)
    steps, avail = [], []
    for g in groups:
        psi = draw(st.lists(st.sampled_from(avail), unique=True)) if avail else []
        steps.append(Step(psi, g))
        avail += g
    plan = Plan(draw(st.sampled_from(nodes)), tuple(steps), draw(st.booleans()))
    timing = {"latency": draw(st.sampled_from([0.5, 1, 3])),
              "heartbeat": draw(st.sampled_from([1, 4, 10]))}
    return query, network, traces, plan, timing


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_sink_matches_equal_centralised_and_brute_force(scenario):
    query, network, traces, plan, timing = scenario
    report = simulate(query, network, plan, traces, **timing)
    events = [e for tr in traces.values() for e in tr
              if not (query.filter_map.get(e.type) and e.attrs["v"] <= 0)]
    assert report.centralised == brute_force_matches(query, events)
    assert report.correct, (report.matches, report.centralised)
    # accounting: each event is pushed or answered at most once, only from non-sink nodes
    remote = sum(len(tr) for n, tr in traces.items() if n != plan.sink)
    assert report.messages["push"] + report.messages["response"] <= remote
    if all(s.is_push for s in plan.steps):
        assert report.transmitted == report.push_all and report.messages["request"] == 0
    assert all(lat >= 0 for lat in report.latencies)
    assert len(report.latencies) == len(report.matches)


def test_paper_example_network_filters_by_predicate():
    """Fig. 1 in miniature: rare A at node 1, frequent B and C at nodes 2 and 3."""
    net = Network((1, 2, 3), {"A": [1], "B": [2], "C": [3]}, {"A": 0.01, "B": 0.2, "C": 0.2})
    q = NetQuery(seq("C", "B", "A"), 30, (Predicate("A", "id", "==", "B", "id"),
                                          Predicate("B", "id", "==", "C", "id")))
    traces = generate_traces(net, "ABC", 3000, seed=5, id_domain=20)
    push = simulate(q, net, Plan(1, (Step((), "ABC"),)), traces)
    window = simulate(q, net, Plan(1, (Step((), "A"), Step("A", "BC")), False), traces)
    prepp = simulate(q, net, Plan(1, (Step((), "A"), Step("A", "B"), Step("B", "C"))), traces)
    assert push.correct and window.correct and prepp.correct
    assert len(push.matches) > 0
    assert push.transmitted == push.push_all
    assert prepp.transmitted < window.transmitted < push.transmitted
    # more pull steps, later detection (each waits for a window plus a round trip)
    assert push.mean_latency < prepp.mean_latency


def test_planned_plan_on_generated_traces():
    net = Network(tuple(range(4)), {"A": [0], "B": [1, 2], "C": [3], "D": [2, 3]},
                  {"A": 0.01, "B": 0.1, "C": 0.1, "D": 0.05})
    q = NetQuery(seq("A", Op("AND", (Leaf("B"), Leaf("C"))), "D"), 40,
                 trace_predicates("ABCD", seed=2))
    traces = generate_traces(net, "ABCD", 2000, seed=3, id_domain=8)
    sel = Selectivities.for_query(q, net, {p.pair: 1 / 8 for p in q.predicates})
    plan = plan_sampling(q, net, sel, samples=32, top_k=4).plan
    report = simulate(q, net, plan, traces)
    assert report.correct and report.transmitted < report.push_all


def test_centralised_matches_agree_with_brute_force_on_generated_trace():
    net = Network((0, 1), {"A": [0], "B": [1], "C": [0, 1], "D": [1]},
                  {"A": 0.05, "B": 0.05, "C": 0.05, "D": 0.05})
    q = NetQuery(Op("OR", (seq("A", "B"), Op("AND", (Leaf("C"), Leaf("D"))))), 15,
                 (Predicate("A", "v", "<", "B", "v"), Predicate("C", "id", "==", "D", "id")))
    traces = generate_traces(net, "ABCD", 800, seed=1, id_domain=3)
    events = [e for tr in traces.values() for e in tr]
    got = centralised_matches(q, traces)
    assert got == brute_force_matches(q, events) and got


@pytest.mark.parametrize("mutate, message", [
    (lambda tr: tr[1].append(NetEvent(99, "A", 1, 1)), "not a source of A"),
    (lambda tr: tr[0].append(NetEvent(98, "A", 1.5, 0)), "time must be an int"),
    (lambda tr: tr[0].append(NetEvent(0, "A", 2, 0)), "uids must be unique"),
    (lambda tr: tr.update({7: []}), "not a node"),
])
def test_bad_traces(mutate, message):
    net = Network((0, 1), {"A": [0], "B": [1]}, {"A": 1, "B": 1})
    q = NetQuery(seq("A", "B"), 5)
    traces = {0: [NetEvent(0, "A", 0, 0)], 1: [NetEvent(1, "B", 1, 1)]}
    mutate(traces)
    with pytest.raises(NetworkError, match=message):
        simulate(q, net, Plan(0, (Step((), "AB"),)), traces)


def test_incorrect_plan_is_rejected_before_simulating():
    net = Network((0, 1), {"A": [0], "B": [1]}, {"A": 1, "B": 1})
    with pytest.raises(PlanError):
        simulate(NetQuery(seq("A", "B"), 5), net, Plan(0, (Step("B", "A"), Step((), "B"))),
                 {0: [], 1: []})
