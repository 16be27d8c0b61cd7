"""`cercore explain` / `cercore run` accept trend aggregation queries."""

from __future__ import annotations

import json

from cercore.cli import main

SCHEMA = ("CREATE STREAM S { EVENT A {v:int, t:primary_time}, EVENT B {v:int, t:primary_time}, "
          "EVENT C {v:int, t:primary_time} }")
Q = "RETURN COUNT(*), SUM(A.v) PATTERN (SEQ(A+,B))+ SEMANTICS {}"


def test_explain_prints_granularity(capsys):
    assert main(["explain", Q.format("contiguous"), "--schema", SCHEMA]) == 0
    out = capsys.readouterr().out
    assert "granularity: pattern-grained" in out and "why:" in out


def test_run_writes_rows(tmp_path, capsys):
    data = tmp_path / "ev.csv"
    data.write_text("event_type,v,t\n" + "".join(
        f"{k[0].upper()},{v},{k[1:]}\n" for k, v in
        dict(a1=5, b2=3, a3=2, a4=7, c5=0, b6=4, a7=1, b8=6).items()))
    assert main(["run", Q.format("skip-till-any-match"), "--schema", SCHEMA,
                 "-i", str(data)]) == 0
    assert json.loads(capsys.readouterr().out) == {"COUNT(*)": 43, "SUM(A.v)": 388}
    assert main(["run", Q.format("skip-till-next-match"), "--schema", SCHEMA,
                 "-i", str(data), "-f", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ["COUNT(*),SUM(A.v)", "8,69"]


def test_bad_trend_query_is_a_clean_error(capsys):
    assert main(["explain", "RETURN COUNT(*) PATTERN SEQ(A+, B, A)", "--schema", SCHEMA]) != 0
    assert "used twice without renaming" in capsys.readouterr().err
