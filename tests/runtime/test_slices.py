"""``workers=N`` on a windowed query over a table: T-CER slices (``runtime/slices.py``) give
one engine's complex events -- the same events, positions, bindings, order, stats and errors
-- and leave the engine where one engine would be, on both backends, for random full-CEQL
queries (strategies, LIMIT, windows by time or attribute, look backs, predicates between
events) over random tables, some out of time order, N in {2, 3, 7}, runs as
short as one event and prefixes searched back one event at a time."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
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

import cercore
from cercore.runtime import slices
from cercore.runtime.slices import window_reach, workers_plan


@st.composite
def windowed_cases(draw, max_len: int = 16):
    """(schema, query, events): a query T-CER slices can cut, over a stream whose times are
    in order, or not (a time moved back, or missing)."""
    schema = draw(schemas())
    kind = draw(st.sampled_from(["full", "between", "absence"]))
    keyed = draw(st.booleans())
    if kind == "full":
        q = draw(queries(schema, full=True, partitioned=keyed, windowed=True))
    elif kind == "between":
        q = draw(queries_between_events(schema, partitioned=keyed))
    else:
        assume(schema.time_attribute is not None)
        q = draw(deadline_queries(schema, partitioned=keyed, windowed=True))
    favour = set(bindable(q.formula)) & set(schema.event_types)
    events = draw(streams(schema, max_len, favour=favour, tagged=False))
    events = draw(times_moved(events))
    return schema, q, events


@contextmanager
def slices_everywhere(probe: int):
    """Runs as short as one event, prefixes searched back from ``probe`` events."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(slices, "MIN_EVENTS_PER_SLICE", 1)
        patch.setattr(slices, "PROBE_EVENTS", probe)
        yield


STATS = ("events", "read", "skipped", "skipped_by_reason", "complex_events")


def evaluated(compiled, backend, table, rest, workers, on_error, arrays):
    """What one engine gives over ``table`` with ``workers``, then over ``rest`` (one
    worker): outputs, stats, the error raised, the position."""
    engine = compiled.engine(backend, on_error=on_error)
    out, error = [], None
    try:
        if arrays:
            found = engine.process_arrays(table, workers=workers)
            out = [getattr(found, f).tolist() for f in ("start", "end", "offsets", "positions",
                                                        "start_time", "end_time")]
        else:
            out = [(ce.start, ce.end, tuple(ce.positions), ce.bindings, ce.start_time,
                    ce.end_time) for ce in engine.process(table, workers=workers)]
        out.append([(ce.start, ce.end, tuple(ce.positions), ce.bindings)
                    for ce in engine.process(rest)])
    except cercore.EventError as e:
        error = str(e)
    stats = engine.stats
    return (out, {k: stats[k] for k in STATS}, engine.input.skips.examples, error,
            engine.position)


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(case=windowed_cases(), workers=st.sampled_from([2, 3, 7]), cut=st.integers(0, 16),
       probe=st.sampled_from([1, 2, 64]), on_error=st.sampled_from(["raise", "skip"]),
       arrays=st.booleans())
def test_slices_give_one_engines_output(backend, case, workers, cut, probe, on_error, arrays):
    schema, q, events = case
    compiled = compiled_or_none(q, schema)
    assume(compiled is not None)
    engine = compiled.engine()
    assume(window_reach(engine.analysed, engine.order_attribute)[0] is not None)
    table, rest = as_table(schema, events[:cut]), list(events[cut:])
    with slices_everywhere(probe):
        want = evaluated(compiled, backend, table, rest, 1, on_error, arrays)
        got = evaluated(compiled, backend, table, rest, workers, on_error, arrays)
    assert got == want


DECL = ("CREATE STREAM S { EVENT BUY { name:string, price:double, ts:int }, "
        "EVENT SELL { name:string, price:double, ts:int } }")
QUERIES = [
    "SELECT * FROM S WHERE SELL AS s ; BUY AS b FILTER b.price > s.price WITHIN 30 [ts]",
    "SELECT * FROM S WHERE SELL AS s ; BUY AS b FILTER b.price > s.price + 0.5 WITHIN 4 [ts]",
    "SELECT MAX * FROM S WHERE BUY+ AS r ; SELL AS s FILTER r.price < NEXT(r).price "
    "WITHIN 3 [ts]",
    "SELECT * FROM S WHERE ABSENT(SELL AS x) WITHIN 2 [ts] ; BUY ; BUY FILTER x[price > 100] "
    "WITHIN 3 [ts]",
    "SELECT LAST * FROM S WHERE SELL ; BUY WITHIN 6 [ts] LIMIT 2",
]


