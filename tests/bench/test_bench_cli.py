"""``cercore-bench`` (cercore.bench.cli, runner, scaling, plots, peers): the experiments run on
small sizes and write JSON, CSV and PNG results; the plug-in protocol; the runner's checks;
pycer when installed. No timing assertions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import BACKENDS

import cercore
from cercore.bench import cli, datasets, peers, runner, scaling, workloads

REPO = Path(__file__).resolve().parents[2]


def test_suite_writes_results(tmp_path, capsys):
    rc = cli.main(["suite", "--dataset", "stock_trace", "--events", "2000", "--workload", "P3",
                   "--workload", "P'3", "--workload", "P'3@2T", "--workload", "Q7",
                   "--repeat", "1", "--out", str(tmp_path)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "P'3@2T" in out and "Q7" in out and "LIMIT 1000" in out
    if len(BACKENDS) == 2:
        assert "cython/python" in out  # the ratio column
    rows = json.loads((tmp_path / "results.json").read_text())
    assert {r["backend"] for r in rows} == set(BACKENDS)
    assert {r["workload"] for r in rows} == {"P3", "P'3", "P'3@2T", "Q7"}
    for r in rows:
        assert r["events"] == 2000 and r["seconds"] > 0
        assert r["enumeration_seconds"] >= 0 and r["peak_tecs_nodes"] >= r["mean_tecs_nodes"]
    p3 = [r for r in rows if r["workload"] == "P3"]
    assert len({r["complex_events"] for r in p3}) == 1 and p3[0]["complex_events"] > 0
    assert (tmp_path / "results.csv").read_text().startswith("backend,")
    pytest.importorskip("matplotlib")  # the figures (the results above are checked without it)
    assert sorted(p.name for p in tmp_path.glob("*.png")) == [
        "fig7_sequence.png", "fig8_window.png", "fig9_operators.png"]
    assert all(p.stat().st_size > 5_000 for p in tmp_path.glob("*.png"))


def test_scaling_writes_results(tmp_path, capsys):
    rc = cli.main(["scaling", "--events", "1500", "--repeat", "1", "--lengths", "1000,3000",
                   "--memory-events", "25000", "--out", str(tmp_path)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "Throughput vs window size" in out and "Memory over one long" in out
    rows = json.loads((tmp_path / "results.json").read_text())
    experiments = {r["experiment"] for r in rows}
    assert experiments == {"backends", "window", "length", "memory"}
    window = [r for r in rows if r["experiment"] == "window"]
    assert sorted({r["x"] for r in window}) == [1, 2, 4, 8, 16]
    assert {r["x"] for r in rows if r["experiment"] == "length"} == {1000, 3000}
    memory = [r for r in rows if r["experiment"] == "memory"]
    assert [r["events"] for r in memory] == [10_000, 20_000, 25_000]
    pytest.importorskip("matplotlib")  # the figures (the results above are checked without it)
    assert sorted(p.name for p in tmp_path.glob("*.png")) == [
        "memory_stream.png", "scaling_backends.png", "scaling_length.png",
        "scaling_window.png"]


def test_default_is_core_and_errors_are_one_line(capsys):
    assert cli.main(["--events", "500", "--repeat", "1", "--query", "s3_sell_buy_buy"]) == 0
    assert "s3_sell_buy_buy" in capsys.readouterr().out
    assert cli.main(["suite", "--workload", "P99"]) == 2
    assert "unknown workload" in capsys.readouterr().err
    assert cli.main(["suite", "--repeat", "0"]) == 2
    assert "--repeat" in capsys.readouterr().err
    assert cli.main(["scaling", "--lengths", "10,x"]) == 2
    assert "--lengths" in capsys.readouterr().err


def test_missing_plugin_exits_2(monkeypatch, capsys):
    monkeypatch.setitem(cli.EXPERIMENTS, "nothere", "cercore.no_such_package.experiment")
    assert cli.main(["nothere", "--x"]) == 2
    err = capsys.readouterr().err
    assert "not available" in err and err.count("\n") == 1
    assert "not available" in cli._plugin_help("cercore.no_such_package.experiment")


def test_plugin_protocol(tmp_path, monkeypatch, capsys):
    (tmp_path / "fake_experiment.py").write_text(textwrap.dedent('''
        """Count to N: a fake experiment.

        More text that is not the help."""
        from cercore.errors import CercoreError

        def add_arguments(parser):
            parser.add_argument("--n", type=int, default=3)

        def run(args):
            if args.n < 0:
                raise CercoreError("n must be >= 0")
            print("counted", args.n)
            return 0
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(cli.EXPERIMENTS, "fake", "fake_experiment")
    assert cli.main(["fake", "--n", "7"]) == 0
    assert "counted 7" in capsys.readouterr().out
    assert cli.main(["fake", "--n", "-1"]) == 2
    assert "n must be >= 0" in capsys.readouterr().err
    assert cli._plugin_help("fake_experiment") == "Count to N: a fake experiment."
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "Count to N: a fake experiment." in capsys.readouterr().out


def test_check_equal_detects_a_disagreement(monkeypatch):
    table = datasets.stock_trace(2_000)
    (w,) = workloads.select("stocks", ["P3"])
    q = cercore.compile(w.text(), datasets.schema("stocks"))
    assert runner.check_equal(q, table, ["python", "python"]) > 0
    real = runner.outputs

    def skewed(query, t, backend):
        start, end, offsets, positions = real(query, t, "python")
        return (start + (backend == "other"), end, offsets, positions)

    monkeypatch.setattr(runner, "outputs", skewed)
    with pytest.raises(cercore.CercoreError, match="disagree"):
        runner.check_equal(q, table, ["python", "other"])


def test_enumeration_time_is_limit_zero_difference():
    (w,) = workloads.select("stocks", ["P3"])
    table = datasets.stock_trace(3_000)
    (m,) = runner.measure(w, table, ["python"], repeat=1)
    zero = cercore.compile(w.text(limit=0), datasets.schema("stocks"))
    assert len(zero.engine().process_arrays(table)) == 0 < m.complex_events
    assert m.enumeration_seconds == max(m.seconds - m.update_seconds, 0)


def test_memory_profile_samples_every_chunk():
    (w,) = workloads.select("stocks", ["P'3"])
    q = cercore.compile(w.text(), datasets.schema("stocks"))
    samples = runner.memory_profile(q, datasets.stocks(25_000), BACKENDS[-1], every=10_000)
    assert [s.events for s in samples] == [10_000, 20_000, 25_000]
    assert all(s.tecs_nodes >= 0 for s in samples)
    # the windowed engine keeps at most a window's worth of nodes, not the whole stream
    assert max(s.tecs_nodes for s in samples) < 25_000
    assert "tECS nodes" in scaling.format_memory(samples)


# pycer (cp313 only) lives in its own venv: .ci/run provisions one and points
# CERCORE_PYCER_PYTHON at it, so these run in CI
PYCER = peers.find_pycer()
needs_pycer = pytest.mark.skipif(PYCER is None, reason="no Python 3.13 with pycer here")


@needs_pycer
def test_pycer_peer_when_installed():
    python = PYCER
    table = datasets.stock_trace(3_000)
    for name in ("P3", "Q4"):
        (w,) = workloads.select("stocks", [name])
        res = peers.run_pycer(python, datasets.DECLARATIONS["stocks"], w.text(), table, 1)
        m = cercore.compile(w.text(), datasets.schema("stocks")).engine().process_arrays(table)
        assert res["events"] == 3_000
        assert [tuple(i) for i in res["intervals"]] == sorted(
            zip(m.start_time.tolist(), m.end_time.tolist())), name


@needs_pycer
def test_pycer_attribute_window_is_exclusive_when_installed():
    """Pins a known difference (README, Performance): pycer drops a complex event whose span
    equals an attribute window exactly; cercore keeps it (CORE §2: end - start <= bound), as
    it does for time windows, where pycer agrees."""
    python = PYCER
    import pyarrow as pa

    events = pa.table({"event_type": ["LOAD", "LOAD"], "id": [1, 2],
                       "plug_timestamp": [100, 110], "value": [80.0, 90.0], "plug_id": [3, 4],
                       "household_id": [0, 2]})
    sch = datasets.schema("smart_homes")
    for window, pycer_count in (("10 [plug_timestamp]", 0), ("10 SECONDS", 1),
                                ("11 [plug_timestamp]", 1)):
        q = f"SELECT * FROM S WHERE (LOAD as a; LOAD as b) WITHIN {window}"
        res = peers.run_pycer(python, datasets.DECLARATIONS["smart_homes"], q, events, 1)
        assert res["complex_events"] == pycer_count, window
        assert len(cercore.compile(q, sch).engine().process_arrays(events)) == 1, window


def test_cogra_experiment_writes_results_and_checks_two_step(tmp_path, capsys):
    out = tmp_path / "cogra"
    rc = cli.main(["cogra", "--events-per-window", "3,6,70", "--windows", "2",
                   "--two-step-max-trends", "100", "--out", str(out), "--no-plot"])
    assert rc == 0
    rows = json.loads((out / "cogra.json").read_text())
    cogra = {(r["semantics"], r["events_per_window"]): r for r in rows
             if r["approach"] == "cogra"}
    two = {(r["semantics"], r["events_per_window"]): r for r in rows
           if r["approach"] == "two-step"}
    assert set(cogra) == {(s, n) for s in ("any", "contiguous") for n in (3, 6, 70)}
    # the baseline ran where a window has at most 100 trends, and agreed with COGRA
    assert set(two) == {("any", 3), ("any", 6), ("contiguous", 3), ("contiguous", 6)}
    assert all(r["equal_results"] for r in two.values())
    assert cogra[("any", 70)]["trends_per_window_bits"] == 70  # 2^70 - 1, exact
    assert all(r["peak_aggregators"] == 1 for r in cogra.values())
    assert (out / "cogra.csv").exists()
    assert cli.main(["cogra", "--semantics", "next"]) == 2
    assert "--semantics" in capsys.readouterr().err


@pytest.mark.spark
def test_spark_experiment_compares_each_plan_with_the_local_engine(tmp_path):
    """``cercore-bench spark`` (own process: it starts and stops its own session) checks the
    Spark results equal to the local engine's and reports each plan (one master here: each
    costs a JVM start)."""
    pytest.importorskip("pyspark")
    out = tmp_path / "spark.json"
    done = subprocess.run([sys.executable, "-m", "cercore.bench.cli", "spark", "--events",
                           "3000", "--repeat", "1", "--cores", "1", "--json", str(out)],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("| ")]
    assert lines[0].startswith("| plan | results | local engine | local[1] |")
    assert [line.split(" | ")[0] for line in lines[1:]] == [
        "| keyed", "| tcer", "| single", "| keyed+ordered", "| tcer+ordered",
        "| keyed+sorted", "| tcer+sorted", "| trends", "| trends-ungrouped"]
    floors = [line for line in done.stdout.splitlines() if line.startswith("- floor")]
    assert len(floors) == 5 and all("local[1] " in line for line in floors)
    assert "exchange" in floors[2] and "statistics job" in floors[3] and "in place" in floors[4]
    assert floors[1].endswith("÷ identity floor on local[1]: 1.00×")
    rows = json.loads(out.read_text())
    assert all(r["results"] > 0 and r["local[1]"]["wall"] > 0 and r["vs_floor"] > 0
               for r in rows)


def test_workers_sweep_runs_every_shape_and_checks_outputs(monkeypatch, capsys):
    """``cercore-bench scaling --workers 2``: every query shape (CEQL, several CEQL queries in
    one engine, trend) with one and two workers, the outputs checked equal (a disagreement is
    an error), the table cut."""
    from cercore.runtime import slices

    monkeypatch.setattr(slices, "MIN_EVENTS_PER_SLICE", 1000)
    table = datasets.stock_trace().slice(0, 6000)
    monkeypatch.setattr(datasets, "stock_trace", lambda replay=1: table)
    cut = []
    original = slices.evaluate_in_slices
    monkeypatch.setattr(slices, "evaluate_in_slices",
                        lambda engine, *a: cut.append(type(engine).__name__) or original(
                            engine, *a))
    assert cli.main(["scaling", "--workers", "2", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    shapes = list(scaling.WORKER_QUERIES) + list(scaling.MULTI_WORKER_QUERIES) + \
        list(scaling.TREND_WORKER_QUERIES)
    assert all(name in out for name in shapes) and "trend, GROUP BY" in shapes
    assert set(cut) == {"Engine", "MultiEngine", "TrendEngine"}
    rows = scaling.workers_sweep(table, 2, repeat=1)
    assert {(r["query"], r["workers"]) for r in rows} == {(s, w) for s in shapes for w in (1, 2)}
    assert all(r["complex_events"] > 0 for r in rows if "no output" not in r["query"])
