"""The worker side of every batch plan (``cercore.spark.base.job``), without a JVM: a group fed to
one engine batch by batch, as Spark hands the batches over, gives the local engine's complex
events over the whole group, and holds only the rows a later complex event may still report.
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from spark_helpers import local_complex_events
from strategies import SCHEMAS, queries, queries_between_events, streams
from test_spark_tcer_slices import ARROW, ATTRS, out_schema

import cercore
from cercore.ceql import printer
from cercore.input.options import EngineOptions
from cercore.spark.base.job import (
    GROUP,
    KEY,
    POS,
    TIME,
    TYPE,
    EngineJob,
    GroupRun,
    run_sorted_groups,
)


def group_table(events, group: int = 0) -> pa.Table:
    """One group's rows as the single plan prepares them (positions = stream indices)."""
    cols = {TYPE: [t for t, _ in events], TIME: [a.get("ts") for _, a in events],
            POS: list(range(len(events))), KEY: [None] * len(events),
            GROUP: [group] * len(events), "event_type": [t for t, _ in events]}
    for a in ATTRS:
        cols[a] = pa.array([attrs.get(a) for _, attrs in events], ARROW[a])
    return pa.table(cols)


def job_for(query: str, schema, on_error: str = "raise") -> EngineJob:
    declared = schema.attribute_types()
    return EngineJob(query, schema, tuple((a, TIME if a == "ts" else a) for a in ATTRS
                                          if a in declared), ("event_type", *ATTRS),
                     EngineOptions(on_error=on_error))


def batched_complex_events(query: str, schema, events, cut: int, on_error: str = "raise"
                           ) -> Counter:
    table = group_table(events)
    rows = []
    for rb in run_sorted_groups(iter(table.to_batches(max_chunksize=cut)),
                                job_for(query, schema, on_error), None, out_schema()):
        rows += rb.to_pylist()
    for r in rows:  # each complex event carries its own rows, in position order
        assert [e["event_type"] for e in r["events"]] == [events[p][0] for p in r["positions"]]
    return Counter((r["start"], r["end"], tuple(r["positions"])) for r in rows)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_group_fed_batch_by_batch_equals_the_local_engine(data):
    """Every query shape (strategies, CONSUME BY, LIMIT, with and without WITHIN, predicates
    between events): the single plan's worker equals one local engine over the stream."""
    schema = data.draw(st.sampled_from([SCHEMAS["seconds"], SCHEMAS["millis"]]))
    q = data.draw(st.one_of(queries(schema, full=True), queries_between_events(schema)))
    text = printer.format_query(q)
    try:
        cercore.compile(text, schema)
    except cercore.CEQLSemanticError:
        assume(False)
    events = data.draw(streams(schema, max_len=12))
    assume(all(a.get("ts") is not None for _, a in events))
    cut = data.draw(st.integers(1, 5))
    assert batched_complex_events(text, schema, events, cut) == \
        local_complex_events(text, schema, events), (text, cut)


AB = cercore.Schema.parse("CREATE STREAM S { EVENT A { ts:int }, EVENT B { ts:int } }",
                          time_attribute="ts")


def ab_stream(n: int) -> list:
    return [("A" if i % 3 else "B", {"ts": i}) for i in range(n)]


def test_a_windowed_group_holds_flat_memory():
    """60,000 events in batches of 100, WITHIN 50: the rows held stop growing after the first
    reclamation (the engine prunes its store when it compacts the tECS, every few thousand
    nodes), far below the group's length, and every complex event is still reported."""
    events = ab_stream(60_000)
    query = "SELECT * FROM S WHERE A ; B WITHIN 50 [ts]"
    run = GroupRun(job_for(query, AB), 0, None, out_schema())
    most, found = [], 0
    for rb in group_table(events).to_batches(max_chunksize=100):
        out = run.feed(rb)
        found += 0 if out is None else out.num_rows
        most.append(run.held_rows)
    assert max(most) == max(most[:200]) < 20_000  # the most of the first 20,000 events
    assert found == sum(local_complex_events(query, AB, events).values())


def test_without_a_window_every_row_stays_held():
    """No WITHIN: a match may reach back to the first event, so nothing is dropped."""
    run = GroupRun(job_for("SELECT * FROM S WHERE A ; B", AB), 0, None, out_schema())
    for rb in group_table(ab_stream(1_000)).to_batches(max_chunksize=100):
        run.feed(rb)
    assert run.held_rows == 1_000


def test_skipped_rows_keep_their_positions():
    """on_error='skip': a bad row is skipped where it stands; later rows keep their positions
    (the held rows are addressed by engine position)."""
    schema = cercore.Schema.parse("CREATE STREAM S { EVENT A { ts:int }, EVENT B { ts:int } }",
                                  time_attribute="ts")
    events = [("A", {"ts": 1}), ("Nope", {"ts": 2}), ("B", {"ts": 3}), ("A", {"ts": 4}),
              ("B", {"ts": 5})]
    got = batched_complex_events("SELECT * FROM S WHERE A ; B", schema, events, 2, "skip")
    assert got == Counter({(0, 2, (0, 2)): 1, (0, 4, (0, 4)): 1, (3, 4, (3, 4)): 1})
