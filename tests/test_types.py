"""One meaning of a value of each attribute type (cercore/types.py), whatever path it comes in
by: the stated table of ``coerce``, then the same values through Python records, an Arrow
table and a JSON-lines file, which must accept and reject alike."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cercore
from cercore.input import REJECT_COLUMN
from cercore.io import read_events
from cercore.types import (
    INT64_MAX,
    INT64_MIN,
    NOT_A_VALUE,
    AttrType,
    coerce,
    seconds_to_units,
    type_of_value,
    window_length,
)

INT, DOUBLE, STRING, BOOL = AttrType.INT, AttrType.DOUBLE, AttrType.STRING, AttrType.BOOL
BAD = NOT_A_VALUE

COERCE = [
    # (value, type, expected)
    (7, INT, 7), (np.int32(7), INT, 7), (7.0, INT, 7), (-2.0**63, INT, INT64_MIN),
    (INT64_MAX, INT, INT64_MAX), (INT64_MAX + 1, INT, BAD), (2.0**63, INT, BAD),
    (7.5, INT, BAD), (math.inf, INT, BAD), (math.nan, INT, BAD), (True, INT, BAD),
    (np.bool_(True), INT, BAD), ("7", INT, BAD),
    (2.5, DOUBLE, 2.5), (np.float32(0.5), DOUBLE, 0.5), (7, DOUBLE, 7.0),
    (2**53, DOUBLE, 2.0**53), (2**53 + 1, DOUBLE, BAD), (2**70 + 1, DOUBLE, BAD),
    (10**400, DOUBLE, BAD), (False, DOUBLE, BAD), ("2.5", DOUBLE, BAD),
    ("x", STRING, "x"), (1, STRING, BAD), (True, BOOL, True), (np.bool_(False), BOOL, False),
    (1, BOOL, BAD), ("true", BOOL, BAD),
]


@pytest.mark.parametrize("value, t, expected", COERCE)
def test_coerce_states_what_a_value_of_each_type_is(value, t, expected):
    got = coerce(value, t)
    if expected is BAD:
        assert got is BAD
    else:
        assert got == expected and type(got) is type(expected)


def test_type_of_value():
    assert [type_of_value(v) for v in (True, 3, 2.5, "s", None, b"x")] == [
        BOOL, INT, DOUBLE, STRING, None, None]


@pytest.mark.parametrize("seconds, unit, units, length", [
    (30, "s", 30, 30), (0.1, "ms", 100, 100), (1.5, "s", 1.5, 1), (0.0015, "ms", 1.5, 1),
    (2, "ns", 2_000_000_000, 2_000_000_000), (-1, "s", -1, None), (math.inf, "s", math.inf, None),
    (10**10, "ns", 10**19, None),
    (9.2e9, "ns", 9_200_000_000_000_000_000, 9_200_000_000_000_000_000),
])
def test_time_units_and_window_lengths(seconds, unit, units, length):
    assert seconds_to_units(seconds, unit) == units
    assert window_length(seconds, unit) == length


SCHEMA = cercore.Schema.parse("CREATE STREAM S { EVENT A { i:int, d:double } }")
QUERY = cercore.compile("SELECT * FROM S WHERE A", SCHEMA)

# (attribute, value): each read the same way by records, Arrow and JSON lines
VALUES = [("i", 7), ("i", 7.0), ("i", 7.5), ("i", 2**63), ("d", 3), ("d", 2**53 + 1),
          ("d", 2**70 + 1), ("d", 0.25)]


@pytest.mark.parametrize("attr, value", VALUES)
def test_every_path_reads_a_value_alike(tmp_path, attr, value, backend):
    t = SCHEMA.event_types["A"].attribute_types[attr]
    accepted = coerce(value, t) is not BAD
    other = "d" if attr == "i" else "i"
    record = ("A", {attr: value, other: None})
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps({"event_type": "A", attr: value, other: None}) + "\n")
    runs = {"records": [record]}
    if isinstance(value, float) or -(2**63) <= value < 2**63:  # Arrow holds it as a number
        runs["arrow"] = pa.table({"event_type": ["A"], attr: [value],
                                  other: pa.array([None], SCHEMA.event_types["A"]
                                                  .attribute_types[other].arrow_type())})
    for name, events in runs.items():
        engine = QUERY.engine(backend, on_error="skip")
        got = [ce.positions for ce in engine.process(events)]
        assert got == ([(0,)] if accepted else []), name
    try:
        table = read_events(path, SCHEMA)
        read = [ce.positions for ce in QUERY.engine(backend).process(table)]
    except cercore.EventError:
        read = []
    assert read == ([(0,)] if accepted else []), "jsonl"


# a CSV cell and what it is for each attribute type (None: not a value of the type)
CSV_CELLS = [("i", "7", 7), ("i", "+7", 7), ("i", "7.0", 7), ("i", "1e3", 1000),
             ("i", " 7 ", 7), ("i", "007", 7), ("i", "0x10", 16), ("i", "-7", -7),
             ("i", "7.5", None), ("i", "abc", None), ("i", "1_000", None),
             ("i", "\u0667", None), ("i", "9223372036854775808", None), ("i", "inf", None),
             ("d", "7", 7.0), ("d", "+1.5", 1.5), ("d", ".5", 0.5), ("d", "7.", 7.0),
             ("d", "1E3", 1000.0), ("d", "-inf", -math.inf), ("d", "Infinity", math.inf),
             ("d", "1_0", None), ("d", "0x10", None), ("d", "abc", None)]


@pytest.mark.parametrize("attr, cell, expected", CSV_CELLS)
def test_a_csv_cell_means_one_thing_whichever_path_reads_it(tmp_path, attr, cell, expected):
    """Arrow's CSV reader reads a file when it can; a cell it cannot read (``+7`` in an int
    column) sends the whole file through the csv module's reader. A cell must read the same
    both ways, with ``on_error`` raise or skip: alone in its file, and beside a row that only
    the csv module reads."""
    other = "d" if attr == "i" else "i"
    row = {attr: cell, other: "1"}
    alone = f"event_type,i,d\nA,{row['i']},{row['d']}\n"
    beside = alone + "A,+7,1\n"  # Arrow refuses +7 for an int64: the slow path reads all
    for text in (alone, beside):
        path = tmp_path / "events.csv"
        path.write_text(text)
        for on_error in ("raise", "skip"):
            try:
                got = read_events(path, SCHEMA, on_error=on_error).to_pylist()[0]
            except cercore.EventError:
                got = None
            value = None if got is None or got.get(REJECT_COLUMN) else got[attr]
            assert value == expected, (text, on_error)


@settings(max_examples=400, deadline=None)
@given(st.one_of(
    st.from_regex(r"[ \t]?[+-]?(0[xX][0-9a-fA-F]{1,3}|[0-9]{0,3}\.?[0-9]{0,3}"
                  r"([eE][+-]?[0-9]{1,2})?|inf|nan|Infinity)[ \t]?", fullmatch=True),
    st.text(alphabet="0123456789+-.eExXabcdfinINFty \t", min_size=1, max_size=8)))
def test_the_csv_module_reads_every_cell_arrow_reads_as_arrow_does(cell):
    """What makes the test above hold for any cell: each cell Arrow's CSV reader reads as an
    int64 or a double, the csv module's cell readers read as the same value."""
    import pyarrow.csv as pacsv

    from cercore.input.files import _double_cell, _int_cell

    for arrow_type, read in ((pa.int64(), _int_cell), (pa.float64(), _double_cell)):
        options = pacsv.ConvertOptions(column_types={"x": arrow_type}, null_values=[""])
        try:
            table = pacsv.read_csv(io.BytesIO(f"x\n{cell}\n".encode()),
                                   convert_options=options)
        except pa.ArrowInvalid:
            continue  # Arrow refuses it: the csv module's reading is the only one
        if table.num_rows == 0 or table.column(0)[0].as_py() is None:
            continue  # a blank line or cell
        arrow = table.column(0)[0].as_py()
        mine = read(cell)
        assert mine is not BAD and (mine == arrow or math.isnan(arrow) and math.isnan(mine)), \
            (arrow_type, cell, arrow, mine)


