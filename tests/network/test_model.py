"""PrePP model: query structure and projections (§3.2, note §6 examples 5 and 11), plans and
their correctness (Def. 3, note example 8), networks, and input errors."""

from __future__ import annotations

import json

import pytest
from network_fixtures import FIG1_NETWORK, FIG1_QUERY

from cercore import CercoreError
from cercore.network import (
    NetEvent,
    NetQuery,
    Network,
    NetworkError,
    Plan,
    PlanError,
    Predicate,
    Step,
    and_,
    or_,
    seq,
)

Q7 = NetQuery(seq("C", "D", and_("A", "B", "E")), 10)


def test_projection_example_2():
    assert str(FIG1_QUERY.project({"A", "C"}).root) == "SEQ(C, A)"
    assert FIG1_QUERY.project({"A", "C"}).predicates == ()
    assert FIG1_QUERY.project({"A", "C"}).window == 0.5


@pytest.mark.parametrize("types, expected", [
    ({"A", "B", "C"}, "SEQ(C, AND(A, B))"),
    ({"A", "C", "D"}, "SEQ(C, D, A)"),
    ({"A", "C", "E"}, "SEQ(C, AND(A, E))"),
    ({"A"}, "A"),
])
def test_projection_example_7(types, expected):
    assert str(Q7.project(types).root) == expected


def test_projection_keeps_only_inner_predicates():
    p = FIG1_QUERY.project({"A", "B"})
    assert p.predicates == (Predicate("A", "x", "==", "B", "x"),)


def test_rate_formulas_example_11():
    rate = {"A": 2, "B": 3, "C": 4}
    sig = {frozenset("AB"): 0.5, frozenset("AC"): 0.1, frozenset("BC"): 0.2}

    def pair(a, b):
        return sig[frozenset((a, b))]

    def r(root):
        return NetQuery(root, 1).match_rate(rate, pair)

    assert r(and_("A", "B")) == pytest.approx(6)
    assert r(seq("A", "B")) == pytest.approx(3)
    assert r(or_("A", "B")) == pytest.approx(2.5)
    nested = NetQuery(seq("C", and_("A", "B")), 1)
    assert nested.match_rate(rate, pair, literal=True) == pytest.approx(0.24)
    assert nested.match_rate(rate, pair) == pytest.approx(0.48)


def test_branches_push_or_up():
    q = NetQuery(seq("A", or_("B", and_("C", "D"))), 5)
    shapes = sorted(sorted(b.types) for b in q.branches)
    assert shapes == [["A", "B"], ["A", "C", "D"]]
    b = next(b for b in q.branches if "C" in b.types)
    assert ("A", "C") in b.before and ("A", "D") in b.before
    assert ("C", "D") not in b.before and ("D", "C") not in b.before
    assert b.linear_extensions({"A", "C", "D"}) == [("A", "C", "D"), ("A", "D", "C")]


def test_partial_match_definition():
    q = NetQuery(seq("A", or_("B", "C")), 5, (Predicate("A", "x", "<", "B", "x"),))
    a = NetEvent(0, "A", 1, attrs={"x": 1})
    b = NetEvent(1, "B", 3, attrs={"x": 2})
    b_low = NetEvent(2, "B", 3, attrs={"x": 0})
    c = NetEvent(3, "C", 7, attrs={})
    assert q.is_partial_match([a, b])
    assert not q.is_partial_match([b, a][:1] + [NetEvent(4, "A", 4, attrs={"x": 1})])  # order
    assert not q.is_partial_match([a, b_low])                                         # predicate
    assert not q.is_partial_match([NetEvent(5, "A", 1, attrs={"x": 1}), c])             # window
    assert q.is_partial_match([a], {"A", "B"})
    assert not q.is_partial_match([a, b, c])


def test_plan_available_and_correctness_example_6_and_8():
    p3 = Plan(1, (Step((), "A"), Step("A", "B"), Step("B", "C")))
    assert p3.available(2) == {"A", "B"}
    assert p3.available(1) == {"A"}
    p3.validate(FIG1_QUERY, FIG1_NETWORK)
    bad = Plan(1, (Step((), "A"), Step("B", "C"), Step("A", "B")))
    with pytest.raises(PlanError, match=r"step 2 .*pulls with \{B\}, which is not available"):
        bad.validate(FIG1_QUERY, FIG1_NETWORK)


@pytest.mark.parametrize("plan, message", [
    (Plan(1, (Step((), "AB"),)), "never acquires {C}"),
    (Plan(1, (Step((), "ABC"), Step("A", "B"))), "acquires B a second time"),
    (Plan(1, (Step((), "ABCD"),)), "names D"),
    (Plan(9, (Step((), "ABC"),)), "sink 9 is not a node"),
    (Plan(1, (Step((), "A"), Step("A", ""), Step((), "BC"))), "acquires nothing"),
    (Plan(1, ()), "at least one"),
])
def test_incorrect_plans(plan, message):
    with pytest.raises(PlanError, match=message.replace("{", r"\{").replace("}", r"\}")):
        plan.validate(FIG1_QUERY, FIG1_NETWORK)


def test_plan_and_network_json_round_trip(tmp_path):
    p = Plan(2, (Step((), "A"), Step("A", "BC")), predicate_pull=False)
    assert Plan.from_dict(json.loads(json.dumps(p.to_dict()))) == p
    path = tmp_path / "net.json"
    path.write_text(json.dumps(FIG1_NETWORK.to_dict()))
    assert Network.load(path) == FIG1_NETWORK
    assert FIG1_NETWORK.global_rate("B") == 2000


@pytest.mark.parametrize("build, message", [
    (lambda: NetQuery(seq("A", "A"), 1), "used twice"),
    (lambda: NetQuery(seq("A", "B"), -1), "window"),
    (lambda: NetQuery(seq("A", "B"), 1, (Predicate("A", "x", "==", "C", "x"),)), "names C"),
    (lambda: Predicate("A", "x", "~", "B", "x"), "operator"),
    (lambda: Predicate("A", "x", "<", "A", "y"), "two different types"),
    (lambda: NetQuery(seq("A"), 1), "at least two"),
    (lambda: Network((1, 1), {}, {}), "unique"),
    (lambda: Network((1,), {"A": [2]}, {"A": 1}), "not a node"),
    (lambda: Network((1,), {"A": [1]}, {"A": -1}), ">= 0"),
    (lambda: Network((1,), {"A": [1]}, {}), "no rate"),
    (lambda: Network.from_dict({"nodes": [1]}), "needs 'nodes'"),
    (lambda: Plan.from_dict({"steps": []}), "needs 'sink'"),
])
def test_bad_inputs_raise_cercore_errors(build, message):
    with pytest.raises(CercoreError, match=message):
        build()


def test_network_errors_are_value_errors():
    assert issubclass(NetworkError, ValueError) and issubclass(PlanError, NetworkError)
