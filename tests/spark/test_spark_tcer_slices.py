"""The T-CER construction as the Spark workers run it (``cercore.spark.base.job``), without a JVM:
slices [k·WA, k·WA + WS) built straight from the definition (every slice that holds an event,
by enumeration — not by the floor-division formula batch.py uses), one fresh engine per slice,
a complex event kept only by slice ⌊(end − ε) / WA⌋ (the one holding the window before its
end). The union must equal the local engine's complex events exactly (as a multiset: nothing
lost, nothing twice), for every valid slice advance, including WA = 1 (every event in D_C
slices) and the minimal WS = WA + D_C − 1.

Also the note's test vectors (shared/notes/seed-001-aggregates.md §4: examples 5, 6, 7, 11).
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st
from spark_helpers import local_complex_events
from strategies import SCHEMAS, queries, streams

import cercore
from cercore.ceql import ast, printer
from cercore.spark.base.job import COORD, GROUP, KEY, POS, TIME, TYPE, EngineJob, run_sorted_groups
from cercore.spark.base.plan import TCER, choose_plan

SETTINGS = dict(deadline=None)
ATTRS = ("v", "w", "s", "b", "k", "g", "ts")
ARROW = {"v": pa.int64(), "w": pa.float64(), "s": pa.string(), "b": pa.bool_(),
         "k": pa.int64(), "g": pa.int64(), "ts": pa.int64()}


def out_schema() -> pa.Schema:
    event = pa.struct([("event_type", pa.string())] + [(a, ARROW[a]) for a in ATTRS])
    return pa.schema([("partition", pa.string()), ("start", pa.int64()), ("end", pa.int64()),
                      ("start_time", pa.int64()), ("end_time", pa.int64()),
                      ("positions", pa.list_(pa.int64())), ("events", pa.list_(event))])


def sliced_complex_events(query: str, schema, events, advance: int, span_limit: int,
                          coordinate: str = "time"):
    """Run the worker function over every slice, built by enumeration."""
    size = advance + span_limit - 1
    coords = [e[1]["ts"] if coordinate == "time" else i for i, e in enumerate(events)]
    rows = []  # (k, pos)
    if coords:
        lo_k = (min(coords) - size) // advance
        hi_k = max(coords) // advance
        for k in range(lo_k, hi_k + 1):
            rows += [(k, i) for i, c in enumerate(coords) if k * advance <= c < k * advance + size]
    cols = {TYPE: [events[i][0] for _, i in rows], TIME: [events[i][1]["ts"] for _, i in rows],
            POS: [i for _, i in rows], KEY: [None] * len(rows), GROUP: [k for k, _ in rows],
            COORD: [coords[i] for _, i in rows], "event_type": [events[i][0] for _, i in rows]}
    for a in ATTRS:
        cols[a] = pa.array([events[i][1].get(a) for _, i in rows], ARROW[a])
    table = pa.table(cols)
    declared = schema.attribute_types()
    job = EngineJob(query, schema, tuple((a, TIME if a == "ts" else a) for a in ATTRS
                                         if a in declared), ("event_type", *ATTRS))
    out = []
    # Spark hands the worker several batches per partition: cut at arbitrary places
    batches = table.to_batches(max_chunksize=3)
    for rb in run_sorted_groups(iter(batches), job, (advance, span_limit - 1), out_schema()):
        out += rb.to_pylist()
    return out


def multiset(rows):
    from collections import Counter

    return Counter((r["start"], r["end"], tuple(r["positions"])) for r in rows)


@settings(max_examples=300, **SETTINGS)
@given(data=st.data())
def test_tcer_slices_equal_local_engine(data):
    schema = data.draw(st.sampled_from([SCHEMAS["seconds"], SCHEMAS["millis"]]))
    q = data.draw(queries(schema, partitioned=False, windowed=True, full=True))
    q = dataclasses.replace(q, consume=None)
    text = printer.format_query(q)
    try:
        compiled = cercore.compile(text, schema)
    except cercore.CEQLSemanticError:  # e.g. an ill-formed projection the generator may draw
        assume(False)  # discarded, not passed
    plan = choose_plan(compiled.analysed, "ts")
    if plan.kind != TCER:
        assert q.within is not None and isinstance(q.within, ast.EventsWindow)
        return
    events = data.draw(streams(schema, max_len=10))
    if plan.coordinate == "position":
        events_ok = True
    else:
        events_ok = all(e[1]["ts"] is not None for e in events)
    if not events_ok:
        return
    advance = data.draw(st.integers(1, plan.span_limit + 3))
    got = sliced_complex_events(text, schema, events, advance, plan.span_limit,
                                plan.coordinate)
    expected = local_complex_events(text, schema, events)
    event(f"compared, {plan.coordinate} slices, "
          + ("some" if expected else "no") + " complex events")
    assert multiset(got) == expected, (text, advance)


# ---- seed-001 §4 test vectors (δ = 1) --------------------------------------------------
AB = cercore.Schema.parse("CREATE STREAM S { EVENT A { ts:int }, EVENT B { ts:int } }",
                          time_attribute="ts")


def ab(*items):
    return [(name[0].upper(), {"ts": int(name[1:])}) for name in items]


def pairs(rows, events):
    return sorted((events[r["start"]][1]["ts"], events[r["end"]][1]["ts"]) for r in rows)


@pytest.mark.parametrize("advance", [5, 1, 10])  # examples 5 and 6: (5, 15), (1, 10), (10, 19)
def test_example_5_and_6_pairs_within_span(advance):
    # D_C = 10 (span < 10) is WITHIN 9 (span ≤ 9)
    events = ab("a12", "b18", "a20", "b21", "b29", "b31")
    rows = sliced_complex_events("SELECT * FROM S WHERE A; B WITHIN 9 [ts]", AB, events,
                                 advance, 10)
    assert pairs(rows, events) == [(12, 18), (12, 21), (20, 21), (20, 29)]
    assert len(rows) == 4


def test_example_7_the_window_condition_is_tight():
    events = ab("a11", "b20")
    query = "SELECT * FROM S WHERE A; B WITHIN 9 [ts]"
    assert pairs(sliced_complex_events(query, AB, events, 1, 10), events) == [(11, 20)]
    assert pairs(sliced_complex_events(query, AB, events, 5, 10), events) == [(11, 20)]
    # WS one short of WA + D_C − 1 (D_C = 10, WA = 2, WS = 10): the pair fits in no slice
    assert sliced_complex_events(query, AB, events, 2, 9) == []


def test_example_11_within_is_inclusive():
    events = ab("a3", "b13")
    for advance in (1, 4, 11, 12):
        rows = sliced_complex_events("SELECT * FROM S WHERE A; B WITHIN 10 [ts]", AB, events,
                                     advance, 11)
        assert pairs(rows, events) == [(3, 13)]
    # the off-by-one the note warns about: D_C = ε (slices [l, l + 10)) loses the match
    # spanning exactly ε
    assert sliced_complex_events("SELECT * FROM S WHERE A; B WITHIN 10 [ts]", AB, events,
                                 1, 10) == []


@settings(max_examples=300, **SETTINGS)
@given(data=st.data())
def test_strategies_and_limit_through_slices_equal_local_engine(data):
    """NEXT/LAST/MAX and LIMIT under WITHIN: a complex event depends only on the window before
    its end, so the slice ⌊(end − ε) / WA⌋ finds it as the whole stream does."""
    schema = data.draw(st.sampled_from([SCHEMAS["seconds"], SCHEMAS["millis"]]))
    q = data.draw(queries(schema, partitioned=False, windowed=True,
                          strategies=("NEXT", "LAST", "MAX", None)))
    q = dataclasses.replace(q, consume=None,
                            limit=data.draw(st.sampled_from([None, q.limit, 1, 2])))
    assume(q.strategy is not None or q.limit is not None)
    text = printer.format_query(q)
    try:
        compiled = cercore.compile(text, schema)
    except cercore.CEQLSemanticError:
        assume(False)
    plan = choose_plan(compiled.analysed, "ts")
    assume(plan.kind == TCER)
    events = data.draw(streams(schema, max_len=12))
    assume(plan.coordinate == "position" or all(e[1]["ts"] is not None for e in events))
    advance = data.draw(st.integers(1, plan.span_limit + 3))
    expected = local_complex_events(text, schema, events)
    event("compared, " + ("some" if expected else "no") + " complex events")
    assert multiset(sliced_complex_events(text, schema, events, advance, plan.span_limit,
                                          plan.coordinate)) == expected, (text, advance)