def test_coerce_time_reads_integers_and_instants_exactly():
    """The time attribute's values (cercore.types.coerce_time): integers as ints read them,
    instants as whole units since 1970, nothing else (and no silent rounding)."""
    import datetime as dt

    import pandas as pd

    from cercore.types import NOT_A_VALUE, coerce_time, time_problem

    assert coerce_time(17, "s") == 17 and coerce_time(17.0, "ms") == 17
    for bad in (True, "17", "yesterday", 17.5, object()):
        assert coerce_time(bad, "s") is NOT_A_VALUE
    at = dt.datetime(2024, 3, 1, 9, 30, 2)
    assert coerce_time(at, "s") == 1709285402
    assert coerce_time(at.replace(tzinfo=dt.timezone(dt.timedelta(hours=1))), "s") == \
        1709285402 - 3600
    assert coerce_time("2024-03-01T09:30:02Z", "ms") == 1709285402000
    assert coerce_time(np.datetime64("2024-03-01T09:30:02"), "us") == 1709285402000000
    assert coerce_time(np.datetime64("NaT"), "s") is NOT_A_VALUE
    ns = pd.Timestamp("2024-03-01T09:30:02.000000001")
    assert coerce_time(ns, "ns") == 1709285402000000001
    assert coerce_time(ns, "us") is NOT_A_VALUE
    assert "primary_time(ns)" in time_problem(ns, "us")
    assert coerce_time(dt.datetime(9999, 1, 1), "ns") is NOT_A_VALUE  # beyond int64 ns
    assert "out of range" in time_problem(dt.datetime(9999, 1, 1), "ns")
