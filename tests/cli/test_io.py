"""cercore.io: reading CSV / JSON Lines / Parquet into typed Arrow tables; writing complex
events."""

from __future__ import annotations

import csv
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cercore
from cercore.io import format_table, guess_format, read_events, write_complex_events

DECL = ("CREATE STREAM S { EVENT BUY { id:int, name:string, price:double, ok:bool, t:int }, "
        "EVENT SELL { id:int, name:string, price:double, t:int }, EVENT PING { seq:int } }")

ROWS = [
    {"event_type": "BUY", "id": 1, "name": "INTC", "price": 27.8, "ok": True, "t": 10,
     "seq": None},
    {"event_type": "SELL", "id": 2, "name": "RIMM", "price": 115.0, "ok": None, "t": 11,
     "seq": None},
    {"event_type": "PING", "id": None, "name": None, "price": None, "ok": None, "t": None,
     "seq": 7},
    {"event_type": "BUY", "id": 3, "name": "a, \"quoted\" name", "price": 3.0, "ok": False,
     "t": 12, "seq": None},
]
COLUMNS = ["event_type", "id", "name", "price", "ok", "t", "seq"]


@pytest.fixture
def schema() -> cercore.Schema:
    return cercore.Schema.parse(DECL)


def write_csv(path, rows, columns=COLUMNS):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for r in rows:
            w.writerow(["" if r.get(c) is None else
                        ("true" if r[c] is True else "false" if r[c] is False else r[c])
                        for c in columns])


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n")


def write_parquet(path, rows):
    pq.write_table(pa.Table.from_pylist(rows), path)


EXPECTED_TYPES = {"event_type": pa.string(), "id": pa.int64(), "name": pa.string(),
                  "price": pa.float64(), "ok": pa.bool_(), "t": pa.int64(), "seq": pa.int64()}


@pytest.mark.parametrize("suffix,writer", [(".csv", write_csv), (".jsonl", write_jsonl),
                                           (".ndjson", write_jsonl), (".parquet", write_parquet),
                                           (".pq", write_parquet)])
def test_round_trip(tmp_path, schema, suffix, writer):
    path = tmp_path / f"events{suffix}"
    writer(path, ROWS)
    table = read_events(path, schema)
    assert table.num_rows == len(ROWS)
    for name in table.column_names:
        want = EXPECTED_TYPES[name]
        if suffix in (".parquet", ".pq") and want == pa.string():
            # Parquet strings are read as dictionaries from the file's dictionary pages
            want = pa.dictionary(pa.int32(), pa.string())
        assert table.schema.field(name).type == want, name
    got = table.to_pylist()
    for row, want in zip(got, ROWS):
        assert {k: v for k, v in row.items() if v is not None} == \
            {k: v for k, v in want.items() if v is not None}


def test_format_argument_overrides_extension(tmp_path, schema):
    path = tmp_path / "events.txt"
    write_csv(path, ROWS)
    assert read_events(path, schema, format="csv").num_rows == 4
    with pytest.raises(cercore.CercoreError, match="cannot tell the format"):
        read_events(path, schema)


def test_read_from_binary_file_object(schema):
    data = b"event_type,id,price\nBUY,1,2.5\n"
    assert read_events(io.BytesIO(data), schema, format="csv").to_pylist() == [
        {"event_type": "BUY", "id": 1, "price": 2.5}]
    with pytest.raises(cercore.CercoreError, match="format"):
        read_events(io.BytesIO(data), schema)


def test_guess_format():
    assert [guess_format(p) for p in ["a.csv", "b.JSONL", "c.ndjson", "d.json", "e.parquet",
                                      "f.pq"]] == ["csv", "jsonl", "jsonl", "jsonl", "parquet",
                                                   "parquet"]


def test_csv_types_and_nulls(tmp_path, schema):
    path = tmp_path / "e.csv"
    path.write_text("event_type,id,price,name,ok\nBUY,5,7,,true\nSELL,,1e2,\"\",\n")
    table = read_events(path, schema)
    assert table.schema.field("price").type == pa.float64()  # "7" read as double
    assert table.to_pylist() == [
        {"event_type": "BUY", "id": 5, "price": 7.0, "name": None, "ok": True},
        {"event_type": "SELL", "id": None, "price": 100.0, "name": "", "ok": None},
    ]


def test_json_array_file(tmp_path, schema):
    path = tmp_path / "e.json"
    path.write_text(json.dumps([{"event_type": "BUY", "id": 1}, {"event_type": "PING",
                                                                 "seq": 2}]))
    assert read_events(path, schema).to_pylist() == [
        {"event_type": "BUY", "id": 1, "seq": None}, {"event_type": "PING", "id": None, "seq": 2}]


