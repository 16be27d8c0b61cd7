"""``workers=N`` on a windowed trend query over a table: T-CER slices (``runtime/slices.py``
with ``TrendSlices``) give one engine's rows -- the same rows, in the same order, the same
stats, skips and errors -- and leave the engine where one engine would be (its flush and
later input give the same rows), on both backends, for random trend queries (patterns,
semantics, predicates on adjacent events, partitions, GROUP BY, sliding windows, both query
forms) over random tables, some out of time order, N in {2, 3, 7}, runs as short as one
event and prefixes searched back one event at a time."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support import runs_spied
from test_trends_bulk_cuts import records, table
from trends_strategies import SCHEMA, cases, query_text

import cercore
from cercore.runtime import slices
from cercore.runtime.slices import workers_plan
from cercore.trends import compile_trend


def evaluated(q, backend, events, cut, workers, on_error):
    """What one engine gives over the table of ``events[:cut]`` with ``workers``, then over
    the rest (one worker) and at the end of the stream: rows, stats, skips, the error."""
    engine = q.engine(backend, on_error=on_error)
    rows, error = [], None
    try:
        rows = list(engine.process(table(events[:cut]), workers=workers))
        rows.append("then")
        rows += engine.process(events[cut:])
        rows += engine.flush()
    except cercore.EventError as e:
        error = str(e)
    stats = engine.stats
    del stats["backend"], stats["backend_note"]
    return [repr(r) for r in rows], stats, engine.skips.examples, error, engine.position, \
        engine.events_read


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(c=cases(max_events=24), data=st.data(), workers=st.sampled_from([2, 3, 7]),
       probe=st.sampled_from([1, 2, 64]), on_error=st.sampled_from(["raise", "skip"]))
def test_slices_give_one_engines_rows(backend, c, data, workers, probe, on_error):
    assume(c["window"] is not None)
    q = compile_trend(query_text(c), SCHEMA)
    events = records(c)
    if data.draw(st.integers(0, 3)) == 0:  # out of time order: a time moved back or ahead
        i = data.draw(st.integers(0, len(events) - 1))
        typ, attrs = events[i]
        events[i] = (typ, {**attrs, "t": max(0, attrs["t"] + data.draw(
            st.sampled_from([-3, -1, 5])))})
    cut = data.draw(st.integers(0, len(events)))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(slices, "MIN_EVENTS_PER_SLICE", 1)
        patch.setattr(slices, "PROBE_EVENTS", probe)
        want = evaluated(q, backend, events, cut, 1, on_error)
        got = evaluated(q, backend, events, cut, workers, on_error)
    assert got == want, query_text(c)


GROUPED = ("SELECT g, COUNT(*), SUM(a.v), MAX(a.v) FROM S WHERE A+ AS a ; B AS b "
           "FILTER a.v < NEXT(a).v SEMANTICS {} GROUP BY g WINDOW 20 SLIDE 5")


def long_table(n: int) -> pa.Table:
    i = np.arange(n)
    return pa.table({"event_type": np.where((i * 31) % 7 < 4, "A", "B"),
                     "v": (i * 7919) % 13, "g": (i * 2654435761) % 5, "h": i % 3,
                     "t": i // 4})


@pytest.mark.parametrize("semantics", ["any", "next", "contiguous"])
def test_a_long_grouped_table_is_cut_and_gives_one_engines_rows(backend, semantics):
    """The default sizes: the table is cut (every run's engine evaluated), the rows and the
    stats are one engine's."""
    q = compile_trend(GROUPED.format(semantics), SCHEMA)
    n = 3 * slices.MIN_EVENTS_PER_SLICE + 77
    data = long_table(n)
    engine = q.engine(backend)
    assert workers_plan(engine, 3, data)[:2] == (3, 1)
    with runs_spied() as runs:
        got = engine.run(data, workers=3)
    one = q.engine(backend)
    want = one.run(data, workers=1)
    b = slices.run_bounds(n, 3, in_processes=True)  # (the caller's run the longest)
    assert [r[1:] for r in runs] == [(b[0], b[1]), (b[1], b[2]), (b[2], b[3])]
    assert runs[0][0] == 0 and 0 < runs[1][0] < runs[1][1] and 0 < runs[2][0] < runs[2][1]
    assert len(want) > 1000 and got == want
    assert engine.stats == one.stats and engine.events_read == one.events_read


def test_what_trend_slices_cannot_cut_runs_on_one_worker():
    data = long_table(4 * slices.MIN_EVENTS_PER_SLICE)
    whole = compile_trend("SELECT COUNT(*) FROM S WHERE A+ GROUP BY g", SCHEMA).engine()
    n, k, why = workers_plan(whole, 4, data)
    assert (n, k) == (1, 1) and "whole stream" in why
    windowed = compile_trend(GROUPED.format("any"), SCHEMA)
    assert workers_plan(windowed.engine(), None, data)[:2] == (1, 1)  # (only when asked)
    assert workers_plan(windowed.engine(), 4, iter([]))[:2] == (1, 1)
    assert "T-CER slices" in windowed.explain() and "whole stream" in compile_trend(
        "SELECT COUNT(*) FROM S WHERE A+ GROUP BY g", SCHEMA).explain()
    assert workers_plan(windowed.engine(reorder_slack=2), 4, data)[:2] == (1, 1)
    with pytest.raises(cercore.ConfigError, match="workers must be"):
        windowed.engine().run([], workers=0)
