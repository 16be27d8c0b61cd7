"""``workers=N``: a keyed query's partitions split among N evaluators (``runtime/shards.py``)
give the single evaluator's complex events -- the same events, positions, bindings, order and
count -- on both backends, for random full-CEQL queries (strategies, LIMIT, CONSUME BY
PARTITION, windows, deadlines and look backs, predicates between events) over random streams,
N in {1, 2, 3, 7}; and on a stream long enough that the shards step in threads."""

from __future__ import annotations

import pickle
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies import bindable, deadline_queries, queries, queries_between_events, schemas, streams
from support import BACKENDS, as_table, compiled_or_none

import cercore
from cercore.input.source import RECORD_BATCH_SIZE
from cercore.runtime import evaluator as reference_evaluator
from cercore.runtime import shards
from cercore.runtime.backend import CYTHON_AVAILABLE
from cercore.runtime.shards import (
    MIN_EVENTS_PER_SHARD,
    ShardedEvaluator,
    _merged,
    shards_for,
)

WORKERS = [1, 2, 3, 7]


def keys(ces) -> list[tuple]:
    return [(ce.start, ce.end, tuple(ce.positions), ce.bindings) for ce in ces]


@st.composite
def keyed_cases(draw, max_len: int = 7):
    schema = draw(schemas())
    kind = draw(st.sampled_from(["full", "between", "absence"]))
    if kind == "full":
        q = draw(queries(schema, full=True, partitioned=True))
    elif kind == "between":
        q = draw(queries_between_events(schema, partitioned=True))
    else:
        assume(schema.time_attribute is not None)  # (a span is a time, as test_absence.py)
        q = draw(deadline_queries(schema, partitioned=True))
    favour = set(bindable(q.formula)) & set(schema.event_types)
    return schema, q, draw(streams(schema, max_len, favour=favour, tagged=False))


@settings(max_examples=300, deadline=None)
@given(case=keyed_cases(), workers=st.sampled_from(WORKERS))
def test_workers_give_the_single_evaluators_complex_events(backend, case, workers):
    schema, q, events = case
    compiled = compiled_or_none(q, schema)
    assume(compiled is not None and compiled.analysed.partition_by)
    one = compiled.engine(backend, on_error="skip")
    expected = keys(one.process(list(events), workers=1))
    split = compiled.engine(backend, on_error="skip")
    got = keys(split.process(list(events), workers=workers))
    assert got == expected
    assert split.stats["complex_events"] == one.stats["complex_events"]
    if shards_for(compiled.analysed, workers)[0] > 1:
        assert isinstance(split.evaluator, ShardedEvaluator)
    arrays = compiled.engine(backend, on_error="skip").process_arrays(list(events),
                                                                       workers=workers)
    bulk = compiled.engine(backend, on_error="skip").process_arrays(list(events), workers=1)
    assert arrays.start.tolist() == bulk.start.tolist()
    assert arrays.positions.tolist() == bulk.positions.tolist()


DECL = ("CREATE STREAM S { EVENT BUY { name:string, price:double, ts:int }, "
        "EVENT SELL { name:string, price:double, ts:int } }")
KEYED = ["SELECT * FROM S WHERE SELL AS s ; BUY AS b FILTER b.price > s.price "
         "PARTITION BY [name] WITHIN 30 [ts]",
         "SELECT NEXT * FROM S WHERE BUY+ AS r ; SELL AS s FILTER r.price < NEXT(r).price "
         "PARTITION BY [name] WITHIN 20 [ts]",
         "SELECT * FROM S WHERE SELL ; BUY ; ABSENT(SELL) WITHIN 5 [ts] "
         "PARTITION BY [name] WITHIN 20 [ts]"]


