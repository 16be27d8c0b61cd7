"""A file with a few bad rows: with ``on_error="skip"`` (``cercore run
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


# ---- bytes that are not UTF-8, and a byte order mark -----------------------------------------
# a byte that is not UTF-8 (0xff) on line 2 of a JSON Lines file, and a BOM before line 1
NOT_UTF8 = (b'\xef\xbb\xbf{"event_type": "A", "id": 1, "v": 2.0}\n'
            b'{"event_type": "B", "id": 2, "v": "\xff"}\n{"event_type": "B", "id": 3, "v": 1.0}\n')


def test_a_jsonl_line_that_is_not_utf8_is_one_bad_row(tmp_path, backend, capsys):
    path = tmp_path / "events.jsonl"
    path.write_bytes(NOT_UTF8)
    with pytest.raises(cercore.EventError, match=r"events.jsonl, line 2: not UTF-8 text "
                                                 r"\(byte 0xff\)"):
        read_events(path, SCHEMA)
    table = read_events(path, SCHEMA, on_error="skip")
    assert table.num_rows == 3
    engine = cercore.compile(QUERY, SCHEMA).engine(backend, on_error="skip")
    assert [ce.positions for ce in engine.process(table)] == [(0, 2)]
    assert engine.stats["skipped_by_reason"] == {"unreadable in the file": 1}
    assert engine.input.skips.examples == [
        "event 1: " + str(path) + ", line 2: not UTF-8 text (byte 0xff)"]
    with pytest.raises(cercore.EventError, match="event 1: .*line 2: not UTF-8 text"):
        list(cercore.compile(QUERY, SCHEMA).engine(backend).process(table))
    # the CLI: one skipped row, or exit 2 naming the line
    code = main(["run", QUERY, "--schema", DECL, "--input", str(path), "--on-error", "skip"])
    out, err = capsys.readouterr()
    assert code == 0 and [json.loads(x)["positions"] for x in out.splitlines()] == [[0, 2]]
    assert "skipped 1 invalid event" in err and "Traceback" not in err
    code = main(["run", QUERY, "--schema", DECL, "--input", str(path)])
    out, err = capsys.readouterr()
    assert code == 2 and "line 2: not UTF-8 text" in err and "Traceback" not in err


def test_a_json_array_that_is_not_utf8_is_still_a_bad_file(tmp_path):
    # one JSON document: no row to skip alone
    path = tmp_path / "events.json"
    path.write_bytes(b'[{"event_type": "A", "id": 1, "v": "\xff"}]')
    with pytest.raises(cercore.EventError, match="line 1: not UTF-8 text"):
        read_events(path, SCHEMA, on_error="skip")


@pytest.mark.parametrize("text, where", [
    ('{"event_type": null, "id": 1, "v": 2.0}\n', "line 1"),
    ('\n{"id": 1}\n{"event_type": null, "id": 2}\n', "line 3"),
    ('[{"event_type": null, "id": 1, "v": 2.0}]', "item 1"),
])
def test_a_null_event_type_is_named(tmp_path, text, where):
    path = tmp_path / "events.json"
    path.write_text(text)
    for on_error in ("raise", "skip"):
        with pytest.raises(cercore.EventError,
                           match=f"events.json, {where}: 'event_type' .* is null") as info:
            read_events(path, SCHEMA, on_error=on_error)
        assert "key" not in str(info.value)
    path.write_text('{"id": 1, "v": 2.0}\n')  # no type key at all: said so
    with pytest.raises(cercore.EventError, match="no 'event_type' key"):
        read_events(path, SCHEMA)
