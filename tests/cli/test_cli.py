"""The ``cercore`` command line: run / explain / demo, output formats, error exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import cercore
from cercore.cli import main
from cercore.cli.demo import DEMO_QUERIES

DECL = "CREATE STREAM S { EVENT A { id:int, v:double }, EVENT B { id:int, v:double } }"
QUERY = "SELECT * FROM S WHERE A AS a ; B AS b FILTER a[v > 1]"
STREAM_CSV = "event_type,id,v\nA,1,2.0\nB,2,0.5\nA,3,0.5\nB,4,1.5\n"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "s.decl").write_text(DECL)
    (tmp_path / "q.ceql").write_text(QUERY + "\n")
    (tmp_path / "events.csv").write_text(STREAM_CSV)
    return tmp_path


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_run_jsonl_inline_text(files, capsys):
    code, out, err = run_cli(capsys, "run", QUERY, "--schema", DECL,
                             "--input", files / "events.csv")
    assert code == 0, err
    got = [json.loads(line) for line in out.splitlines()]
    assert [(d["start"], d["end"], d["positions"]) for d in got] == [(0, 1, [0, 1]),
                                                                     (0, 3, [0, 3])]
    assert got[0] == {"start": 0, "end": 1, "start_time": None, "end_time": None,
                      "positions": [0, 1],
                      "events": [{"type": "A", "position": 0, "attributes": {"id": 1, "v": 2.0}},
                                 {"type": "B", "position": 1,
                                  "attributes": {"id": 2, "v": 0.5}}]}


def test_run_table_from_files(files, capsys):
    code, out, err = run_cli(capsys, "run", files / "q.ceql", "--schema", files / "s.decl",
                             "--input", files / "events.csv", "--format", "table")
    assert code == 0, err
    assert out.splitlines() == [
        "#  start  end  events",
        "-  -----  ---  ----------------------------------------",
        "1      0    1  A(id=1, v=2.0) ; B(id=2, v=0.5)",
        "2      0    3  A(id=1, v=2.0) ; B(id=4, v=1.5)",
    ]


def test_run_csv_to_output_file(files, capsys):
    out_path = files / "out.csv"
    code, out, _ = run_cli(capsys, "run", QUERY, "--schema", DECL, "--input",
                           files / "events.csv", "--format", "csv", "--output", out_path)
    assert code == 0 and out == ""
    lines = out_path.read_text().splitlines()
    assert lines[0] == "start,end,start_time,end_time,positions,events"
    assert lines[1].startswith('0,1,,,"[0,1]","[{""type"":""A""')
    assert len(lines) == 3


def test_run_jsonl_input_with_time_attribute(files, capsys):
    decl = "CREATE STREAM S { EVENT A { id:int, ts:int }, EVENT B { id:int, ts:int } }"
    (files / "e.jsonl").write_text("\n".join(json.dumps(r) for r in [
        {"event_type": "A", "id": 1, "ts": 1000}, {"event_type": "B", "id": 2, "ts": 1500},
        {"event_type": "B", "id": 3, "ts": 4000}]) + "\n")
    code, out, err = run_cli(capsys, "run", "SELECT * FROM S WHERE A ; B WITHIN 2 SECONDS",
                             "--schema", decl, "--input", files / "e.jsonl",
                             "--time-attribute", "ts", "--time-unit", "ms")
    assert code == 0, err
    got = [json.loads(line) for line in out.splitlines()]
    assert [(d["positions"], d["start_time"], d["end_time"]) for d in got] == [
        ([0, 1], 1000, 1500)]


def test_run_reads_stdin(files, capsys, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(STREAM_CSV.encode())))
    code, out, err = run_cli(capsys, "run", QUERY, "--schema", DECL)
    assert code == 0, err
    assert len(out.splitlines()) == 2


def test_on_error_skip_counts(files, capsys):
    (files / "bad.csv").write_text("event_type,id,v\nA,1,2.0\nC,9,1\nB,2,0.5\n")
    code, out, err = run_cli(capsys, "run", QUERY, "--schema", DECL, "--input",
                             files / "bad.csv")
    assert code == 2 and "Traceback" not in err
    assert f"cercore: error: event 1: unknown event type 'C' ({files / 'bad.csv'}, line 3)" \
        in err.splitlines()
    assert "cercore: warning: no WITHIN clause" in err  # compile warnings go to stderr too
    code, out, err = run_cli(capsys, "run", QUERY, "--schema", DECL, "--input",
                             files / "bad.csv", "--on-error", "skip")
    assert code == 0
    assert [json.loads(x)["positions"] for x in out.splitlines()] == [[0, 2]]
    assert "skipped 1 invalid event" in err


def test_syntax_error_exit_2(files, capsys):
    code, out, err = run_cli(capsys, "run", "SELECT * FROM S WHERE A ;; B", "--schema", DECL,
                             "--input", files / "events.csv")
    assert code == 2
    assert out == ""
    assert err.startswith("cercore: error: ")
    assert "Traceback" not in err
    assert "line 1" in err and "^" in err


def test_semantic_and_input_errors_exit_2(files, capsys):
    code, _, err = run_cli(capsys, "explain", "SELECT * FROM S WHERE A AS a FILTER a[w > 1]",
                           "--schema", DECL)
    assert code == 2 and "'w'" in err
    (files / "unk.csv").write_text("event_type,id,vv\nA,1,2\n")
    code, _, err = run_cli(capsys, "run", QUERY, "--schema", DECL, "--input", files / "unk.csv")
    assert code == 2 and "column 'vv'" in err
    code, _, err = run_cli(capsys, "run", QUERY, "--schema", DECL, "--input",
                           files / "missing.csv")
    assert code == 2 and "missing.csv" in err and "Traceback" not in err


def test_usage_error_exit_2(capsys):
    code, _, err = run_cli(capsys, "run", QUERY)
    assert code == 2 and "--schema" in err


def test_explain(files, capsys):
    code, out, err = run_cli(capsys, "explain", files / "q.ceql", "--schema", files / "s.decl")
    assert code == 0, err
    assert "automaton" in out.lower()


def test_version(capsys):
    code, out, _ = run_cli(capsys, "--version")
    assert code == 0 and out.startswith(f"cercore {cercore.__version__}")


def test_demo_limit_1(capsys):
    code, out, err = run_cli(capsys, "demo", "--limit", "1", "--backend", "python")
    assert code == 0, err
    blocks = out.split("\n== ")[1:]
    assert len(blocks) == len(DEMO_QUERIES)
    for block in blocks:
        n = int(block.split("-> ")[1].split(" complex events")[0].replace(",", ""))
        assert n > 0, block
        assert "events/s" in block
        assert "first 1:" in block
        assert sum(line[:1].isdigit() for line in block.splitlines()) == 1


def test_subprocess_module_entry(files):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "cercore", "run", str(files / "q.ceql"),
                        "--schema", str(files / "s.decl"), "--input",
                        str(files / "events.csv")], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert [json.loads(x)["positions"] for x in r.stdout.splitlines()] == [[0, 1], [0, 3]]
    r = subprocess.run([sys.executable, "-m", "cercore.cli", "explain", "SELECT * FROM",
                        "--schema", DECL], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2
    assert r.stderr.startswith("cercore: error: ") and "Traceback" not in r.stderr


def test_run_with_stream_column_and_reorder_slack(tmp_path, capsys):
    decl = ("CREATE STREAM S { EVENT A { v:int, ts:int } } "
            "CREATE STREAM T { EVENT A { v:int, ts:int } }")
    events = tmp_path / "ev.csv"
    events.write_text("event_type,v,ts,src\nA,0,1,S\nA,1,0,T\nA,2,2,\n")
    code, out, _ = run_cli(capsys, "run", "SELECT * FROM S, T WHERE S>A ; T>A", "--schema",
                           decl, "--input", events, "--stream-column", "src")
    assert code == 0
    assert [json.loads(ln)["positions"] for ln in out.splitlines()] == [[0, 1], [0, 2]]
    # evaluated in time order (A with ts 0 first): positions follow the evaluation order
    events.write_text("event_type,v,ts\nA,0,1\nA,1,0\nA,2,2\n")
    code, out, _ = run_cli(capsys, "run", "SELECT * FROM S WHERE A ; A", "--schema", decl,
                           "--time-attribute", "ts", "--input", events, "--reorder-slack", "1")
    assert code == 0
    assert [json.loads(ln)["positions"] for ln in out.splitlines()] == [[0, 1], [1, 2], [0, 2]]


def test_run_several_queries_in_one_pass(files, capsys):
    (files / "late_b.ceql").write_text("SELECT * FROM S WHERE B AS b FILTER b[v > 1]\n")
    code, out, err = run_cli(capsys, "run", files / "q.ceql", files / "late_b.ceql",
                             "--schema", files / "s.decl", "--input", files / "events.csv")
    assert code == 0, err
    got = [(d["query"], d["positions"]) for d in map(json.loads, out.splitlines())]
    assert got == [("q", [0, 1]), ("q", [0, 3]), ("late_b", [3])]
    code, out, err = run_cli(capsys, "run", QUERY, QUERY, "--schema", DECL, "--input",
                             files / "events.csv", "--format", "csv")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("query,start,end,")
    assert [line.split(",")[0] for line in lines[1:]] == ["q0", "q1", "q0", "q1"]


def test_run_parquet_with_dictionary_strings(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    decl = "CREATE STREAM S { EVENT T { name:string, x:int } }"
    table = pa.table({"event_type": pa.array(["T", "T", "T"]).dictionary_encode(),
                      "name": pa.array(["INTC", "MSFT", "QQQ"]).dictionary_encode(),
                      "x": [1, 2, 3]})
    pq.write_table(table, tmp_path / "t.parquet")
    code, out, err = run_cli(capsys, "run", "SELECT * FROM S WHERE T AS a; T AS b FILTER "
                             "a[name = 'INTC'] AND b[name LIKE 'Q+']", "--schema", decl,
                             "--input", tmp_path / "t.parquet")
    assert code == 0, err
    assert [json.loads(line)["positions"] for line in out.splitlines()] == [[0, 2]]


@pytest.mark.parametrize("name, data, message", [
    ("q.ceql", None, "not UTF-8 text (byte 0xff)"),
    ("deep.jsonl", b'{"event_type": "A", "id": ' + b"[" * 5000 + b"]" * 5000 + b"}\n",
     "JSON nested too deeply"),
    ("big.jsonl", b'{"event_type": "A", "id": 1e300, "v": 1.0}\n', "cannot read 1e+300 as int"),
    ("huge.jsonl", b'{"event_type": "A", "id": 1, "v": ' + b"9" * 400 + b"}\n",
     "as double"),
    ("cr.csv", b"event_type,id\r,v\nA,1,2.0\n", "unreadable CSV header"),
    ("bad.csv", b"event_type,id,v\nA,1,\xff\n", "cannot read"),
])
def test_hostile_files_are_clear_errors(tmp_path, capsys, name, data, message):
    """Bad bytes, deep JSON, huge numbers and a broken CSV header are one
    clear error line (exit 2), never a traceback."""
    query = QUERY
    if data is None:  # the query file itself is not UTF-8
        (tmp_path / name).write_bytes(QUERY.encode() + b"\xff")
        query = tmp_path / name
        (tmp_path / "events.csv").write_text(STREAM_CSV)
        source = tmp_path / "events.csv"
    else:
        (tmp_path / name).write_bytes(data)
        source = tmp_path / name
    code, out, err = run_cli(capsys, "run", query, "--schema", DECL, "--input", source)
    assert code == 2, err
    assert message in err and "Traceback" not in err


def test_bad_trend_backend_is_a_cercore_error():
    from cercore.trends import compile_trend

    q = compile_trend("SELECT COUNT(*) FROM S WHERE A+", DECL)
    with pytest.raises(cercore.ConfigError, match="unknown backend .bogus."):
        q.engine("bogus")
    with pytest.raises(cercore.ConfigError, match="reorder_slack needs event time"):
        q.engine(reorder_slack=1)


@pytest.mark.parametrize("queries", [
    ["SELECT * FROM S WHERE A AS a ; A AS b FILTER b.v > a.v WITHIN 3 [ts]"],
    ["SELECT * FROM S WHERE A AS a ; A AS b FILTER b.v > a.v PARTITION BY [k] WITHIN 3 [ts]"],
    ["SELECT * FROM S WHERE A AS a ; A AS b FILTER b.v > a.v WITHIN 3 [ts]",
     "SELECT * FROM S WHERE A AS a ; A AS b FILTER b.v < a.v PARTITION BY [k] WITHIN 5 [ts]"],
])
def test_run_with_workers_prints_what_one_worker_prints(tmp_path, capsys, monkeypatch,
                                                         queries):
    """``--workers 3``: the file of windowed queries, keyed or not, one or several, cut in
    time -- the same lines as one worker."""
    from cercore.runtime import slices

    monkeypatch.setattr(slices, "MIN_EVENTS_PER_SLICE", 10)
    used = []
    original = slices.evaluate_in_slices
    monkeypatch.setattr(slices, "evaluate_in_slices",
                        lambda *a: used.append(a[3]) or original(*a))
    decl = "CREATE STREAM S { EVENT A { v:int, k:int, ts:int } }"
    events = tmp_path / "ev.csv"
    events.write_text("event_type,v,k,ts\n" + "".join(
        f"A,{(i * 7) % 5},{i % 3},{i // 2}\n" for i in range(200)))
    outs = []
    for workers in ("1", "3"):
        code, out, _ = run_cli(capsys, "run", *queries, "--schema", decl, "--input", events,
                               "--workers", workers)
        assert code == 0
        outs.append(out)
    assert outs[0] == outs[1] and len(outs[0].splitlines()) > 50
    assert used == [3]
