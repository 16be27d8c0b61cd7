"""Pickling: an engine pickled mid-stream continues exactly where it stopped, on either backend,
and a state saved by one backend loads into the other (``cercore.interface.state``)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from support import BACKENDS

import cercore
from cercore.interface.state import STATE_FORMAT, EvaluatorState
from cercore.runtime.backend import CYTHON_AVAILABLE
from cercore.runtime.evaluator import PythonEvaluator

DECL = "CREATE STREAM S { EVENT A { k:int, v:int, ts:int }, EVENT B { k:int, v:int, ts:int } }"
QUERIES = [
    "SELECT * FROM S WHERE (A)+ ; B WITHIN 12 EVENTS",
    "SELECT * FROM S WHERE A AS x ; (A OR B)+ ; B AS y FILTER x[v < 2] AND y[v > 1] WITHIN 6 [ts]",
    "SELECT * FROM S WHERE A ; A ; B PARTITION BY [k] WITHIN 20 EVENTS",
    "SELECT * FROM S WHERE A ; B FILTER A[v = 0] AND B[v > 1]",
    # strategies keep per-partition pre states; CONSUME BY and LIMIT; projection and bindings
    "SELECT NEXT * FROM S WHERE A ; A+ ; B PARTITION BY [k] WITHIN 8 EVENTS",
    "SELECT MAX x FROM S WHERE A AS x ; (A OR B)+ ; B WITHIN 10 [ts]",
    "SELECT LAST * FROM S WHERE A ; B PARTITION BY [k] CONSUME BY PARTITION LIMIT 1",
    "SELECT STRICT * FROM S WHERE A : B+ CONSUME BY ANY",
]


def stream(n: int, seed: int = 3):
    import random

    rnd = random.Random(seed)
    ts, out = 0, []
    for _ in range(n):
        ts += rnd.choice([0, 1, 2])
        out.append(("A" if rnd.random() < 0.6 else "B",
                    {"k": rnd.randrange(4), "v": rnd.randrange(4), "ts": ts}))
    return out


def triples(ces):
    # bindings cost a pass over each complex event's span: check a sample of them
    return [(c.start, c.end, c.positions, [e.position for e in c.events],
             c.bindings if c.end % 97 == 0 else None) for c in ces]


@pytest.fixture
def small_compaction(monkeypatch):
    import cercore.runtime.evaluator as pe

    monkeypatch.setattr(pe, "MIN_COMPACTION", 64)
    if CYTHON_AVAILABLE:
        import cercore_fast.evaluator as ce

        monkeypatch.setattr(ce, "MIN_COMPACTION", 64)


def test_compiled_query_pickles():
    q = cercore.compile(QUERIES[1], DECL)
    q2 = pickle.loads(pickle.dumps(q))
    assert q2.text == q.text and q2.ast == q.ast
    assert triples(q2.engine("python").process(stream(200))) == \
        triples(q.engine("python").process(stream(200)))


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("first", BACKENDS)
@pytest.mark.parametrize("second", BACKENDS)
def test_round_trip_mid_stream(small_compaction, query, first, second):
    events = stream(900)
    cut = 400
    q = cercore.compile(query, DECL)
    ref_engine = q.engine("python")
    reference = triples(ref_engine.process(events))

    engine = q.engine(first)
    got = triples(engine.process(events[:cut]))
    n_first = len(got)
    blob = pickle.dumps(engine)
    restored = pickle.loads(blob)
    if second != first:
        restored = restored.to_backend(second)
    assert restored.backend == second
    assert type(restored.evaluator).backend == second
    assert restored.stats["tecs_nodes"] == engine.stats["tecs_nodes"]
    got += triples(restored.process(events[cut:]))
    assert got == reference
    # the work counters travel with the state: the restored engine counts on from the cut
    assert restored.evaluator.work_counts() == ref_engine.evaluator.work_counts()
    # the original engine is untouched by pickling and by to_backend
    assert triples(engine.process(events[cut:])) == reference[n_first:]


def test_pickle_many_times(small_compaction, backend):
    events = stream(2000, seed=11)
    q = cercore.compile(QUERIES[2], DECL)
    reference = triples(q.engine("python").process(events))
    engine, got = q.engine(backend), []
    for i in range(0, len(events), 137):
        got += triples(engine.process(events[i:i + 137]))
        engine = pickle.loads(pickle.dumps(engine))
    assert got == reference


@pytest.mark.skipif(not CYTHON_AVAILABLE, reason="the Cython backend is not built")
def test_cross_backend_evaluator_state():
    from cercore_fast.evaluator import CythonEvaluator

    q = cercore.compile(QUERIES[0], DECL)
    e_py, e_cy = q.engine("python"), q.engine("cython")
    for e in (e_py, e_cy):
        list(e.process(stream(300)))
    s_py, s_cy = e_py.evaluator.to_state(), e_cy.evaluator.to_state()
    for name in ("kind", "pos", "maxs", "left", "right", "part_ids", "part_offsets",
                 "entry_states", "entry_offsets", "list_nodes", "table"):
        np.testing.assert_array_equal(getattr(s_py, name), getattr(s_cy, name), err_msg=name)
    assert (s_py.compact_at, s_py.last_tau, s_py.reclaimed) == \
        (s_cy.compact_at, s_cy.last_tau, s_cy.reclaimed)

    # a pickled Python evaluator state loads into a Cython evaluator and vice versa
    state = e_py.evaluator.__getstate__()
    assert state["format"] == STATE_FORMAT and state["backend"] == "python"
    cy = CythonEvaluator.__new__(CythonEvaluator)
    cy.__setstate__(state)
    assert cy.memory_nodes() == e_py.evaluator.memory_nodes()
    py = PythonEvaluator.__new__(PythonEvaluator)
    py.__setstate__(e_cy.evaluator.__getstate__())
    assert py.partitions == e_py.evaluator.partitions
    assert py.table == e_py.evaluator.table
    assert py.arena.left == e_py.evaluator.arena.left


def test_state_without_work_counters_loads():
    """A format-2 state written before the work counters existed loads with zero counts."""
    q = cercore.compile(QUERIES[0], DECL)
    e = q.engine("python")
    list(e.process(stream(50)))
    assert e.evaluator.work_counts()["events"] == 50
    state = e.evaluator.__getstate__()
    del state["evaluator"]["work"]
    py = PythonEvaluator.__new__(PythonEvaluator)
    py.__setstate__(state)
    assert py.memory_nodes() == e.evaluator.memory_nodes()
    assert set(py.work_counts().values()) == {0}


def test_unknown_format_is_refused():
    q = cercore.compile(QUERIES[0], DECL)
    state = q.engine("python").evaluator.__getstate__()
    state["format"] = 99
    with pytest.raises(ValueError, match="format"):
        PythonEvaluator.__new__(PythonEvaluator).__setstate__(state)


def test_state_validation():
    q = cercore.compile(QUERIES[0], DECL)
    e = q.engine("python")
    list(e.process(stream(50)))
    d = e.evaluator.to_state().to_dict()
    d["left"] = np.append(d["left"], 10**9)
    d["kind"] = np.append(d["kind"], 0)
    d["pos"] = np.append(d["pos"], 0)
    d["maxs"] = np.append(d["maxs"], 0)
    d["right"] = np.append(d["right"], -1)
    with pytest.raises(ValueError, match="out of range"):
        EvaluatorState.from_dict(d)
