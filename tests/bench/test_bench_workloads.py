"""cercore.bench.workloads: the paper's queries verbatim, every workload parses and runs on every
backend with identical outputs (in identical order) on the generated datasets, and equals the
brute-force oracle (tests/oracle.py) on tiny random streams, with the paper's methodology."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import evaluate
from support import BACKENDS

import cercore
from cercore.bench import datasets, runner, workloads
from cercore.ceql import parser

DATASETS = ["stock_trace", "stocks", "smart_homes", "taxis"]
SMALL = 3_000


@pytest.fixture(scope="module")
def tables():
    return {ds: datasets.load(ds, SMALL, seed=1) for ds in DATASETS}


def test_paper_queries_verbatim():
    """Pinned against the paper's appendices D-G (spaces normalised)."""
    def query(ds: str, name: str, methodology: bool = False) -> str:
        (w,) = workloads.select(ds, [name])
        return " ".join(w.text(methodology).split())

    assert query("stocks", "P3") == (
        "SELECT * FROM S WHERE (SELL as T1; BUY as T2; BUY as T3) FILTER T1[name = 'INTC'] "
        "AND T2[name = 'RIMM'] AND T3[name = 'QQQ'] WITHIN 10000 [stock_time]")
    assert query("stocks", "P'3@3T") == (
        "SELECT * FROM S WHERE (SELL as T1; BUY as T2; BUY as T3; BUY as NE) FILTER "
        "T1[name = 'INTC'] AND T2[name = 'RIMM'] AND T3[name = 'QQQ'] AND "
        "NE[name = 'NotExists'] WITHIN 30000 [stock_time]")
    s24 = query("stocks", "P24")
    assert re.findall(r"T(\d+)\[name = '(\w+)'\]", s24)[12:15] == [
        ("13", "INTC"), ("14", "RIMM"), ("15", "QQQ")]
    assert "SELL as T22; BUY as T23; BUY as T24)" in s24
    h12 = query("smart_homes", "P12")
    assert h12.startswith("SELECT * FROM S WHERE (LOAD as L1; LOAD as L2;")
    assert ") as L FILTER L[value > 76] AND L1[household_id = 0] AND " in h12
    assert "L10[household_id = 4] AND L11[household_id = 9] AND L12[household_id = 10] " \
           "WITHIN 10 [plug_timestamp]" in h12
    assert "NE[household_id = 1000] WITHIN 40 [plug_timestamp]" in query("smart_homes",
                                                                        "P'3@4T")
    t24 = query("taxis", "P24")
    assert "loc12[pickup_loc = 'Midwood' AND dropoff_loc = 'Gravesend'] AND " \
           "loc13[pickup_loc = 'Gravesend' AND dropoff_loc = 'Midwood'] AND " \
           "loc14[pickup_loc = 'Midwood' AND dropoff_loc = 'Gravesend'] AND " \
           "loc15[pickup_loc = 'Gravesend' AND dropoff_loc = 'West Brighton']" in t24
    assert t24.endswith("loc24[pickup_loc = 'Midwood' AND dropoff_loc = 'Gravesend'] "
                        "WITHIN 10000 [dropoff_datetime]")
    assert query("stocks", "Q6", methodology=True) == (
        "SELECT * FROM S WHERE (SELL as msft; (BUY OR SELL) as oracle; (BUY OR SELL) as csco; "
        "SELL as amat) FILTER msft[name = 'MSFT'] AND oracle[name = 'ORCL'] AND "
        "csco[name = 'CSCO'] AND amat[name = 'AMAT'] PARTITION BY [volume] "
        "WITHIN 30000 [stock_time] CONSUME BY ANY LIMIT 1000")
    assert query("stocks", "Q7") == (
        "SELECT * FROM S WHERE (SELL as msft; (BUY OR SELL)+ as qqq; SELL as amat) FILTER "
        "msft[name = 'MSFT'] AND qqq[name = 'QQQ'] AND qqq[volume = 4000] AND "
        "amat[name = 'AMAT'] WITHIN 30000 [stock_time]")