def trades(n: int, names: int = 11) -> list[tuple[str, dict]]:
    out, price = [], 100.0
    for i in range(n):
        price += ((i * 7919) % 13 - 6) / 10
        out.append(("BUY" if (i * 31) % 5 < 3 else "SELL",
                    {"name": f"N{(i * 2654435761) % names}", "price": price, "ts": i // 3}))
    return out


def table(events: list[tuple[str, dict]]) -> pa.Table:
    return pa.Table.from_pylist([{"event_type": t, **a} for t, a in events])


@contextmanager
def threads_and_reclamation_everywhere():
    """Every sharded batch steps in threads, however small, and the evaluators reclaim as
    soon as their arenas hold anything (so partitions are forgotten, and keys come back
    with new ids, between small batches)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(shards, "MIN_EVENTS_PER_SHARD", 0)
        patch.setattr(reference_evaluator, "MIN_COMPACTION", 1)
        if CYTHON_AVAILABLE:
            import cercore_fast.evaluator as compiled_evaluator

            patch.setattr(compiled_evaluator, "MIN_COMPACTION", 1)
        yield


def fed_in_bulk(compiled, backend: str, events, workers: int, batch_size: int,
                on_error: str) -> tuple:
    """(the arrays, the stats, the error raised or None) of ``process_arrays`` in batches of
    ``batch_size`` events on a fresh engine."""
    engine = compiled.engine(backend, on_error=on_error)
    engine.input.batch_size = batch_size
    try:
        arrays, error = engine.process_arrays(events, workers=workers), None
    except cercore.EventError as e:
        arrays, error = None, str(e)
    stats = engine.stats
    fields = None if arrays is None else [getattr(arrays, f).tolist() for f in (
        "start", "end", "offsets", "positions", "start_time", "end_time")]
    return fields, {k: stats[k] for k in ("events", "read", "skipped", "skipped_by_reason",
                                          "complex_events")}, error, engine.position


@settings(max_examples=200, deadline=None)
@given(case=keyed_cases(max_len=14), workers=st.sampled_from(WORKERS[1:]),
       batch_size=st.integers(1, 6), arrow=st.booleans(),
       on_error=st.sampled_from(["raise", "skip"]))
def test_the_bulk_pipeline_gives_one_evaluators_arrays(backend, case, workers, batch_size,
                                                        arrow, on_error):
    """``process_arrays`` with workers (``runtime/pipeline.py``: the next batch decoded and
    prepared while the shards step one) in many small batches, stepped in threads, with
    reclamation after every event: one evaluator's arrays, stats, error and position."""
    schema, q, events = case
    compiled = compiled_or_none(q, schema)
    assume(compiled is not None and compiled.analysed.partition_by)
    feed = as_table(schema, events) if arrow else list(events)
    with threads_and_reclamation_everywhere():
        want = fed_in_bulk(compiled, backend, feed, 1, batch_size, on_error)
        got = fed_in_bulk(compiled, backend, feed, workers, batch_size, on_error)
    assert got == want


@pytest.mark.parametrize("query", KEYED)
@pytest.mark.parametrize("batch_size", [1, 3, 7])
def test_the_bulk_pipeline_over_many_keys_in_small_batches(backend, query, batch_size):
    """Many keys coming and going between small batches (their partitions forgotten and
    their keys given new ids while the next batch is prepared): one evaluator's output, from
    a table (decoded ahead) and from records."""
    events = trades(300)
    q = cercore.compile(query, DECL)
    with threads_and_reclamation_everywhere():
        want = fed_in_bulk(q, backend, table(events), 1, batch_size, "raise")
        assert want[0][0]
        for workers in WORKERS[1:]:
            for feed in (table(events), events):
                assert fed_in_bulk(q, backend, feed, workers, batch_size, "raise") == want


def test_the_bulk_pipeline_over_records_in_several_batches(backend):
    """Records (decoded in the caller's thread, RECORD_BATCH_SIZE at a time): each batch
    numbered from the end of the one before, as one evaluator numbers them."""
    events = trades(2 * RECORD_BATCH_SIZE + 100)
    q = cercore.compile(KEYED[1], DECL)
    with threads_and_reclamation_everywhere():
        want = fed_in_bulk(q, backend, events, 1, RECORD_BATCH_SIZE, "raise")
        assert want[0][3][-1] > RECORD_BATCH_SIZE
        assert fed_in_bulk(q, backend, events, 2, RECORD_BATCH_SIZE, "raise") == want


def test_the_bulk_pipeline_stops_at_a_bad_event_as_one_evaluator(backend):
    """Raising on an event whose time goes backwards (and on an unknown type) in the middle
    of a table in small batches: the complex events before it, the error, the position and
    the stats are one evaluator's, and the engine goes on from there the same way."""
    events = trades(3000)
    late = events[:1700] + [("BUY", {**events[1700][1], "ts": 0})] + events[1700:]
    unknown = events[:2100] + [("HOLD", {"name": "N1", "price": 1.0, "ts": 900})] + events[2100:]
    q = cercore.compile(KEYED[0], DECL)
    for bad, cut in ((late, 1700), (unknown, 2100)):
        runs = []
        for workers in (1, 2):
            engine = q.engine(backend)
            engine.input.batch_size = 256
            with threads_and_reclamation_everywhere(), \
                    pytest.raises(cercore.EventError) as raised:
                engine.process_arrays(table(bad), workers=workers)
            assert engine.position == cut
            rest = engine.process_arrays(table(bad[cut + 1:]))
            runs.append((str(raised.value), engine.stats["complex_events"],
                         rest.positions.tolist(), rest.offsets.tolist()))
        assert runs[0] == runs[1]
        assert runs[0][1] and runs[0][2]


@pytest.mark.parametrize("query", KEYED)
def test_threads_on_a_long_stream_give_the_same_output(backend, query):
    """Batches large enough for the shards to step in threads: the same complex events, in
    the same order, through process, process_arrays, pickling mid-stream and a backend move."""
    events = trades(8 * 2 * MIN_EVENTS_PER_SHARD + 1000)
    q = cercore.compile(query, DECL)
    expected = keys(q.engine(backend).process(events, workers=1))
    assert expected
    engine = q.engine(backend)
    half = len(events) // 2
    got = keys(engine.process(table(events[:half]), workers=2))
    assert isinstance(engine.evaluator, ShardedEvaluator)
    assert engine.evaluator._pool is not None  # (the batches were large enough for threads)
    engine = pickle.loads(pickle.dumps(engine))
    other = "python" if engine.backend == "cython" else cercore.BACKEND
    engine = engine.to_backend(other)
    got += keys(engine.process(events[half:]))
    assert got == expected
    arrays = q.engine(backend).process_arrays(table(events), workers=3)
    assert list(zip(arrays.start.tolist(), arrays.end.tolist())) == [k[:2] for k in expected]
    one = q.engine(backend).process_arrays(table(events), workers=1)
    for field in ("start", "end", "offsets", "positions", "start_time", "end_time"):
        assert getattr(arrays, field).tolist() == getattr(one, field).tolist(), field


@st.composite
def shard_outputs(draw):
    """k shards' arrays as the engine's bulk stages give them: (start, end, offsets, positions,
    start_time, end_time), each shard's in end order; ends may repeat within a shard and,
    to test the tie order, across shards."""
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        ends = sorted(draw(st.lists(st.integers(0, 30), max_size=12)))
        lengths = [draw(st.integers(0, 3)) for _ in ends]
        offsets = np.concatenate(([0], np.cumsum(lengths, dtype=np.int64))).astype(np.int64)
        positions = np.array(draw(st.lists(st.integers(0, 99), min_size=int(offsets[-1]),
                                           max_size=int(offsets[-1]))), dtype=np.int64)
        n = len(ends)
        parts.append((np.array(draw(st.lists(st.integers(0, 30), min_size=n, max_size=n)),
                               dtype=np.int64), np.array(ends, dtype=np.int64), offsets,
                      positions, np.arange(n, dtype=np.int64) * 7,
                      np.array(ends, dtype=np.int64) * 3))
    return parts


@pytest.mark.skipif(not CYTHON_AVAILABLE, reason="needs the compiled kernels")
@settings(max_examples=300, deadline=None)
@given(parts=shard_outputs())
def test_the_compiled_merge_is_the_reference_merge(parts):
    """The shards' arrays merged by end in C (no sort) equal numpy's stable sort by end."""
    from cercore_fast.evaluator import merge_by_end

    got, want = merge_by_end(parts), _merged(parts)
    assert [a.tolist() for a in got] == [a.tolist() for a in want]
    # into given arrays, from complex event `first` and position `first_position` on
    out = [np.full(len(a) + (5 if i == 3 else 3), -7, dtype=np.int64) for i, a in enumerate(want)]
    merge_by_end(parts, out, 3, 5)
    assert [a[3:].tolist() for i, a in enumerate(out) if i not in (2, 3)] == \
        [a.tolist() for i, a in enumerate(want) if i not in (2, 3)]
    assert out[2][3:].tolist() == (want[2] + 5).tolist()
    assert out[3][5:len(want[3]) + 5].tolist() == want[3].tolist()


def test_queries_that_cross_partitions_run_on_one_worker():
    q = cercore.compile("SELECT * FROM S WHERE SELL ; BUY WITHIN 5 [ts]", DECL)
    assert shards_for(q.analysed, 4) == (
        1, "one worker: without PARTITION BY every event is in one partition")
    q = cercore.compile("SELECT * FROM S WHERE SELL ; BUY PARTITION BY [name] WITHIN 5 [ts] "
                        "CONSUME BY ANY", DECL)
    assert shards_for(q.analysed, 4)[0] == 1
    engine = q.engine()
    list(engine.process(trades(100), workers=4))
    assert not isinstance(engine.evaluator, ShardedEvaluator)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_workers_must_be_a_positive_whole_number(bad):
    q = cercore.compile(KEYED[0], DECL)
    with pytest.raises(cercore.ConfigError, match="workers"):
        q.engine().process_arrays(trades(10), workers=bad)


def test_one_worker_unless_asked():
    """The shards are not faster than one evaluator on every query (runtime/shards.py):
    nothing splits by default, in bulk or live; a live feed never splits."""
    q = cercore.compile(KEYED[0], DECL)
    for events in (table(trades(1000)), trades(1000), iter(trades(1000))):
        engine = q.engine()
        list(engine.process(events))
        assert not isinstance(engine.evaluator, ShardedEvaluator)
    engine = q.engine()
    list(engine.process(iter(trades(1000)), workers=2))
    assert isinstance(engine.evaluator, ShardedEvaluator)  # (asked: the record path routes)


__all__ = ["BACKENDS"]
