"""A stray value in a pandas column: a frame Arrow cannot convert as a whole
(an object column mixing types, an int beyond int64) is read row by row, and that reading must
give what the columnar path gives on the frame without the bad rows -- whole-number doubles in
int attributes accepted, cells of attributes the row's type does not declare ignored, the
stray value rejected (or skipped) at its own row only. A reorder slack reads tables row by row
too, through the same conversion."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import BACKENDS

import cercore
from cercore.errors import EventError
from cercore.input.tabular import to_arrow
from cercore.types import AttrType

STOCKS = cercore.Schema.parse(resources.files("cercore").joinpath("data/stocks.decl")
                              .read_text(), time_unit="ms")
TWO = cercore.Schema.parse("CREATE STREAM S { EVENT A { x:int, s:string, t:primary_time }, "
                           "EVENT B { x:int, y:int, w:double, t:primary_time } }")


def complex_events(q, events, backend: str, on_error: str = "skip", **kw):
    """(intervals and positions of the complex events, skip count or the error's position)
    of one run; in raise mode the complex events reported before the error."""
    engine = q.engine(backend, on_error=on_error, **kw)
    out = []
    try:
        for ce in engine.process(events):
            out.append((ce.start, ce.end, ce.positions))
        if kw.get("reorder_slack") is not None:
            out += [(ce.start, ce.end, ce.positions) for ce in engine.flush()]
    except EventError as e:
        return out, ("raised at", e.position)
    return out, engine.stats["skipped"]


# ---- a mixed object column, an int beyond int64 ----------------------------------------------
def stocks_frame() -> pd.DataFrame:
    return pd.DataFrame({"event_type": ["SELL", "BUY", "BUY"],
                         "id": pd.Series([1, "abc", 3], dtype=object), "name": ["A", "B", "C"],
                         "volume": [1.0, 2.0, 3.0], "price": [1.0, 2.0, 3.0],
                         "stock_time": [0, 1, 2]})


def test_whole_number_doubles_of_another_column_are_ints(backend):
    q = cercore.compile("SELECT * FROM S WHERE SELL ; BUY", STOCKS)
    frame = stocks_frame()
    engine = q.engine(backend, on_error="skip")
    assert [ce.positions for ce in engine.process(frame)] == [(0, 2)]
    assert engine.stats["skipped_by_reason"] == {"wrong type": 1}
    with pytest.raises(EventError, match=r"event 1: BUY\.id must be int, got str 'abc'"):
        list(q.engine(backend).process(frame))
    # the same frame without the stray row, read by Arrow, gives the same events
    assert complex_events(q, frame.drop(index=1).astype({"id": "int64"}), backend) == \
        ([(0, 1, (0, 1))], 0)


def test_a_column_only_another_type_declares_is_ignored(backend):
    q = cercore.compile("SELECT * FROM S WHERE A ; B", "CREATE STREAM S { EVENT A { x:int, "
                        "t:primary_time }, EVENT B { x:int, y:int, t:primary_time } }")
    frame = pd.DataFrame({"event_type": ["A", "B", "B"],
                          "x": pd.Series([1, "abc", 3], dtype=object), "y": [7, 0, 8],
                          "t": [0, 1, 2]})
    assert complex_events(q, frame, backend) == ([(0, 2, (0, 2))], 1)
    assert complex_events(q, frame, backend, "raise") == ([], ("raised at", 1))


def test_a_reorder_slack_reads_a_table_as_the_columnar_path(backend):
    # the same row-by-row reading: int columns with nulls (doubles in pandas) and cells of
    # other types' attributes used to reject good events there too
    q = cercore.compile("SELECT * FROM S WHERE A ; B FILTER B[y > 3]", TWO)
    frame = pd.DataFrame({"event_type": ["A", "B", "B"], "x": [1, None, 3], "y": [7, 0, 8],
                          "s": ["a", "b", None], "w": [0.5, 1.0, 2.0], "t": [0, 1, 2]})
    assert frame["x"].dtype == np.float64
    columnar = complex_events(q, frame, backend)
    assert columnar == ([(0, 2, (0, 2))], 0)
    assert complex_events(q, frame, backend, reorder_slack=1) == columnar


def test_a_column_no_type_declares_is_an_error_on_both_paths(backend):
    q = cercore.compile("SELECT * FROM S WHERE A ; B", TWO)
    frame = pd.DataFrame({"event_type": ["A", "B"], "x": [1, 2], "y": [7, 8], "t": [0, 1],
                          "zz": [1, 2]})
    stray = frame.assign(x=pd.Series([1, "abc"], dtype=object))
    for events, kw in [(frame, {}), (stray, {}), (frame, {"reorder_slack": 1})]:
        with pytest.raises(EventError, match="column 'zz' is not an attribute of any event"):
            list(q.engine(backend, on_error="skip", **kw).process(events))


def test_a_mixed_column_reads_each_value_as_its_own_kind(backend):
    # 3.0 next to a string in an int column is the int 3, as in a double column; 2**63 is a
    # double attribute's exact value; True is no int
    q = cercore.compile("SELECT * FROM S WHERE B", TWO)
    frame = pd.DataFrame({"event_type": ["B"] * 4,
                          "x": pd.Series([3.0, "abc", True, 4], dtype=object),
                          "y": [1, 2, 3, 4], "w": pd.Series([2**63, 1.0, 2.0, 3.0], dtype=object),
                          "t": [0, 1, 2, 3]})
    engine = q.engine(backend, on_error="skip")
    got = [ce.events[0].attributes for ce in engine.process(frame)]
    assert got == [{"x": 3, "y": 1, "w": float(2**63), "t": 0},
                   {"x": 4, "y": 4, "w": 3.0, "t": 3}]
    assert type(got[0]["x"]) is int and engine.stats["skipped"] == 2


# ---- the property ----------------------------------------------------------------------------
QUERIES = {
    "stocks": ["SELECT * FROM S WHERE SELL ; BUY",
               "SELECT * FROM S WHERE SELL AS s ; BUY AS b FILTER s[volume > 2] AND b[price < 2.5]",
               "SELECT * FROM S WHERE (SELL OR BUY) AS x ; BUY FILTER x[name = 'A'] "
               "PARTITION BY [id] WITHIN 4 EVENTS"],
    "two": ["SELECT * FROM S WHERE A ; B FILTER B[y > 3]",
            "SELECT * FROM S WHERE A AS a ; B+ AS b FILTER a[x < 2] AND b[w >= 1.0] "
            "WITHIN 5 EVENTS",
            "SELECT * FROM S WHERE (A OR B) AS e ; B FILTER e[x = 1] PARTITION BY [x]"],
}
SCHEMAS = {"stocks": STOCKS, "two": TWO}
DOMAINS = {"id": st.integers(0, 2), "x": st.integers(0, 3), "y": st.integers(0, 6),
           "volume": st.integers(0, 5), "name": st.sampled_from(["A", "B"]),
           "s": st.sampled_from(["a", "b"]), "price": st.sampled_from([0.5, 1.0, 2.5, 3.0]),
           "w": st.sampled_from([0.5, 1.0, 2.0])}
# stray values that Arrow cannot put in the column and the attribute type does not accept
BAD = {AttrType.INT: ["abc", 2**63, -(2**63) - 1, 2**64 + 1, 1.5],
       AttrType.DOUBLE: ["abc", 2**64 + 1, 2**70 + 1],
       AttrType.STRING: [5, 2.5, True, 2**64]}
BAD_TYPE = [5, 2**64, 1.0]
# a stray value that is good: an int a double holds exactly (Arrow cannot mix it with doubles)
BENIGN = {AttrType.DOUBLE: [2**63]}


@st.composite
def frames_with_strays(draw):
    """(schema name, frame with stray values, the reference frame): the same events, where
    each row a stray value makes bad has an unknown type instead (skipped at its position),
    every other stray cell holds what the columnar path reads there."""
    name = draw(st.sampled_from(sorted(SCHEMAS)))
    schema = SCHEMAS[name]
    types = sorted(schema.event_types)
    attr_types = schema.attribute_types()
    n = draw(st.integers(1, 9))
    rows, t = [], draw(st.integers(0, 3))
    for _ in range(n):
        typ = draw(st.sampled_from(types))
        own = schema.event_types[typ].attribute_types
        t += draw(st.sampled_from([0, 1, 1, 2]))
        row = {"event_type": typ}
        for a in attr_types:
            if a == schema.time_attribute:
                row[a] = t if a in own else None
            elif a in own:
                row[a] = draw(st.one_of(DOMAINS[a], st.none()) if draw(st.booleans())
                              else DOMAINS[a])
            else:  # a cell of an attribute this type lacks: null, or a value to ignore
                row[a] = draw(st.one_of(st.none(), DOMAINS[a]))
        rows.append(row)
    columns = ["event_type", *attr_types]
    frame = pd.DataFrame(rows, columns=columns)
    for a, at in attr_types.items():  # int columns with nulls: doubles, or pandas' Int64
        if at is AttrType.INT and frame[a].isna().any() and draw(st.booleans()):
            frame[a] = frame[a].astype("Int64")
    strays = {(draw(st.integers(0, n - 1)), draw(st.sampled_from(columns))): None
              for _ in range(draw(st.integers(1, 3)))}
    reference = frame.copy()
    holes = set()
    for k, col in strays:
        typ = rows[k]["event_type"]
        if col == "event_type":
            value, bad = draw(st.sampled_from(BAD_TYPE)), True
        else:
            at = attr_types[col]
            value = draw(st.sampled_from(BAD[at] + BENIGN.get(at, [])))
            declared = schema.event_types[typ].has(col)
            bad = declared and value not in BENIGN.get(at, [])
            reference[col] = reference[col].astype(object)
            reference.loc[k, col] = float(value) if declared and not bad else None
        frame[col] = frame[col].astype(object)
        frame.loc[k, col] = value
        if bad:
            holes.add(k)
    reference["event_type"] = [("__hole__" if k in holes else r["event_type"])
                               for k, r in enumerate(rows)]
    return name, frame, reference


PROPERTY = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(case=frames_with_strays(), data=st.data())
def test_skipping_stray_values_equals_the_frame_without_the_bad_rows(case, data):
    name, frame, reference = case
    to_arrow(reference)  # the reference is read by the columnar path
    q = cercore.compile(data.draw(st.sampled_from(QUERIES[name])), SCHEMAS[name])
    for backend in BACKENDS:
        # skip mode: the same complex events and as many skips; raise mode: the same
        # complex events before the first bad row, which raises
        for mode in ("skip", "raise"):
            assert complex_events(q, frame, backend, mode) == \
                complex_events(q, reference, backend, mode), (backend, mode)