def test_catalogue():
    for ds in DATASETS:
        every = workloads.workloads(ds)
        names = [w.name for w in every]
        assert len(names) == len(set(names)) == 5 + 5 + 6 + 7
        assert {w.family for w in every} == set(workloads.FAMILIES)
        assert all(w.paper for w in every if w.family != "operators" and w.window_factor <= 4)
        assert all(w.paper == (ds in ("stocks", "stock_trace"))
                   for w in every if w.family == "operators")
    assert [w.window_factor for w in workloads.select("taxis", families=["window"])] == [
        1, 2, 3, 4, 8, 16]


def test_methodology_clauses():
    (w,) = workloads.select("stocks", ["P3"])
    assert w.text().endswith("CONSUME BY ANY\nLIMIT 1000")
    assert "LIMIT" not in w.text(False) and "CONSUME" not in w.text(False)
    assert w.text(limit=0).endswith("CONSUME BY ANY\nLIMIT 0")
    (q3,) = workloads.select("stocks", ["Q3"])
    assert q3.text().count("CONSUME BY") == 1 and q3.text(False).count("CONSUME BY") == 1
    for ds in DATASETS:  # every text parses, with and without the methodology
        for w in workloads.workloads(ds):
            assert parser.parse_query(w.text()).limit == 1000
            assert parser.parse_query(w.text(False)).limit is None


def test_unknown_names():
    with pytest.raises(cercore.CercoreError, match="unknown workload"):
        workloads.select("stocks", ["P5"])
    with pytest.raises(cercore.CercoreError, match="unknown workload family"):
        workloads.select("stocks", families=["joins"])
    with pytest.raises(cercore.CercoreError, match="no workloads"):
        workloads.workloads("weather")


@pytest.mark.parametrize("dataset", DATASETS)
def test_every_workload_runs_identically_on_every_backend(dataset, tables):
    sch = datasets.schema(dataset)
    found = 0
    for w in workloads.workloads(dataset):
        # without LIMIT the outputs of long sequences explode: the bare text for P3 only
        for methodology in (True, False) if w.name == "P3" else (True,):
            q = cercore.compile(w.text(methodology), sch)
            count = runner.check_equal(q, tables[dataset], BACKENDS)
            if w.family in ("no-output", "window"):
                assert count == 0, w.name
            found += count
    assert found > 0  # the workloads do find complex events on this data


# --- against the brute-force oracle, on tiny streams ---------------------------------------------
# Streams are drawn by a seeded random.Random (hypothesis' own draws favour repeated simple
# values, which almost never complete a sequence) from event templates that the queries' atoms
# name: with probability 1/2 the next event is the next step of a target sequence (the P6 chain
# or the Q1 pattern), else a random template, so that matches are common.
STOCK_TEMPLATES = [("SELL", "INTC"), ("BUY", "RIMM"), ("BUY", "QQQ"), ("SELL", "IPIX"),
                   ("BUY", "AMAT"), ("BUY", "CSCO"), ("SELL", "MSFT"), ("BUY", "ORCL"),
                   ("SELL", "AMAT"), ("SELL", "QQQ")]
STOCK_TARGETS = [STOCK_TEMPLATES[:6], [("SELL", "MSFT"), ("BUY", "ORCL"), ("BUY", "CSCO"),
                                       ("SELL", "AMAT")]]
HOUSEHOLD_TARGETS = [[0, 2, 4, 6, 9, 10], [0, 2, 4, 6], [0, 3, 5, 6]]
TRIP_TEMPLATES = list(zip(workloads.TAXI_CHAIN[:6], workloads.TAXI_CHAIN[1:7])) + [
    ("Midwood", "Midwood")]
MIN_EVENTS, MAX_EVENTS = 4, 12


