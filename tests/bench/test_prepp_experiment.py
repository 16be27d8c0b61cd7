"""``cercore-bench prepp``: the plug-in protocol and a tiny run of every sweep."""

from __future__ import annotations

import json

import pytest

from cercore.bench import prepp as experiment
from cercore.bench.cli import main as bench_main


def test_plugin_protocol():
    assert experiment.__doc__.splitlines()[0].startswith("PrePP sweeps")
    assert callable(experiment.add_arguments) and callable(experiment.run)


def test_tiny_sweeps_write_results(tmp_path):
    rc = bench_main(["prepp", "--repeats", "1", "--types", "3", "--samples", "8", "--topk", "2",
                     "--values", "3,4", "--sweep", "plan-time", "--out", str(tmp_path),
                     "--no-plots"])
    assert rc == 0
    rows = json.loads((tmp_path / "prepp_plan-time.json").read_text())
    assert {r["planner"] for r in rows} == {"sampling", "greedy", "exact"}
    assert all(r["vs_exact"] >= 1 - 1e-9 for r in rows)
    pytest.importorskip("matplotlib")  # the second sweep draws its plot
    rc = bench_main(["prepp", "--repeats", "2", "--types", "4", "--samples", "8", "--topk", "2",
                     "--values", "0.2,1.0", "--sweep", "event-node-ratio", "--out",
                     str(tmp_path)])
    assert rc == 0
    rows = json.loads((tmp_path / "prepp_event-node-ratio.json").read_text())
    assert (tmp_path / "prepp_event-node-ratio.png").stat().st_size > 0
    assert (tmp_path / "prepp_event-node-ratio.csv").read_text().startswith("event_node_ratio")
    by = {(r["event_node_ratio"], r["planner"]): r["ratio_mean"] for r in rows}
    for v in (0.2, 1.0):
        assert by[(v, "push_all")] == 1
        assert by[(v, "sampling")] <= by[(v, "window")] <= 1


def test_bad_arguments(capsys):
    assert bench_main(["prepp", "--types", "1"]) == 2
    assert "--types" in capsys.readouterr().err
