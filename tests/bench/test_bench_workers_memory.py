"""``cercore-bench scaling --workers-memory`` (scaling.memory_per_worker): the memory
experiment's stream in T-CER slices, sampled per worker. Small sizes; no timing assertions."""

from __future__ import annotations

import json
import threading

import pytest
from support import BACKENDS

import cercore
from cercore.bench import cli, datasets, runner, scaling, workloads

EVERY = 10_000


def test_each_worker_is_sampled_over_its_own_run():
    n, k = 300_000, 3
    runs = scaling.memory_per_worker(n, k, BACKENDS[-1], every=EVERY)
    # k runs, each in its own thread (the first in the caller's), in run order
    assert len(runs) == k
    assert [{s.worker for s in run} for run in runs] == [{p} for p in range(k)]
    threads = [{s.thread for s in run} for run in runs]
    assert all(len(t) == 1 for t in threads) and len(set().union(*threads)) == k
    assert threads[0] == {threading.current_thread().name}
    assert all(t.startswith("cercore-slice") for ts in threads[1:] for t in ts)
    # the runs cut the table as process_arrays(workers=k) does: [n p / k, n (p+1) / k)
    assert [run[-1].run_events for run in runs] == [n * (p + 1) // k - n * p // k
                                                    for p in range(k)]
    for p, run in enumerate(runs):
        prefix = [s for s in run if s.run_events == 0]
        own = run[len(prefix):]
        assert all(s.run_events > 0 for s in own)  # the prefix's samples come first
        # the first run has no prefix; the others start a window before their run
        assert (p == 0) == (not prefix)
        assert run[-1].events - run[-1].run_events == (prefix[-1].events if prefix else 0)
        # every chunk of the run sampled: a sample at most every EVERY events, to its end
        steps = [b.run_events - a.run_events for a, b in zip([own[0]] + own, own)][1:]
        assert own[0].run_events <= EVERY and all(0 < d <= EVERY for d in steps)
        assert len(own) == -(-run[-1].run_events // EVERY)
        assert all(s.rss_bytes is None or s.rss_bytes > 0 for s in run)
    # each worker holds about a window's nodes, no more than one engine over the whole stream
    (w,) = workloads.select("stocks", ["P'3"])
    one = runner.memory_profile(cercore.compile(w.text(methodology=False),
                                                datasets.schema("stocks")),
                                datasets.stocks(n), BACKENDS[-1], EVERY)
    ceiling = max(s.tecs_nodes for s in one)
    assert 0 < max(s.tecs_nodes for run in runs for s in run) <= ceiling < n // k // 5
    rows = scaling.worker_memory_rows(runs)
    assert [r["worker"] for r in rows] == list(range(k)) and all(r["flat"] for r in rows)
    assert [r["prefix_events"] > 0 for r in rows] == [False] + [True] * (k - 1)
    assert "flat: per worker" in scaling.format_worker_memory(rows)


@pytest.mark.parametrize("query, events, why", [
    ("SELECT * FROM S WHERE SELL AS s ; BUY AS b", 100_000, "WITHIN on the ordering time"),
    ("SELECT * FROM S WHERE SELL AS s ; BUY AS b WITHIN 10 SECONDS CONSUME BY ANY", 100_000,
     "CONSUME BY ANY"),
    ("SELECT * FROM S WHERE SELL AS s ; BUY AS b PARTITION BY [name] WITHIN 10 SECONDS "
     "CONSUME BY PARTITION", 100_000, "2 key shards instead"),
    (None, 20_000, "fewer than"),  # P'3, too short to cut
])
def test_a_query_or_stream_that_is_not_sliced_is_refused(query, events, why):
    """Never one engine's (or key shards') memory reported as the workers'."""
    with pytest.raises(cercore.CercoreError, match="not cut into 2 T-CER slices") as e:
        scaling.memory_per_worker(events, 2, BACKENDS[-1], query=query)
    assert why in str(e.value)


def test_the_verdict_says_when_a_worker_grows():
    def run(worker, nodes):
        return [scaling.WorkerSample(worker, (i + 1) * EVERY, (i + 1) * EVERY, x, None, "t")
                for i, x in enumerate(nodes)]

    rows = scaling.worker_memory_rows([run(0, [5, 9, 7, 9, 8, 9]), run(1, [5, 6, 7, 9, 12, 14])])
    assert [r["flat"] for r in rows] == [True, False]
    assert [(r["nodes_10"], r["nodes_50"], r["nodes_100"], r["nodes_max"]) for r in rows] == [
        (5, 7, 9, 9), (5, 7, 14, 14)]
    text = scaling.format_worker_memory(rows)
    assert "GROWS" in text and text.splitlines()[-1].startswith("NOT flat")


def test_cli_prints_and_writes_each_worker(tmp_path, capsys):
    rc = cli.main(["scaling", "--workers-memory", "100000", "--out", str(tmp_path)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "2 T-CER slices" in out and "verdict" in out and "flat" in out
    rows = json.loads((tmp_path / "results.json").read_text())
    workers = [r for r in rows if r["experiment"] == "workers-memory"]
    assert [(r["worker"], r["run_events"]) for r in workers] == [(0, 50_000), (1, 50_000)]
    samples = [r for r in rows if r["experiment"] == "workers-memory-sample"]
    assert {r["worker"] for r in samples} == {0, 1}
    assert cli.main(["scaling", "--workers-memory", "100000", "--workers", "1"]) == 2
    assert "--workers" in capsys.readouterr().err
    assert cli.main(["scaling", "--workers-memory", "20000"]) == 2
    assert "fewer than" in capsys.readouterr().err