def _keys(rng: random.Random, templates: list, targets: list[list]) -> list:
    """Event templates: a random target sequence's steps in order, interleaved with noise."""
    target, step, out = rng.choice(targets), 0, []
    for _ in range(rng.randint(MIN_EVENTS, MAX_EVENTS)):
        if step < len(target) and rng.random() < 0.5:
            out.append(target[step])
            step += 1
        else:
            out.append(rng.choice(templates))
    return out


def _times(rng: random.Random, steps: list[int], n: int) -> list[int]:
    out, t = [], 1_000
    for _ in range(n):
        t += rng.choice(steps)
        out.append(t)
    return out


def stock_events(rng: random.Random) -> list:
    keys = _keys(rng, STOCK_TEMPLATES, STOCK_TARGETS)
    return [(side, {"id": i, "name": name, "volume": rng.choice([100, 4000]),
                    "price": rng.choice([11.1, 11.2, 18.9, 18.95, 26.0, 26.5]),
                    "stock_time": t})
            for i, ((side, name), t) in enumerate(
                zip(keys, _times(rng, [0, 300, 1_000, 2_000, 40_000], len(keys))))]


def load_events(rng: random.Random) -> list:
    keys = _keys(rng, [0, 2, 3, 4, 5, 6, 9, 10], HOUSEHOLD_TARGETS)
    return [("LOAD", {"id": i, "plug_timestamp": t, "value": rng.choice([5.0, 80.0, 80.0]),
                      "plug_id": rng.randint(0, 2), "household_id": hh})
            for i, (hh, t) in enumerate(zip(keys, _times(rng, [0, 0, 1, 3, 12], len(keys))))]


def trip_events(rng: random.Random) -> list:
    keys = _keys(rng, TRIP_TEMPLATES, [TRIP_TEMPLATES[:6]])
    out = []
    for (pickup, dropoff), t in zip(keys, _times(rng, [0, 1_000, 3_000, 12_000], len(keys))):
        trip = rng.choice([300, 900])
        out.append(("TRIP", {
            "medallion": rng.choice(["M1", "M2"]), "pickup_datetime": t - trip,
            "dropoff_datetime": t, "trip_time_in_secs": trip,
            "trip_distance": rng.choice([1.0, 3.0]), "pickup_loc": pickup,
            "dropoff_loc": dropoff, "payment_type": rng.choice(["CRD", "CSH"]),
            "fare_amount": rng.choice([5.0, 12.0]), "tip_amount": 0.0}))
    return out


ORACLE_CASES = {"stocks": stock_events, "smart_homes": load_events, "taxis": trip_events}


@pytest.mark.parametrize("dataset", sorted(ORACLE_CASES))
def test_workloads_equal_the_oracle(dataset):
    sch = datasets.schema(dataset)
    chosen = [w for w in workloads.workloads(dataset) if w.n <= 6]  # the oracle is exponential
    compiled = [(w, cercore.compile(w.text(), sch), parser.parse_query(w.text()))
                for w in chosen]
    matched: set[str] = set()

    # derandomized: the same cases every run, so the coverage bound below cannot flake
    @settings(max_examples=60, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(st.integers(0, 2**32 - 1))
    def check(seed):
        events = ORACLE_CASES[dataset](random.Random(seed))
        for w, q, ast_ in compiled:
            expected = evaluate(ast_, sch, events)
            assert all(len(ces) <= 1000 for ces in expected.values())  # LIMIT cannot bind
            for backend in BACKENDS:
                got: dict[int, set] = {}
                for ce in q.engine(backend).process(events):
                    got.setdefault(ce.end, set()).add((ce.start, tuple(ce.positions)))
                assert got == {e: c for e, c in expected.items() if c}, (w.name, backend)
            if any(expected.values()):
                matched.add(w.name)

    check()
    # the tiny streams do exercise the queries: P3 and several of Q1-Q7 matched (the set
    # varies with the random cases; a bound that tight was flaky)
    assert "P3" in matched and len(matched) >= 4, matched
