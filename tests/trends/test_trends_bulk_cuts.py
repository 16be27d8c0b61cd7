"""The bulk path (columnar pass + runner) against the reference on random queries and streams:
the rows of the pure-Python reference fed the whole stream as one list are what every backend
gives however the stream arrives -- cut into batches anywhere (timestamp groups and windows
straddling the cuts), as Arrow tables, one event at a time (the record path), with watermarks
between events, with null partition keys, and pickled between batches -- in the same order.

Batches of at most ``TrendEngine.small_batch`` events run event by event; the oracle test
(tests/trends/test_trends_oracle.py) runs streams that short, so here the columnar pass is
also forced on every batch (``small_batch = 0``) and must give the same rows."""

from __future__ import annotations

import pickle

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trends_strategies import SCHEMA, cases, query_text

from cercore.trends import compile_trend


def records(c, nulls: frozenset = frozenset()) -> list:
    """The case's events; events at positions in ``nulls`` have a null ``g`` (grouped on:
    such an event is in no partition)."""
    return [(e["type"], {"v": e["v"], "g": None if k in nulls else e["g"], "h": e["h"],
                         "t": e["t"]}) for k, e in enumerate(c["events"])]


def table(events: list) -> pa.Table:
    return pa.Table.from_pylist([{"event_type": t, **a} for t, a in events],
                                schema=pa.schema([("event_type", pa.string()),
                                                  ("v", pa.int64()), ("g", pa.int64()),
                                                  ("h", pa.int64()), ("t", pa.int64())]))


@st.composite
def feeds(draw, n: int) -> list:
    """How a stream of ``n`` events arrives: consecutive pieces, each a list, an Arrow table,
    events pushed one by one, or events pushed with a watermark at their time after each;
    some pieces followed by a pickle of the engine."""
    cuts = sorted(draw(st.sets(st.integers(1, max(n - 1, 1)), max_size=6)))
    bounds = [0, *[c for c in cuts if c < n], n]
    return [(lo, hi, draw(st.sampled_from(["list", "arrow", "push", "watermarks"])),
             draw(st.booleans())) for lo, hi in zip(bounds, bounds[1:]) if hi > lo]


def columnar(q, backend: str):
    """An engine whose every batch takes the columnar pass, however small."""
    engine = q.engine(backend)
    engine.small_batch = 0
    return engine


def feed(engine, events: list, pieces: list) -> tuple[list, object]:
    rows = []
    for lo, hi, how, pickled in pieces:
        part = events[lo:hi]
        if how == "list":
            rows += engine.process(part)
        elif how == "arrow":
            rows += engine.process(table(part))
        else:
            for etype, attrs in part:
                rows += engine.push(etype, attrs)
                if how == "watermarks":
                    rows += engine.advance(attrs["t"])
        if pickled:
            engine = pickle.loads(pickle.dumps(engine))
    return rows + engine.flush(), engine


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(c=cases(max_events=40), data=st.data())
def test_any_cut_and_shape_gives_the_reference_rows(backend, c, data):
    q = compile_trend(query_text(c), SCHEMA)
    n = len(c["events"])
    nulls = frozenset(data.draw(st.sets(st.integers(0, n - 1), max_size=3))) \
        if c["group"] else frozenset()
    events = records(c, nulls)
    want = q.run(events, backend="python")
    assert columnar(q, "python").run(events) == want
    start = columnar(q, backend) if data.draw(st.booleans()) else q.engine(backend)
    got, engine = feed(start, events, data.draw(feeds(n)))
    assert [repr(r) for r in got] == [repr(r) for r in want], query_text(c)
    assert engine.state_size()["aggregators"] == 0 and engine.state_size()["pending_events"] == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(c=cases(max_events=40), data=st.data())
def test_reference_runner_alone_equals_the_reference_in_bulk(c, data):
    """The reference twin itself: pushed one at a time and cut anywhere, the rows it gives
    a whole list (what the test above compares the compiled runner with)."""
    q = compile_trend(query_text(c), SCHEMA)
    events = records(c)
    whole = q.run(events, backend="python")
    engine = q.engine("python")
    rows = []
    for etype, attrs in events:
        rows += engine.push(etype, attrs)
    assert rows + engine.flush() == whole
    got, _ = feed(q.engine("python"), events, data.draw(feeds(len(events))))
    assert got == whole
