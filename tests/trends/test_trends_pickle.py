"""Checkpointing trend aggregation: an engine pickled mid-stream and restored goes on exactly
as if it had not stopped -- on both backends, in every mode of the compiled windows (int64,
exact Python numbers, handed to the reference), with pending timestamp groups and open
windows."""

from __future__ import annotations

import pickle
import random

import pytest

from cercore.trends import compile_trend

SCHEMA = ("CREATE STREAM S { EVENT A { v:int, x:double, g:int, t:primary_time }, "
          "EVENT B { v:int, x:double, g:int, t:primary_time } }")
QUERIES = [
    "RETURN g, COUNT(*), SUM(A.x), MIN(A.v) PATTERN SEQ(A+, B) WHERE [g] GROUP-BY g "
    "WITHIN 40 SLIDE 10",
    "RETURN COUNT(*), SUM(A.v), MAX(B.x) PATTERN (SEQ(A+, B))+ WHERE B.v > NEXT(A).v "
    "WITHIN 200 SLIDE 50",  # mixed; long windows: object mode
    "RETURN COUNT(*), AVG(A.v) PATTERN SEQ(A+, B) SEMANTICS skip-till-next-match "
    "WHERE A.v < NEXT(A).v WITHIN 30 SLIDE 30",
    "RETURN COUNT(*), COUNT(B) PATTERN SEQ(A, B+) SEMANTICS contiguous WHERE [g]",
    "RETURN COUNT(*), SUM(A.v) PATTERN SEQ(A+, B) WHERE A.v * 2 - 1 < NEXT(A).v + 0.5 "
    "WITHIN 60 SLIDE 20",  # arithmetic between adjacent events, computed by the kernel
    "RETURN COUNT(*), SUM(A.v) PATTERN A+ WHERE A.v < NEXT(A).v",  # huge values: reference
]


def stream(seed: int, huge: bool) -> list:
    rng = random.Random(seed)
    v, t, out = 0, 0, []
    for _ in range(400):
        v += rng.choice((-1, 1))
        t += rng.choice((0, 1, 1, 2))
        value = 2 ** 60 + v if huge else v
        out.append((rng.choice("AAB"), {"v": value, "x": rng.uniform(-1, 1),
                                         "g": rng.randint(0, 1), "t": t}))
    return out


@pytest.mark.parametrize("text", QUERIES)
def test_restored_engine_goes_on_exactly(backend, text):
    q = compile_trend(text, SCHEMA)
    events = stream(len(text), huge=text == QUERIES[-1])
    whole = q.run(events, backend=backend)
    assert whole
    for cut in (1, 137, 301):
        engine = q.engine(backend)
        rows = list(engine.process(events[:cut]))
        modes = {getattr(a, "mode", "python") for p in engine.open.values() for a in p.values()}
        restored = pickle.loads(pickle.dumps(engine))
        assert restored.state_size() == engine.state_size()
        if backend == "cython":
            assert {a.mode for p in restored.open.values() for a in p.values()} == modes
        rows += list(restored.process(events[cut:])) + restored.flush()
        assert [repr(r) for r in rows] == [repr(r) for r in whole], cut


def test_a_window_pickled_without_its_nodes_values_goes_on():
    """A compiled window pickled before stored nodes kept their events' values (each side
    was then the attribute itself) restores from its compared values, and a later hand-over
    to the reference reads them: the rows of one uninterrupted run."""
    pytest.importorskip("cercore_fast.trends")
    q = compile_trend("RETURN COUNT(*), SUM(A.v) PATTERN A+ WHERE A.v < NEXT(A).v", SCHEMA)
    early = stream(5, huge=False)
    late = [(typ, {**a, "v": a["v"] + 2 ** 60, "t": a["t"] + early[-1][1]["t"] + 1})
            for typ, a in stream(6, huge=False)]  # beyond 2^53: the reference takes over
    engine = q.engine("cython")
    rows = list(engine.process(early))
    restored = pickle.loads(pickle.dumps(engine))
    for parts in restored.open.values():
        for pid, window in list(parts.items()):
            restore, (kernel, state) = window.__reduce__()
            assert state[0] == "vectors" and state[2], "no stored node to restore"
            old = (state[0], state[1], [node[:3] for node in state[2]])
            parts[pid] = restore(kernel, old)
    rows += list(restored.process(late))
    assert {a.mode for p in restored.open.values() for a in p.values()} == {"reference"}
    rows += restored.flush()
    assert [repr(r) for r in rows] == [repr(r) for r in q.run(early + late, backend="python")]