def test_jsonl_int_accepts_integral_float_and_double_accepts_int(tmp_path, schema):
    path = tmp_path / "e.jsonl"
    path.write_text('{"event_type": "BUY", "id": 4.0, "price": 3}\n')
    assert read_events(path, schema).to_pylist() == [
        {"event_type": "BUY", "id": 4, "price": 3.0}]


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_line_separators_json_and_csv_allow_inside_a_value(tmp_path, schema, suffix):
    """JSON Lines ends a line at "\n" only, and a JSON string may hold U+2028, U+2029 and
    U+0085 as they are (CSV too, unquoted): such a value is read whole, on its own line."""
    names = ["a\u2028b", "c\u2029d", "e\x85f", "g\x1ch"]
    path = tmp_path / f"e{suffix}"
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps({"event_type": "BUY", "id": i, "name": n},
                                           ensure_ascii=False) + "\n"
                                for i, n in enumerate(names)), encoding="utf-8")
    else:
        path.write_text("event_type,id,name\n" + "".join(f"BUY,{i},{n}\n"
                                                         for i, n in enumerate(names)),
                        encoding="utf-8")
    table = read_events(path, schema)
    assert table.column("name").to_pylist() == names
    assert table.column("id").to_pylist() == [0, 1, 2, 3]


@pytest.mark.parametrize("suffix,writer", [(".csv", write_csv), (".jsonl", write_jsonl),
                                           (".parquet", write_parquet)])
def test_unknown_column(tmp_path, schema, suffix, writer):
    path = tmp_path / f"e{suffix}"
    writer(path, [{"event_type": "BUY", "id": 1, "nme": "x"}], ["event_type", "id", "nme"]) \
        if writer is write_csv else writer(path, [{"event_type": "BUY", "id": 1, "nme": "x"}])
    with pytest.raises(cercore.EventError, match=r"column 'nme' .*did you mean 'name'") as e:
        read_events(path, schema)
    assert e.value.field == "nme"


def test_missing_type_column(tmp_path, schema):
    path = tmp_path / "e.csv"
    path.write_text("id,price\n1,2\n")
    with pytest.raises(cercore.EventError, match="no 'event_type' column"):
        read_events(path, schema)
    path.write_text("kind,id\nBUY,2\n")
    assert read_events(path, schema, type_column="kind").column_names == ["kind", "id"]


def test_csv_bad_value_names_line_and_column(tmp_path, schema):
    path = tmp_path / "e.csv"
    path.write_text("event_type,id,price\nBUY,1,2.5\nBUY,2,abc\n")
    with pytest.raises(cercore.EventError) as e:
        read_events(path, schema)
    msg = str(e.value)
    assert "line 3" in msg and "'price'" in msg and "'abc'" in msg and "double" in msg
    assert e.value.field == "price"


def test_csv_bad_bool_and_int(tmp_path, schema):
    path = tmp_path / "e.csv"
    path.write_text("event_type,ok\nBUY,maybe\n")
    with pytest.raises(cercore.EventError, match=r"line 2.*'ok'.*'maybe' as bool"):
        read_events(path, schema)
    path.write_text("event_type,id\nBUY,1.5\n")
    with pytest.raises(cercore.EventError, match=r"line 2.*'id'.*'1.5' as int"):
        read_events(path, schema)


def test_csv_wrong_field_count(tmp_path, schema):
    path = tmp_path / "e.csv"
    path.write_text("event_type,id\nBUY,1\nBUY,2,3\n")
    with pytest.raises(cercore.EventError, match="line 3: expected 2 fields, found 3"):
        read_events(path, schema)


@pytest.mark.parametrize("line,pattern", [
    ('{"event_type": "BUY", "id": "7"}', r"line 2, column 'id': cannot read '7' as int"),
    ('{"event_type": "BUY", "ok": 1}', r"line 2, column 'ok': cannot read 1 as bool"),
    ('{"event_type": "BUY", "name": 5}', r"line 2, column 'name': cannot read 5 as string"),
    ('{"event_type": "BUY", "id": 1', r"line 2: invalid JSON"),
    ('[1, 2]', r"line 2: expected a JSON object"),
    ('{"event_type": 3}', r"line 2: 'event_type' must be a string"),
])
def test_jsonl_bad_values(tmp_path, schema, line, pattern):
    path = tmp_path / "e.jsonl"
    path.write_text('{"event_type": "BUY", "id": 1}\n' + line + "\n")
    with pytest.raises(cercore.EventError, match=pattern):
        read_events(path, schema)


