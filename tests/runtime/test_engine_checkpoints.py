"""Checkpoints are consistent or refused: an engine whose ``process()``
generator is suspended in the middle of a batch refuses to be pickled, moved to another
backend, fed, advanced or flushed; one whose generator was closed mid-batch refuses further use;
between batches a pickle restores to exactly the uninterrupted run."""

from __future__ import annotations

import pickle

import pytest

import cercore
from cercore.trends import compile_trend

DECL = "CREATE STREAM S { EVENT A { k:int, ts:int }, EVENT B { k:int, ts:int } }"
SCHEMA = cercore.Schema.parse(DECL, time_attribute="ts")
QUERY = "SELECT * FROM S WHERE A ; B WITHIN 50 SECONDS"
EVENTS = [("AB"[i % 2], {"k": 0, "ts": i}) for i in range(40_000)]


def test_a_suspended_engine_refuses_everything_until_the_batch_is_done(backend):
    engine = cercore.compile(QUERY, SCHEMA).engine(backend)
    gen = engine.process(EVENTS)
    next(gen)  # suspended inside the first batch
    for attempt in (lambda: pickle.dumps(engine), lambda: engine.to_backend("python"),
                    lambda: engine.push("A", {"k": 0, "ts": 10**6}), lambda: engine.flush(),
                    lambda: engine.advance(10**6), lambda: list(engine.process([])),
                    lambda: engine.process_arrays([])):
        with pytest.raises(cercore.CercoreError, match="middle of a batch"):
            attempt()
    rest = list(gen)  # finishing the generator makes the engine usable again
    assert rest and pickle.loads(pickle.dumps(engine)).stats["events"] == len(EVENTS)


def test_closing_a_generator_mid_batch_leaves_the_engine_refusing(backend):
    engine = cercore.compile(QUERY, SCHEMA).engine(backend)
    gen = engine.process(EVENTS)
    next(gen)
    gen.close()
    with pytest.raises(cercore.CercoreError, match="closed .or failed. in the middle"):
        engine.push("A", {"k": 0, "ts": 10**6})
    with pytest.raises(cercore.CercoreError):
        pickle.dumps(engine)


def test_a_bad_event_keeps_the_engine_consistent(backend):
    engine = cercore.compile(QUERY, SCHEMA).engine(backend)
    with pytest.raises(cercore.EventError):
        list(engine.process(EVENTS[:10] + [("A", {"k": 0, "ts": 0})]))
    assert engine.stats["events"] == 10
    after = {(ce.start, ce.end) for ce in engine.process([("B", {"k": 0, "ts": 20})])}
    assert after == {(a, 10) for a in (0, 2, 4, 6, 8)}


def test_checkpoints_between_batches_restore_exactly(backend):
    q = cercore.compile(QUERY, SCHEMA)
    whole = [(ce.start, ce.end, ce.positions) for ce in q.engine(backend).process(EVENTS)]
    engine = q.engine(backend)
    got = [(ce.start, ce.end, ce.positions) for ce in engine.process(EVENTS[:25_000])]
    restored = pickle.loads(pickle.dumps(engine))
    got += [(ce.start, ce.end, ce.positions) for ce in restored.process(EVENTS[25_000:])]
    assert got == whole


def test_trend_engines_are_guarded_too(backend):
    q = compile_trend("RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 10 SLIDE 10", SCHEMA)
    engine = q.engine(backend)
    gen = engine.process(EVENTS)
    next(gen)
    with pytest.raises(cercore.CercoreError, match="middle of a batch"):
        pickle.dumps(engine)
    gen.close()
    with pytest.raises(cercore.CercoreError, match="closed"):
        engine.flush()