def trades(n: int, names: int = 11) -> pa.Table:
    i = np.arange(n)
    price = 100 + np.cumsum(((i * 7919) % 13 - 6) / 10)
    return pa.table({"event_type": np.where((i * 31) % 5 < 3, "BUY", "SELL"),
                     "name": [f"N{(k * 2654435761) % names}" for k in range(n)],
                     "price": price, "ts": i // 3})


@pytest.mark.parametrize("query", QUERIES)
def test_slices_run_in_threads_on_a_long_table(backend, query):
    """The default sizes: the table is cut (every run's engine evaluated), the output and
    the stats are one engine's, and the engine goes on as one engine would."""
    compiled = cercore.compile(query, DECL)
    table = trades(3 * slices.MIN_EVENTS_PER_SLICE + 100)
    engine = compiled.engine(backend)
    assert workers_plan(engine, 3, table)[0] == 3
    with runs_spied() as runs:
        got = engine.process_arrays(table, workers=3)
    one = compiled.engine(backend)
    want = one.process_arrays(table)
    assert len(runs) == 3 and runs[0][0] == 0 and 0 < runs[1][0] < runs[1][1]
    assert len(want) > 100
    for f in ("start", "end", "offsets", "positions", "start_time", "end_time"):
        assert getattr(got, f).tolist() == getattr(want, f).tolist()
    assert {k: engine.stats[k] for k in STATS} == {k: one.stats[k] for k in STATS}
    more = trades(4000).slice(100)
    later = pa.table({**{c: more[c] for c in more.column_names},
                      "ts": pa.array(np.asarray(more["ts"]) + int(table["ts"][-1].as_py()))})
    assert engine.process_arrays(later).positions.tolist() == \
        one.process_arrays(later).positions.tolist()


def one_and_sliced(compiled, backend, table, on_error, workers) -> list:
    """[positions or error, (position, skips)] of one worker, then of ``workers``."""
    outcomes = []
    for w in (1, workers):
        engine = compiled.engine(backend, on_error=on_error)
        try:
            outcomes.append(engine.process_arrays(table, workers=w).positions.tolist())
        except cercore.EventError as e:
            outcomes.append(str(e))
        outcomes.append((engine.position, engine.stats["skipped_by_reason"]))
    return outcomes


def test_a_table_out_of_order_is_evaluated_by_one_worker(backend):
    """A time going backwards in the second run: the runs are dropped and one engine
    evaluates the table, raising (or skipping) where one engine does."""
    compiled = cercore.compile(QUERIES[0], DECL)
    table = trades(3 * slices.MIN_EVENTS_PER_SLICE)
    ts = np.asarray(table["ts"]).copy()
    ts[2 * slices.MIN_EVENTS_PER_SLICE] = 0
    table = table.set_column(3, "ts", pa.array(ts))
    for on_error in ("raise", "skip"):
        outcomes = one_and_sliced(compiled, backend, table, on_error, 3)
        assert outcomes[:2] == outcomes[2:]
        assert "backwards" in str(outcomes) if on_error == "raise" else outcomes[1][1]


@pytest.mark.parametrize("query, why", [
    ("SELECT * FROM S WHERE SELL ; BUY PARTITION BY [name] WITHIN 5 [ts] CONSUME BY PARTITION",
     "partitions split"),
    ("SELECT * FROM S WHERE SELL ; BUY WITHIN 5 [ts] CONSUME BY ANY", "CONSUME BY ANY"),
    ("SELECT * FROM S WHERE SELL ; BUY ; ABSENT(SELL) WITHIN 3 [ts] WITHIN 5 [ts]",
     "deadline"),
    ("SELECT * FROM S WHERE SELL ; BUY WITHIN 5 EVENTS", "ordering time"),
    ("SELECT * FROM S WHERE SELL ; BUY", "ordering time"),
])
def test_what_slices_cannot_cut_runs_on_one_worker(query, why):
    """... or on key shards, when the query is keyed and workers are asked for."""
    engine = cercore.compile(query, DECL).engine()
    table = trades(4 * slices.MIN_EVENTS_PER_SLICE)
    n, k, reason = workers_plan(engine, 4, table)
    assert n == 1 and k == (4 if "PARTITION" in query else 1) and why in reason
    assert window_reach(engine.analysed, engine.order_attribute)[0] is None
    assert workers_plan(engine, None, table)[:2] == (1, 1)  # (shards only when asked for)


def test_a_keyed_windowed_table_is_cut_in_time_and_by_default():
    """Time slices come first, keyed or not; ``workers=None`` is the machine's cores for a
    table slices can cut, one worker for anything else."""
    keyed = cercore.compile("SELECT * FROM S WHERE SELL ; BUY PARTITION BY [name] "
                            "WITHIN 5 [ts]", DECL).engine()
    table = trades(4 * slices.MIN_EVENTS_PER_SLICE)
    assert workers_plan(keyed, 3, table)[:2] == (3, 1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(slices, "default_workers", lambda: 4)
        patch.setattr(slices, "MIN_EVENTS_BY_DEFAULT", 2 * slices.MIN_EVENTS_PER_SLICE)
        assert workers_plan(keyed, None, table)[:2] == (4, 1)
        assert workers_plan(keyed, None, table.slice(0, 3 * slices.MIN_EVENTS_PER_SLICE)
                            )[:2] == (3, 1)
        small = table.slice(0, 2 * slices.MIN_EVENTS_PER_SLICE - 1)
        assert workers_plan(keyed, None, small)[:2] == (1, 1)
        assert workers_plan(keyed, 2, small)[:2] == (1, 2)  # (too small for slices: shards)
        assert workers_plan(keyed, None, list(range(10)))[:2] == (1, 1)
        patch.setattr(slices, "default_workers", lambda: 1)
        assert workers_plan(keyed, None, table)[:2] == (1, 1)
        assert workers_plan(keyed, 1, table)[:2] == (1, 1)
    assert workers_plan(keyed, None, table)[:2] == (1, 1)  # (below MIN_EVENTS_BY_DEFAULT)
    assert workers_plan(keyed, 2, iter([]))[:2] == (1, 2)  # (live input: key shards)
    assert slices.default_workers() >= 1


def test_small_tables_and_live_feeds_are_not_cut():
    engine = cercore.compile(QUERIES[0], DECL).engine()
    assert workers_plan(engine, 2, trades(2 * slices.MIN_EVENTS_PER_SLICE - 1))[0] == 1
    assert workers_plan(engine, 2, iter([]))[0] == 1
    assert workers_plan(engine, 2, trades(2 * slices.MIN_EVENTS_PER_SLICE))[0] == 2


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_a_time_far_ahead_is_seen_by_every_run_it_makes_late(backend, on_error):
    """One time far ahead near the end of the first run: one engine skips (or raises at) the
    events after it until time catches up -- including those the second run evaluates before
    its own events, which that run alone cannot know are late."""
    compiled = cercore.compile(QUERIES[0], DECL)
    n = 2 * slices.MIN_EVENTS_PER_SLICE
    table = trades(n)
    ts = np.asarray(table["ts"]).copy()
    ts[n // 2 - 200] = ts[n // 2] + 100
    table = table.set_column(3, "ts", pa.array(ts))
    outcomes = one_and_sliced(compiled, backend, table, on_error, 2)
    assert outcomes[:2] == outcomes[2:]


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.lists(st.integers(1, 4), max_size=5), min_size=2, max_size=9),
       threads=st.sampled_from([1, 2, 3, 7]))
def test_match_arrays_concatenate_in_threads_as_one_after_the_other(sizes, threads):
    """``MatchArrays.concat(parts, threads)`` (the runs' outputs joined): each field one part
    after the other, positions' offsets shifted, whichever thread copies which parts."""
    from cercore.runtime import output
    from cercore.runtime.output import MatchArrays

    rng = np.random.default_rng(len(sizes))
    parts = []
    for lengths in sizes:
        n = len(lengths)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        parts.append(MatchArrays(*(rng.integers(0, 99, n) for _ in range(2)), offsets,
                                 rng.integers(0, 99, int(offsets[-1])),
                                 *(rng.integers(0, 99, n) for _ in range(2))))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(output, "CONCAT_IN_THREADS", 0)
        got = MatchArrays.concat(parts, threads=threads)
    for f in ("start", "end", "positions", "start_time", "end_time"):
        assert getattr(got, f).tolist() == [x for p in parts for x in getattr(p, f).tolist()]
    assert [got.positions[got.offsets[i]:got.offsets[i + 1]].tolist() for i in range(len(got))] \
        == [p.positions[p.offsets[i]:p.offsets[i + 1]].tolist() for p in parts
            for i in range(len(p))]