def test_parquet_type_checks(tmp_path, schema):
    path = tmp_path / "e.parquet"
    pq.write_table(pa.table({"event_type": ["BUY"], "id": pa.array([1], pa.int32()),
                             "price": pa.array([2], pa.int16())}), path)
    table = read_events(path, schema)
    assert table.schema.field("id").type == pa.int64()
    assert table.schema.field("price").type == pa.float64()
    pq.write_table(pa.table({"event_type": ["BUY"], "id": ["x"]}), path)
    with pytest.raises(cercore.EventError, match=r"column 'id' has type string, expected int"):
        read_events(path, schema)
    pq.write_table(pa.table({"event_type": ["BUY", "BUY"], "id": [1.0, 2.5]}), path)
    with pytest.raises(cercore.EventError, match=r"row 1, column 'id': cannot read 2.5 as int"):
        read_events(path, schema)


def test_stock_trace_reads(schema):
    from cercore.cli.demo import stock_schema, stock_trace

    table = stock_trace(stock_schema())
    assert table.num_rows == 24_887
    assert table.column_names == ["event_type", "id", "name", "volume", "price", "stock_time"]
    assert table.schema.field("stock_time").type == pa.int64()


# ---- writers ----------------------------------------------------------------------------
def fake_ces():
    events = {0: cercore.Event("SELL", 0, {"name": "INTC", "price": 27.8, "t": 1}),
              2: cercore.Event("BUY", 2, {"name": "RIMM", "price": 115.0, "t": 3}),
              3: cercore.Event("BUY", 3, {"name": "QQQ", "price": 36.25, "t": None})}
    return [cercore.ComplexEvent(0, 2, (0, 2), 1, 3, events.__getitem__),
            cercore.ComplexEvent(0, 3, (0, 2, 3), 1, None, events.__getitem__)]


def test_write_jsonl(tmp_path):
    path = tmp_path / "out.jsonl"
    assert write_complex_events(fake_ces(), path, "jsonl") == 2
    lines = path.read_text().splitlines()
    assert [json.loads(x) for x in lines] == [ce.to_dict() for ce in fake_ces()]
    assert json.loads(lines[0])["events"][1] == {
        "type": "BUY", "position": 2, "attributes": {"name": "RIMM", "price": 115.0, "t": 3}}


def test_write_jsonl_numpy_values():
    import numpy as np

    ev = cercore.Event("BUY", 0, {"n": np.int64(3), "p": np.float64(1.5), "b": np.bool_(True)})
    ce = cercore.ComplexEvent(0, 0, (0,), None, None, lambda p: ev)
    buf = io.StringIO()
    write_complex_events([ce], buf, "jsonl")
    assert json.loads(buf.getvalue())["events"][0]["attributes"] == {"n": 3, "p": 1.5, "b": True}


def test_write_csv():
    buf = io.StringIO()
    assert write_complex_events(fake_ces(), buf, "csv") == 2
    rows = list(csv.reader(io.StringIO(buf.getvalue())))
    assert rows[0] == ["start", "end", "start_time", "end_time", "positions", "events"]
    assert rows[1][:5] == ["0", "2", "1", "3", "[0,2]"]
    assert rows[2][:5] == ["0", "3", "1", "", "[0,2,3]"]
    assert json.loads(rows[2][5])[2]["attributes"] == {"name": "QQQ", "price": 36.25, "t": None}


def test_write_table():
    buf = io.StringIO()
    assert write_complex_events(fake_ces(), buf, "table", width=120) == 2
    assert buf.getvalue().splitlines() == [
        "#  start  end  events",
        "-  -----  ---  ----------------------------------------",
        "1      0    2  SELL(name=INTC, price=27.8, t=1) ; BUY(name=RIMM, price=115.0, t=3)",
        "2      0    3  SELL(name=INTC, price=27.8, t=1) ; BUY(name=RIMM, price=115.0, t=3) ; "
        "BUY(name=QQQ, price=36.25)",
    ]


def test_table_wraps_and_truncates():
    evs = [cercore.Event("BUY", i, {"name": "INTC", "price": 27.5 + i / 100}) for i in range(40)]
    ce = cercore.ComplexEvent(0, 39, tuple(range(40)), None, None, lambda p: evs[p])
    text = format_table([ce], width=80, max_lines=3)
    lines = text.splitlines()
    assert len(lines) == 2 + 3
    assert all(len(x) <= 80 for x in lines)
    assert lines[2].startswith("1      0   39  BUY(name=INTC, price=27.5) ; ")
    assert lines[3].startswith(" " * 15 + "BUY(")
    assert lines[4].endswith("more events)")
    shown = text.count("BUY(")
    assert f"+{40 - shown} more events" in lines[4]


def test_table_empty_and_stdout(capsys):
    assert write_complex_events([], None, "table") == 0
    assert capsys.readouterr().out == "(no complex events)\n"
    write_complex_events(fake_ces()[:1], "-", "jsonl")
    assert json.loads(capsys.readouterr().out)["positions"] == [0, 2]


def test_unknown_output_format():
    with pytest.raises(cercore.CercoreError, match="unknown output format"):
        write_complex_events([], None, "xml")
