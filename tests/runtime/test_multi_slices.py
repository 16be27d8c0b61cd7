"""``workers=N`` on a multi-query engine (``MultiSlices`` in ``runtime/multi.py``): a table
cut into T-CER slices gives what one multi-query engine gives -- the same (query, complex
event) pairs in the same order, the same arrays per query, stats, errors and position --
on both backends, for random sets of 2-3 queries over one random schema, some that slices
cannot cut (then one worker evaluates them), over random tables, some out of time order."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import (
    bindable,
    deadline_queries,
    queries,
    queries_between_events,
    schemas,
    streams,
    times_moved,
)
from support import as_table, compiled_or_none, runs_spied
from test_slices import DECL, QUERIES, slices_everywhere, trades

import cercore
from cercore.runtime import slices
from cercore.runtime.multi import MultiSlices
from cercore.runtime.slices import window_reach, workers_plan

STATS = ("events", "read", "skipped", "skipped_by_reason", "complex_events")


def sliceable_or_none(q, schema):
    """The query compiled, if T-CER slices can cut it alone."""
    compiled = compiled_or_none(q, schema)
    if compiled is None:
        return None
    engine = compiled.engine()
    return compiled if window_reach(engine.analysed, engine.order_attribute)[0] is not None \
        else None


@st.composite
def multi_cases(draw, max_len: int = 16):
    """(schema, [compiled query], events): 2-3 queries, keyed or not, that slices can cut
    (their windows differ: each run reaches back as far as the furthest needs), and now and
    then one that they cannot; over a stream whose times are in order or not."""
    schema = draw(schemas())
    assume(schema.time_attribute is not None)
    qs, wanted = [], draw(st.integers(2, 3))
    uncut = draw(st.integers(0, 4)) == 0  # (one query slices cannot cut: one worker runs)
    for _ in range(8 * wanted):  # (a drawn query that slices cannot cut is drawn again)
        keyed = draw(st.booleans())
        kind = draw(st.sampled_from(["full", "between", "absence"]))
        if kind == "full":
            q = draw(queries(schema, full=True, partitioned=keyed, windowed=True))
        elif kind == "between":
            q = draw(queries_between_events(schema, partitioned=keyed))
        else:
            q = draw(deadline_queries(schema, partitioned=keyed, windowed=True))
        compiled = sliceable_or_none(q, schema)
        if compiled is None and uncut:
            compiled = compiled_or_none(q, schema)
            uncut = compiled is None
        if compiled is not None:
            qs.append((q, compiled))
        if len(qs) == wanted:
            break
    assume(len(qs) == wanted)
    favour = set().union(*(bindable(q.formula) for q, _ in qs)) & set(schema.event_types)
    events = draw(streams(schema, max_len, favour=favour, tagged=False))
    events = draw(times_moved(events))
    return schema, [c for _, c in qs], events


def evaluated(compiled, backend, table, rest, workers, on_error, arrays):
    """What one multi-query engine gives over ``table`` with ``workers``, then over ``rest``
    (one worker): outputs, stats (its own and each query's), the error, the position."""
    engine = cercore.multi_engine(compiled, backend=backend, on_error=on_error)
    out, error = [], None
    try:
        if arrays:
            found = engine.process_arrays(table, workers=workers)
            out = [(name, [getattr(a, f).tolist() for f in ("start", "end", "offsets",
                                                            "positions", "end_time")])
                   for name, a in found.items()]
        else:
            out = [(m.query, m.start, m.end, tuple(m.positions), m.bindings, m.end_time)
                   for m in engine.process(table, workers=workers)]
        out.append([(m.query, m.start, m.end, tuple(m.positions))
                    for m in engine.process(rest)])
    except cercore.EventError as e:
        error = str(e)
    stats = engine.stats
    per_query = {n: {k: s[k] for k in STATS} for n, s in stats["queries"].items()}
    return (out, {k: stats[k] for k in STATS if k in stats}, per_query,
            engine.input.skips.examples, error, engine.position)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(case=multi_cases(), workers=st.sampled_from([2, 3, 7]), cut=st.integers(0, 16),
       probe=st.sampled_from([1, 2, 64]), on_error=st.sampled_from(["raise", "skip"]),
       arrays=st.booleans())
def test_slices_give_one_multi_engines_output(backend, case, workers, cut, probe, on_error,
                                              arrays):
    schema, compiled, events = case
    table, rest = as_table(schema, events[:cut]), list(events[cut:])
    with slices_everywhere(probe):
        want = evaluated(compiled, backend, table, rest, 1, on_error, arrays)
        with runs_spied() as runs:
            got = evaluated(compiled, backend, table, rest, workers, on_error, arrays)
    assert got == want
    sliceable = MultiSlices.reach(cercore.multi_engine(compiled))[0] is not None
    # (the test sees slices at work: runs whenever every query can be cut and there are
    # events to cut; none otherwise)
    assert bool(runs) == (sliceable and min(workers, len(events[:cut])) > 1)


@pytest.fixture
def short_slices():
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(slices, "MIN_EVENTS_PER_SLICE", 2048)
        yield


def test_a_long_table_is_cut_for_every_query_at_once(backend, short_slices):
    """Three windowed queries (reaches 30, 4 and 3) cut together, each run starting as far
    back as the furthest-reaching query needs; the same pairs, arrays and stats as one
    engine; then the engine goes on as one engine would."""
    named = {f"q{i}": cercore.compile(q, DECL) for i, q in enumerate(QUERIES[:3])}
    table = trades(3 * slices.MIN_EVENTS_PER_SLICE + 100)
    engine, one = cercore.multi_engine(named, backend=backend), \
        cercore.multi_engine(named, backend=backend)
    assert MultiSlices.reach(engine) == (30, None)
    assert workers_plan(engine, 3, table)[0] == 3
    with runs_spied() as runs:
        got = [(m.query, m.end, tuple(m.positions)) for m in engine.process(table, workers=3)]
    want = [(m.query, m.end, tuple(m.positions)) for m in one.process(table, workers=1)]
    assert len(runs) == 3 and got == want and len({q for q, _, _ in want}) == 3
    assert {n: {k: s[k] for k in STATS} for n, s in engine.stats["queries"].items()} == \
        {n: {k: s[k] for k in STATS} for n, s in one.stats["queries"].items()}
    more = trades(2000).slice(100)
    later = pa.table({**{c: more[c] for c in more.column_names},
                      "ts": pa.compute.add(more["ts"], int(table["ts"][-1].as_py()))})
    assert [(m.query, m.end) for m in engine.process(later)] == \
        [(m.query, m.end) for m in one.process(later)]
    arrays = cercore.multi_engine(named, backend=backend).process_arrays(table, workers=3)
    ones = cercore.multi_engine(named, backend=backend).process_arrays(table, workers=1)
    assert {n: a.positions.tolist() for n, a in arrays.items()} == \
        {n: a.positions.tolist() for n, a in ones.items()}


@pytest.mark.parametrize("second, why", [
    ("SELECT * FROM S WHERE SELL ; BUY WITHIN 5 [ts] CONSUME BY ANY",
     "query 'q1': history-dependent: CONSUME BY ANY"),
    ("SELECT * FROM S WHERE SELL ; BUY WITHIN 5 EVENTS", "query 'q1': only WITHIN"),
])
def test_a_query_slices_cannot_cut_keeps_the_engine_on_one_worker(second, why):
    engine = cercore.multi_engine([QUERIES[0], second], DECL)
    table = trades(4 * slices.MIN_EVENTS_PER_SLICE)
    runs, shards, reason = workers_plan(engine, 4, table)
    assert (runs, shards) == (1, 1) and why in reason
    with pytest.raises(cercore.ConfigError, match="workers must be"):
        engine.process_arrays(table, workers=0)


def test_queries_ordered_by_different_attributes_are_not_cut():
    decl = DECL.replace("ts:int }", "ts:int, seq:int }")
    engine = cercore.multi_engine([QUERIES[0], "SELECT * FROM S WHERE SELL ; BUY "
                                   "WITHIN 5 [seq]"], decl)
    assert MultiSlices.reach(engine) == (None, "the queries are ordered by different "
                                               "attributes")


def test_a_reorder_slack_or_a_started_engine_keeps_one_worker(short_slices):
    table = trades(3 * slices.MIN_EVENTS_PER_SLICE)
    slack = cercore.multi_engine(QUERIES[:2], DECL, reorder_slack=2)
    assert workers_plan(slack, 3, table)[:2] == (1, 1)
    started = cercore.multi_engine(QUERIES[:2], DECL)
    list(started.process(table.slice(0, 10)))
    assert "seen events" in workers_plan(started, 3, table)[2]
    want = [(m.query, m.end) for m in cercore.multi_engine(QUERIES[:2], DECL).process(table)]
    got = list(slack.process(table, workers=3)) + slack.flush()
    assert [(m.query, m.end) for m in got] == want
