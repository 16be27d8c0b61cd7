"""The worker side of trend aggregation on Spark (``cercore.spark.trends.job``), without a JVM:
events dealt to runs of ``chunk`` windows as the driver deals them, each Spark partition sorted
by (run, time, position) and fed batch by batch, give exactly the local engine's rows — with the
smallest chunk the driver allows (one event's span: the most run boundaries), any batch cuts,
on both backends. The driver itself is checked on real Spark in test_trends_spark.py."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trends_strategies import SCHEMA, cases, query_text

from cercore.errors import EventError
from cercore.input.options import EngineOptions
from cercore.spark.base.job import GROUP
from cercore.spark.trends.job import POSITION, TrendJob, run_trend_groups
from cercore.spark.trends.rows import row_schema
from cercore.trends import compile_trend
from cercore.trends.engine import read_types


def arrow_out_schema(q) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(row_schema(q, "string")[0], timezone="UTC")


def runs_of(t: int, window, chunk: int) -> list[int]:
    """The runs the driver sends an event at time ``t`` to (the windows holding t, by
    chunk)."""
    size, slide = window
    first, last = (t - size) // slide + 1, t // slide
    return list(range(first // chunk, last // chunk + 1)) if first <= last else []


def spark_rows(q, events, *, chunk: int | None, cut: int, backend: str,
               partitions: int = 2) -> list[dict]:
    """The rows ``run_trend_groups`` emits over ``events`` dealt as the driver deals them."""
    plan = q.plan
    read = set(read_types(plan))
    parts: list[list[tuple]] = [[] for _ in range(partitions)]
    for pos, (etype, attrs) in enumerate(events):
        if etype not in read:
            continue
        runs = [0] if plan.window is None else runs_of(attrs["t"], plan.window, chunk)
        for run in runs:
            group = tuple(attrs[a] for a in plan.group_by)
            p = hash((group, run)) % partitions if plan.group_by or plan.window else 0
            parts[p].append((run, attrs["t"], pos, etype, attrs))
    _, exact_columns = row_schema(q, "string")
    job = TrendJob(q, EngineOptions(backend=backend), "string", tuple(exact_columns),
                   None if plan.window is None else chunk)
    rows = []
    for rows_in in parts:
        rows_in.sort(key=lambda r: r[:3])
        table = pa.table({GROUP: [r[0] for r in rows_in], POSITION: [r[2] for r in rows_in],
                          "event_type": [r[3] for r in rows_in],
                          **{a: pa.array([r[4][a] for r in rows_in], pa.int64())
                             for a in ("v", "g", "h", "t")}})
        batches = table.to_batches(max_chunksize=cut) if table.num_rows else []
        for rb in run_trend_groups(iter(batches), job, arrow_out_schema(q)):
            rows += rb.to_pylist()
    for r in rows:
        for c in exact_columns:
            r[c] = int(r[c])
    return rows


def ordered(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (r.get("window_start", 0), r.get("g", 0)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(c=cases(max_events=30), cut=st.integers(1, 12), wider=st.integers(0, 2))
def test_runs_give_the_local_engine_rows(c, cut, wider, backend):
    q = compile_trend(query_text(c), SCHEMA)
    events = [(e["type"], {k: e[k] for k in ("v", "g", "h", "t")}) for e in c["events"]]
    chunk = None
    if c["window"]:
        size, slide = c["window"]
        chunk = -(-size // slide) + wider  # the driver's least chunk: one event's span
    want = q.run(events, backend=backend)
    assert ordered(spark_rows(q, events, chunk=chunk, cut=cut, backend=backend)) == \
        ordered(want), query_text(c)


def test_a_window_split_over_runs_is_reported_once():
    """Windows of size 4, slide 1, two windows per run: every window is reported by the one
    run that holds it whole, never by a neighbour that saw part of it."""
    q = compile_trend("RETURN COUNT(*) PATTERN A+ WITHIN 4 SLIDE 1", SCHEMA)
    events = [("A", {"v": 0, "g": 0, "h": 0, "t": t}) for t in range(10)]
    got = ordered(spark_rows(q, events, chunk=4, cut=3, backend="python"))
    assert got == ordered(q.run(events))
    assert len({r["window_start"] for r in got}) == len(got)


def test_an_event_error_names_the_input_position():
    """The engine of a run numbers only its own events; the error names the row's input
    position (read order or sequence), as the local engine does."""
    q = compile_trend("RETURN SUM(A.v) PATTERN A+", SCHEMA)
    _, exact_columns = row_schema(q, "string")
    job = TrendJob(q, EngineOptions(backend="python"), "string", tuple(exact_columns))
    table = pa.table({GROUP: [0, 0, 0], POSITION: [40, 41, 42], "event_type": ["A"] * 3,
                      "v": pa.array([1, None, 3], pa.int64()), "g": [0] * 3, "h": [0] * 3,
                      "t": [0, 1, 2]})
    with pytest.raises(EventError, match=r"^event 41: A event has no 'v' value") as err:
        list(run_trend_groups(iter(table.to_batches(max_chunksize=2)), job,
                              arrow_out_schema(q)))
    assert err.value.position == 41
