"""``cercore-bench`` (cercore.bench.cli): the experiments run on small sizes and write JSON, CSV
and PNG results; the plug-in protocol; pycer when installed. No timing assertions."""

from __future__ import annotations

import json

import pytest

import cercore
from cercore.bench import cli, datasets, peers, workloads
from cercore.runtime.backend import CYTHON_AVAILABLE

BACKENDS = ["python"] + (["cython"] if CYTHON_AVAILABLE else [])
SMALL = 3_000


@pytest.fixture(scope="module")
def tables():
    return {ds: datasets.load(ds, SMALL, seed=1) for ds in ("stock_trace", "stocks",
                                                            "smart_homes", "taxis")}


def test_cli_suite_writes_results(tmp_path, capsys):
    rc = cli.main(["suite", "--dataset", "stock_trace", "--events", "2000", "--workload", "P3",
                   "--workload", "P'3@2T", "--workload", "Q7", "--repeat", "1",
                   "--out", str(tmp_path)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "P3" in out and "Q7" in out
    rows = json.loads((tmp_path / "results.json").read_text())
    assert {r["backend"] for r in rows} == set(BACKENDS)
    assert (tmp_path / "results.csv").read_text().startswith("backend,")
    assert sorted(p.name for p in tmp_path.glob("*.png")) == [
        "stock_trace_operators.png", "stock_trace_sequence.png", "stock_trace_window.png"]


def test_cli_default_and_missing_plugin(capsys):
    assert cli.main(["--events", "500", "--repeat", "1", "--query", "s3_sell_buy_buy"]) == 0
    assert "s3_sell_buy_buy" in capsys.readouterr().out
    import importlib.util

    if importlib.util.find_spec("cercore.network") is None:  # plug-in not in this version
        assert cli.main(["prepp"]) == 2
        assert "not available" in capsys.readouterr().err
    assert cli.main(["suite", "--workload", "P99"]) == 2
    assert "unknown workload" in capsys.readouterr().err


def test_pycer_peer_when_installed():
    python = peers.find_pycer()
    if python is None:
        pytest.skip("no Python 3.13 with pycer here")
    table = datasets.stock_trace(3_000)
    (w,) = workloads.select("stocks", ["P3"])
    res = peers.run_pycer(python, datasets.DECLARATIONS["stocks"], w.text(False), table, 1)
    q = cercore.compile(w.text(False), datasets.schema("stocks"))
    ces = list(q.engine().process(table))
    assert res["intervals"] == sorted([c.start_time, c.end_time] for c in ces)
