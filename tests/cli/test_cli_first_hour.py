"""What a new user meets first on the command line: help with examples, errors that name the
file and line of a bad event, tables of several queries."""

from __future__ import annotations

import pytest

from cercore.cli import main

DECL = "CREATE STREAM S { EVENT BUY { v:int, ts:primary_time } }"


@pytest.fixture
def decl(tmp_path):
    path = tmp_path / "s.decl"
    path.write_text(DECL)
    return path


def test_help_shows_examples(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "cercore demo" in out and "cercore run" in out
    assert "primary_time(ms)" in out


@pytest.mark.parametrize("name, text, spot", [
    ("back.csv", "event_type,v,ts\nBUY,1,5\n\nBUY,2,3\n", "line 4"),
    ("back.jsonl", '{"event_type":"BUY","v":1,"ts":5}\n\n{"event_type":"BUY","v":1,"ts":3}\n',
     "line 3"),
    ("back.json", '[{"event_type":"BUY","v":1,"ts":5},\n{"event_type":"BUY","v":1,"ts":3}]',
     "item 2"),
])
def test_an_event_error_in_file_mode_names_file_and_line(tmp_path, decl, capsys, name, text,
                                                         spot):
    path = tmp_path / name
    path.write_text(text)
    assert main(["run", "SELECT * FROM S WHERE BUY", "--schema", str(decl),
                 "--input", str(path)]) == 2
    err = capsys.readouterr().err
    assert "time goes backwards" in err
    assert f"({path}, {spot})" in err


def test_a_table_of_several_queries_has_a_query_column(tmp_path, decl, capsys):
    path = tmp_path / "ok.csv"
    path.write_text("event_type,v,ts\nBUY,1,5\nBUY,2,6\n")
    assert main(["run", "SELECT * FROM S WHERE BUY", "SELECT * FROM S WHERE BUY AS a ; BUY AS b",
                 "--schema", str(decl), "--input", str(path), "--format", "table"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["#", "query", "start", "end", "events"]
    rows = [line.split(None, 4) for line in lines[2:]]
    assert [r[1] for r in rows] == ["q0", "q0", "q1"]
    assert all(not r[4].startswith("[") for r in rows)  # the query is no event
    assert rows[2][4] == "BUY(v=1, ts=5) ; BUY(v=2, ts=6)"


@pytest.mark.parametrize("workers", ["1", "3"])
def test_progress_on_a_file_read_whole_changes_no_output(capsys, monkeypatch, workers):
    """--progress reports on stderr what the input consumed, batch by batch (with workers,
    from each T-CER run's thread: the file is still cut in time): the complex events are
    those of one pass (--no-progress), in the same order."""
    from pathlib import Path

    from cercore.runtime import slices

    data = Path(__file__).resolve().parents[2] / "cercore" / "data"
    argv = ["run", "SELECT * FROM S WHERE BUY AS b ; SELL AS s PARTITION BY [name] "
            "WITHIN 2 SECONDS", "--schema", str(data / "stocks.decl"),
            "--input", str(data / "stock_trace_prefix.csv"), "--workers", workers]
    monkeypatch.setattr(slices, "MIN_EVENTS_PER_SLICE", 4000)
    assert main(argv + ["--no-progress"]) == 0
    plain = capsys.readouterr()
    assert "events (" not in plain.err
    cut = []
    original = slices.evaluate_in_slices
    monkeypatch.setattr(slices, "evaluate_in_slices",
                        lambda *a: cut.append(a[3]) or original(*a))
    assert main(argv + ["--progress"]) == 0
    shown = capsys.readouterr()
    assert shown.out == plain.out and shown.out.count("\n") > 1000
    done = [int(x.split(" / ")[0].split()[-1].replace(",", "")) for x in shown.err.split("\r")
            if " / 24,887 events" in x]
    assert len(done) >= 2 and done == sorted(done) and done[-1] == 24_887
    assert cut == ([] if workers == "1" else [3])


def test_advance_takes_a_timestamp(tmp_path, capsys):
    decl = tmp_path / "s.decl"
    decl.write_text("CREATE STREAM S { EVENT HOT { id:int, ts:primary_time(s) }, "
                    "EVENT COOL { id:int, ts:primary_time(s) } }")
    data = tmp_path / "e.csv"
    data.write_text("event_type,id,ts\nHOT,1,2024-03-01T09:30:00\n")
    query = "SELECT * FROM S WHERE HOT AS h ; ABSENT(COOL) WITHIN 30 SECONDS PARTITION BY [id]"
    argv = ["run", query, "--schema", str(decl), "--input", str(data)]
    assert main(argv + ["--advance", "2024-03-01T09:30:31"]) == 0
    assert '"start_time":"2024-03-01T09:30:00"' in capsys.readouterr().out
    assert main(argv + ["--advance", "2024-03-01T09:30:30"]) == 0  # the span has not passed
    assert capsys.readouterr().out == ""


def test_the_cli_reference_names_every_option():
    """docs/cli.md lists every option of run, explain and demo (the parser is the truth)."""
    import argparse
    from pathlib import Path

    from cercore.cli import build_parser

    page = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for command in ("run", "explain", "demo"):
        assert f"cercore {command}" in page
        for action in sub.choices[command]._actions:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help":
                    assert f"`{option}" in page or f" {option} " in page \
                        or f"[{option}" in page, (command, option)
