"""``Engine.compact()`` reclaims what the window has left behind at once (partial matches in the
tECS arena, stored events), which a streaming key does before saving its engine each
micro-batch: it changes no complex event, and a pickled engine's size then follows the window,
not the batches it was fed."""

from __future__ import annotations

import pickle

import pyarrow as pa
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import SCHEMAS, deadline_queries, queries, streams

import cercore
from cercore.ceql import printer


def run(text, schema, events, backend, cuts, compact):
    engine = cercore.compile(text, schema).engine(backend)
    out, lo = [], 0
    for hi in [*cuts, len(events)]:
        out += [(ce.start, ce.end, tuple(ce.positions)) for ce in engine.process(events[lo:hi])]
        lo = hi
        if compact:
            engine.compact()
            engine = pickle.loads(pickle.dumps(engine))
    return out + [(ce.start, ce.end, tuple(ce.positions)) for ce in engine.flush()]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(["python", "cython"]), st.booleans())
def test_compacting_between_batches_changes_no_complex_event(data, backend, absence):
    """Random windowed queries, also with a deadline or a look back (whose partitions must
    outlive their partial matches), cut into batches with a compaction and a pickle between
    each two."""
    schema = SCHEMAS["seconds"]
    q = data.draw(deadline_queries(schema, windowed=True) if absence
                  else queries(schema, windowed=True, full=True))
    text = printer.format_query(q)
    try:
        cercore.compile(text, schema)
    except cercore.CEQLSemanticError:
        assume(False)
    events = data.draw(streams(schema, max_len=24))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(events)), max_size=4)))
    assert run(text, schema, events, backend, cuts, True) == \
        run(text, schema, events, backend, cuts, False)


def test_a_compacted_engine_pickles_to_the_window_not_the_batch(backend):
    schema = cercore.Schema.parse("CREATE STREAM S { EVENT A { k:int, ts:int }, "
                                  "EVENT B { k:int, ts:int } }", time_attribute="ts")
    query = cercore.compile("SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 20 [ts]",
                            schema)
    sizes = []
    for n in (2_000, 40_000):
        engine = query.engine(backend)
        engine.process_arrays(pa.table({"event_type": ["AB"[i % 3 % 2] for i in range(n)],
                                        "k": [i % 7 for i in range(n)], "ts": list(range(n))}))
        before = len(pickle.dumps(engine))
        engine.compact()
        sizes.append(len(pickle.dumps(engine)))
        assert sizes[-1] < before
    assert sizes[1] < 1.5 * sizes[0]  # 20 times the events, the same window


def test_a_partial_match_inside_the_window_survives_compaction(backend):
    schema = cercore.Schema.parse("CREATE STREAM S { EVENT A { ts:int }, EVENT B { ts:int } }",
                                  time_attribute="ts")
    text = "SELECT * FROM S WHERE A ; B WITHIN 10 [ts]"
    events = [("A", {"ts": 0}), ("A", {"ts": 3}), ("B", {"ts": 5}), ("B", {"ts": 12})]
    want = [(0, 2, (0, 2)), (1, 2, (1, 2)), (1, 3, (1, 3))]
    assert sorted(run(text, schema, events, backend, [2], True)) == want
