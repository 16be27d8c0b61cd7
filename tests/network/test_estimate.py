"""Rate and selectivity estimation from traces against counts written from the definitions,
the generators' rules, and the CLI."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from network_fixtures import brute_force_matches

from cercore.cli import main
from cercore.network import NetQuery, Network, Predicate, seq
from cercore.network.estimate import estimate_catalog
from cercore.network.generators import (
    generate_network,
    generate_query,
    generate_selectivities,
    generate_traces,
)
from cercore.network.query import Leaf, Op
from cercore.network.traces import read_traces, write_traces


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10**6), window=st.integers(0, 40))
def test_estimates_match_definitions(seed, window):
    net = Network((0, 1, 2), {"A": [0], "B": [1, 2], "C": [2]}, {"A": 0.02, "B": 0.03, "C": 0.02})
    q = NetQuery(seq("A", Op("AND", (Leaf("B"), Leaf("C")))), window,
                 (Predicate("A", "id", "==", "B", "id"), Predicate("B", "v", "<", "C", "v")))
    traces = generate_traces(net, "ABC", 600, seed=seed, id_domain=3)
    events = [e for tr in traces.values() for e in tr]
    est_net, sel = estimate_catalog(q, traces)
    span = max(e.t for e in events) - min(e.t for e in events) + 1
    for t in "ABC":
        n = sum(e.type == t for e in events)
        if n:
            assert est_net.rates[t] * len(est_net.sources_of(t)) * span == pytest.approx(n)
    a = [e for e in events if e.type == "A"]
    b = [e for e in events if e.type == "B"]
    near = [(x, y) for x, y in itertools.product(a, b) if abs(x.t - y.t) <= window]
    if near:
        assert sel.pair("A", "B") == pytest.approx(
            sum(x.attrs["id"] == y.attrs["id"] for x, y in near) / len(near))
    for size in (2, 3):
        for xs in map(frozenset, itertools.combinations("ABC", size)):
            ms = brute_force_matches(q, events, xs)
            for t in xs:
                of_t = {e.uid for e in events if e.type == t}
                if of_t:
                    hit = {u for m in ms for u in m} & of_t
                    assert sel.sigma(t, xs) == pytest.approx(len(hit) / len(of_t))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(2, 6))
def test_generated_selectivities_follow_the_artifact_rules(seed, n):
    net = generate_network(n, 5, seed=seed)
    q, pw = generate_query(n, min_sel=1e-4, seed=seed)
    assert all(1e-4 <= v <= 1e-2 for v in pw.values())
    sel = generate_selectivities(q, net, pw, seed)
    types = sorted(q.types)
    for size in range(2, n + 1):
        for xs in map(frozenset, itertools.combinations(types, size)):
            for t in xs:
                assert 0 <= sel.sigma(t, xs) <= 1
                if size > 2:
                    assert all(sel.sigma(t, xs) <= sel.sigma(t, xs - {u}) + 1e-15
                               for u in xs if u != t)
            if size == 2:  # nothing caps pairs: the product equals σ_pair
                a, b = sorted(xs)
                assert sel.sigma(a, xs) * sel.sigma(b, xs) == pytest.approx(pw[xs])


def test_network_generator_parameters():
    net = generate_network(6, 40, event_node_ratio=0.25, skew=2.0, seed=4)
    assert len(net.nodes) == 40 and all(net.sources_of(t) for t in "ABCDEF")
    assert all(r >= 1 for r in net.rates.values())
    mean_sources = sum(len(net.sources_of(t)) for t in "ABCDEF") / 6
    assert 5 <= mean_sources <= 15


def test_cli_plan_and_simulate(tmp_path, capsys):
    net = tmp_path / "net.json"
    net.write_text(json.dumps({"nodes": [1, 2, 3], "sources": {"A": [1], "B": [2], "C": [3]},
                               "rates": {"A": 0.01, "B": 0.2, "C": 0.2}}))
    query = "PATTERN SEQ(C c, B b, A a) WHERE a.id = b.id AND b.id = c.id WITHIN 30"
    assert main(["plan", query, "--network", str(net), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["cost"]) == {"sink_aware", "literal"} and 0 <= out["ratio"] <= 1
    assert main(["plan", query, "--network", str(net), "--planner", "exact"]) == 0
    assert "push-all:" in capsys.readouterr().out
    traces = generate_traces(Network.load(net), "ABC", 1500, seed=2, id_domain=10)
    path = tmp_path / "traces.jsonl"
    write_traces(path, traces)
    assert read_traces(path, Network.load(net)) == traces
    # a value may hold U+2028 as it is (JSON Lines and CSV end lines at "\n" only)
    odd = tmp_path / "odd.jsonl"
    odd.write_text(json.dumps({"node": 1, "event_type": "A", "t": 5, "tag": "x\u2028y"},
                              ensure_ascii=False) + "\n", encoding="utf-8")
    assert read_traces(odd, Network.load(net))[1][0].attrs == {"tag": "x\u2028y"}
    csv_path = tmp_path / "odd.csv"
    csv_path.write_text('node,event_type,t,tag\n1,A,5,"x\u2028y"\n', encoding="utf-8")
    assert read_traces(csv_path, Network.load(net))[1][0].attrs == {"tag": "x\u2028y"}
    assert main(["simulate", query, "--network", str(net), "--traces", str(path),
                 "--estimate-from", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["correct"] is True and report["transmitted"] <= report["push_all_same_sink"]
    assert main(["simulate", query, "--network", str(net), "--generate", "500"]) == 0
    assert "correct: True" in capsys.readouterr().out


def test_cli_errors(tmp_path, capsys):
    net = tmp_path / "net.json"
    net.write_text(json.dumps({"nodes": [1], "sources": {"A": [1]}, "rates": {"A": 1}}))
    assert main(["plan", "PATTERN SEQ(A, B) WITHIN 3", "--network", str(net)]) == 2
    assert "no sources for type B" in capsys.readouterr().err
    assert main(["plan", "SELECT * FROM S WHERE A WITHIN 3 [t]", "--network", str(net)]) == 2
    assert "needs --schema" in capsys.readouterr().err
    net.write_text("{")
    assert main(["plan", "PATTERN SEQ(A, B) WITHIN 3", "--network", str(net)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
