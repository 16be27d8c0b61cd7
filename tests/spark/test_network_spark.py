"""PrePP on Spark: plan steps as broadcast left-semi-join reductions (transmission from Spark's
SQL metrics) and the batch estimators, against the local implementations."""

from __future__ import annotations

import pytest

from cercore.network import NetQuery, Network, NetworkError, Plan, Predicate, Step, seq
from cercore.network.estimate import estimate_network, estimate_pairwise
from cercore.network.evaluate import centralised_matches
from cercore.network.generators import generate_traces
from cercore.network.query import Leaf, Op
from cercore.network.simulator import simulate
from cercore.spark import estimate_pairwise as spark_pairwise
from cercore.spark import estimate_rates, events_dataframe, run_plan

pytestmark = pytest.mark.spark

NET = Network(("1", "2", "3"), {"A": ["1"], "B": ["2"], "C": ["3", "2"]},
              {"A": 0.01, "B": 0.2, "C": 0.1})
QUERY = NetQuery(seq("C", "B", "A"), 30, (Predicate("A", "id", "==", "B", "id"),
                                          Predicate("B", "id", "==", "C", "id"),
                                          Predicate("B", "v", "<", "C", "v")))
TRACES = generate_traces(NET, "ABC", 3000, seed=5, id_domain=6)


@pytest.fixture(scope="module")
def events(spark):
    return events_dataframe(TRACES, spark=spark)


@pytest.mark.parametrize("plan", [
    Plan("1", (Step((), "A"), Step("A", "B"), Step("B", "C"))),
    Plan("1", (Step((), "A"), Step("A", "BC"))),
    Plan("2", (Step((), "AB"), Step("AB", "C"))),
    Plan("3", (Step((), "ABC"),)),
])
def test_semi_join_plan_finds_every_match(events, plan):
    run = run_plan(events, QUERY, plan=plan, network=NET)
    central = centralised_matches(QUERY, TRACES)
    assert central and run.matches == central
    sim = simulate(QUERY, NET, plan, TRACES)
    remote = sum(len(tr) for n, tr in TRACES.items() if n != plan.sink)
    if all(s.is_push for s in plan.steps):
        assert run.pushed == remote and run.request_rows == run.responses == 0
    else:
        # Spark metrics saw requests and responses; combinations are at least as selective
        # as the simulator's per-event requests
        assert run.request_rows > 0 and 0 < run.responses <= sim.messages["response"]
        assert run.responses == sum(s.get("responses", 0) for s in run.per_step)
        assert run.transmitted < remote


def test_spark_estimators_equal_local_ones(events):
    local = estimate_network(QUERY, TRACES)
    spark_net = estimate_rates(events)
    assert {t: spark_net.sources_of(t) for t in "ABC"} == {t: local.sources_of(t) for t in "ABC"}
    assert spark_net.rates == pytest.approx(local.rates)
    flat = [e for tr in TRACES.values() for e in tr]
    assert spark_pairwise(events, QUERY) == pytest.approx(
        estimate_pairwise(QUERY, flat))


OR_QUERY = NetQuery(seq("B", Op("OR", (Leaf("A"), Leaf("C")))), 30,
                    (Predicate("A", "id", "==", "B", "id"), Predicate("B", "id", "==", "C", "id"),
                     Predicate("B", "v", "<", "C", "v")))


@pytest.mark.parametrize("plan", [
    Plan("2", (Step((), "B"), Step("B", "AC"))),
    Plan("1", (Step((), "A"), Step("A", "B"), Step("B", "C"))),  # (B;C) needs every B
    Plan("3", (Step((), "C"), Step("C", "A"), Step("AC", "B"))),
])
def test_or_queries_reduce_each_branch(events, plan):
    """With OR, each pulled type is reduced with the requests of every branch containing it;
    the matches are the centralised ones and nothing is sent twice."""
    run = run_plan(events, OR_QUERY, plan=plan, network=NET)
    central = centralised_matches(OR_QUERY, TRACES)
    assert central and run.matches == central
    assert {len(m) for m in central} == {2}
    remote = sum(len(tr) for n, tr in TRACES.items() if n != plan.sink)
    assert run.responses == sum(s.get("responses", 0) for s in run.per_step)
    assert run.responses <= remote
    for s in run.per_step:  # an event two branches pull is sent once
        if "responses" in s:
            assert s["responses"] <= s["semi_join_rows"] + s.get("unconditional", 0)


def test_plan_errors(events):
    with pytest.raises(NetworkError):
        run_plan(events, QUERY, plan=Plan("1", (Step("B", "A"), Step((), "BC"))), network=NET)


@pytest.mark.parametrize("plan", [
    Plan("1", (Step((), "A"), Step("A", "B"), Step("B", "C"))),
    Plan("3", (Step((), "ABC"),)),
])
def test_filters_are_applied_at_the_source(events, plan):
    """Single-type filters drop events where they are: the matches are the filtered query's,
    and a filtered-out event is never transmitted."""
    filtered = NetQuery(QUERY.root, QUERY.window, QUERY.predicates,
                        filters={"B": "v > 0.2", "C": "v > 0.1"})
    run = run_plan(events, filtered, plan=plan, network=NET)
    central = centralised_matches(filtered, TRACES)
    assert central and run.matches == central < centralised_matches(QUERY, TRACES)
    unfiltered = run_plan(events, QUERY, plan=plan, network=NET)
    assert run.transmitted < unfiltered.transmitted
