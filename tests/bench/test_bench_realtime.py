"""``cercore-bench realtime`` (cercore.bench.realtime) on a few hundred events: the push table
has every workload, its outputs were checked against bulk ``process``, the latency table and
results.json are written; pycer's one-event-at-a-time mode when installed. No timing
assertions."""

from __future__ import annotations

import json

import pytest
from support import BACKENDS

import cercore
from cercore.bench import cli, datasets, peers, realtime

WORKLOADS = ["S3", "S3'", "PARTITION BY", f"multi x{realtime.MULTI_QUERIES}", "trend"]


def test_realtime_checks_outputs_and_writes_results(tmp_path, capsys):
    backend = BACKENDS[-1]
    rc = cli.main(["realtime", "--events", "400", "--backend", backend, "--repeat", "1",
                   "--no-pycer", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "checked equal to bulk process(table)" in out and "DIFFERS" not in out
    table, latency = out.split("\nLatency")
    body = table.splitlines()[3:]  # after the title, the header and its rule
    assert [ln[:14].strip() for ln in body] == WORKLOADS
    assert all(ln[14:22].strip() == backend and ln.endswith("= bulk") for ln in body)
    assert f"{backend:<8}push" in latency and f"{backend:<8}process(generator)" in latency
    rows = json.loads((tmp_path / "results.json").read_text())
    push = {r["workload"]: r for r in rows if r["experiment"] == "push"}
    assert list(push) == WORKLOADS
    assert all(r["checked"] and r["events"] == 400 and r["seconds"] > 0 for r in push.values())
    assert push["S3"]["outputs"] > 0 and push["S3'"]["outputs"] == 0
    lat = [r for r in rows if r["experiment"] == "latency"]
    assert [r["path"] for r in lat] == ["push", "process(generator)"]
    assert all(r["outputs"] == push["S3"]["outputs"] and r["completing_events"] > 0
               and r["p50_us"] <= r["p99_us"] <= r["max_us"] for r in lat)


def test_a_push_that_differs_from_bulk_is_reported():
    w = realtime.push_workloads()[0]  # S3
    table = datasets.stock_trace(400)
    events = realtime.records(table)
    make = realtime.engine_maker(w, datasets.schema("stock_trace"))
    bulk, problem = realtime.check_push(w, make, table, events, BACKENDS[0])
    assert problem is None and bulk

    class Lossy:  # an engine whose push loses the complex events of the first completing event
        def __init__(self, backend: str) -> None:
            self.engine, self.completing = make(backend), 0
            self.process, self.flush = self.engine.process, self.engine.flush

        def push(self, typ, attrs):
            found = self.engine.push(typ, attrs)
            self.completing += bool(found)
            return [] if found and self.completing == 1 else found

    _, problem = realtime.check_push(w, Lossy, table, events, BACKENDS[0])
    assert problem is not None and "first difference" in problem


def test_pycer_query_makes_attribute_windows_inclusive():
    assert realtime.pycer_query("WITHIN 1000 [stock_time]") == "WITHIN 1001 [stock_time]"
    assert realtime.pycer_query("WITHIN 10 SECONDS") == "WITHIN 10 SECONDS"


PYCER = peers.find_pycer()


@pytest.mark.skipif(PYCER is None, reason="no Python 3.13 with pycer here")
def test_pycer_one_at_a_time_when_installed():
    table = datasets.stock_trace(1_000)
    for w in realtime.push_workloads()[:3]:
        res = peers.run_pycer(PYCER, datasets.DECLARATIONS["stocks"],
                              realtime.pycer_query(w.texts[0]), table, 1, "cpu",
                              one_at_a_time=True)
        m = cercore.compile(w.texts[0], datasets.schema("stocks")).engine().process_arrays(table)
        assert res["events"] == 1_000
        assert [tuple(i) for i in res["intervals"]] == sorted(
            zip(m.start_time.tolist(), m.end_time.tolist())), w.name


def test_memory_run_pushes_a_cycled_trace_in_a_fresh_process():
    """``--memory N``: the trace cycled with times shifted (still in time order: no event is
    rejected), pushed in a child process; RSS samples reported, no bound asserted."""
    events = realtime.records(datasets.stock_trace(50))
    again = list(realtime.cycled(events, 120))
    assert [t for t, _ in again] == [t for t, _ in (events * 3)[:120]]
    times = [a["stock_time"] for _, a in again]
    assert times == sorted(times) and again[50][1] is not events[0][1]
    rows = realtime.memory_rows([BACKENDS[-1]], 2_000)
    assert len(rows) == 1 and rows[0]["events"] == 2_000 and rows[0]["outputs"] > 0
    assert 0 < rows[0]["rss_warm_mib"] and rows[0]["rss_max_mib"] >= rows[0]["rss_end_mib"]
    assert "growth" in realtime.format_memory(rows)


def test_absence_bench_runs_both_pairs_and_paths(capsys, tmp_path):
    """``cercore-bench absence``: each pair (between, deadline) on bulk and push, outputs of the
    query with the absence counted; no timing asserted."""
    rc = cli.main(["absence", "--replay", "1", "--push-events", "300", "--repeat", "1",
                   "--backend", BACKENDS[-1], "--out", str(tmp_path)])
    assert rc == 0
    rows = json.loads((tmp_path / "results.json").read_text())
    assert [(r["pair"], r["path"]) for r in rows] == [
        ("between", "bulk"), ("between", "push"), ("deadline", "bulk"), ("deadline", "push")]
    for r in rows:  # an absence only removes complex events
        assert 0 < r["outputs_with"] <= r["outputs_without"] and r["ratio"] > 0
