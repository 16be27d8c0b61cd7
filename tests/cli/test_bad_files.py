"""A file with a few bad rows (issue 16, item 15): with ``on_error="skip"`` (``cercore run
--on-error skip``) only those rows' events are skipped -- counted as "unreadable in the file",
positions still indexing the file's rows -- and the rest of the file is evaluated; with
"raise" the first bad row stops the run with its line and column."""

from __future__ import annotations

import json

import pytest

import cercore
from cercore.cli import main
from cercore.input import REJECT_COLUMN
from cercore.io import read_events

DECL = "CREATE STREAM S { EVENT A { id:int, v:double }, EVENT B { id:int, v:double } }"
SCHEMA = cercore.Schema.parse(DECL, time_attribute="id")
QUERY = "SELECT * FROM S WHERE A ; B"
CSV = "event_type,id,v\nA,1,2.0\nB,2x,0.5\nA,3,0.5\nB,4\nB,5,1.5\nA,6,nan?\nB,7,1.0\n"
JSONL = ('{"event_type": "A", "id": 1, "v": 2.0}\n{"event_type": "B", "id": "2x"}\n'
         '{"event_type": "A", "id": 3, "v": 0.5}\n{broken\n{"event_type": "B", "id": 5}\n'
         '[1, 2]\n{"event_type": "B", "id": 7, "v": 1.0}\n')
# the same streams with the bad rows' events left out (their positions stay taken)
GOOD = {0: ("A", 1), 2: ("A", 3), 4: ("B", 5), 6: ("B", 7)}


@pytest.fixture(params=["csv", "jsonl"])
def bad_file(request, tmp_path):
    path = tmp_path / f"events.{request.param}"
    path.write_text(CSV if request.param == "csv" else JSONL)
    return path


def test_raise_names_the_first_bad_row(bad_file):
    with pytest.raises(cercore.EventError, match=r"line [23].*column 'id': cannot read '2x'"):
        read_events(bad_file, SCHEMA)


def test_skip_skips_the_bad_rows_only(bad_file, backend):
    table = read_events(bad_file, SCHEMA, on_error="skip")
    assert table.num_rows == 7 and REJECT_COLUMN in table.column_names
    engine = cercore.compile(QUERY, SCHEMA).engine(backend, on_error="skip")
    got = sorted((ce.start, ce.end) for ce in engine.process(table))
    assert got == [(0, 4), (0, 6), (2, 4), (2, 6)]  # positions index the file's rows
    assert engine.stats["skipped_by_reason"] == {"unreadable in the file": 3}
    assert all(pos in GOOD for s, e in got for pos in (s, e))
    # an engine that raises stops at the first rejected row, after the good ones before it
    strict = cercore.compile(QUERY, SCHEMA).engine(backend)
    with pytest.raises(cercore.EventError, match="event 1: .*cannot read '2x'") as info:
        list(strict.process(table))
    assert info.value.reason == "unreadable in the file"
    # with a reorder slack (the records path) the same events are skipped
    slack = cercore.compile(QUERY, SCHEMA).engine(backend, on_error="skip", reorder_slack=0)
    assert sorted((ce.start, ce.end) for ce in list(slack.process(table)) + slack.flush()) \
        == got
    assert slack.stats["skipped_by_reason"] == {"unreadable in the file": 3}


def test_a_clean_file_has_no_reject_column(tmp_path):
    path = tmp_path / "ok.csv"
    path.write_text("event_type,id,v\nA,1,2.0\n")
    assert REJECT_COLUMN not in read_events(path, SCHEMA, on_error="skip").column_names


def test_cli_on_error_skip_skips_cells_not_files(bad_file, capsys):
    code = main(["run", QUERY, "--schema", DECL, "--input", str(bad_file), "--on-error", "skip"])
    out, err = capsys.readouterr()
    assert code == 0 and "Traceback" not in err
    assert sorted(json.loads(x)["positions"] for x in out.splitlines()) == \
        [[0, 4], [0, 6], [2, 4], [2, 6]]
    assert "skipped 3 invalid event" in err
    code = main(["run", QUERY, "--schema", DECL, "--input", str(bad_file)])
    out, err = capsys.readouterr()
    assert code == 2 and "cannot read '2x' as int" in err and "Traceback" not in err
