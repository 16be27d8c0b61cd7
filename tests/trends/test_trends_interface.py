"""The engine <-> trend runner contract (cercore.interface.trends): both backends satisfy it, and
the trend engine uses nothing else -- in bulk, one event at a time, with watermarks, at the end
of the stream, and through a pickle."""

from __future__ import annotations

import pickle
import random

import pyarrow as pa
import pytest

from cercore.interface.trends import TrendRunner, WindowAggregator
from cercore.trends import compile_trend

MEMBERS = {name for name in dir(TrendRunner) if not name.startswith("_")} | {
    "backend", "aggregators"}
AGGREGATOR_MEMBERS = {name for name in dir(WindowAggregator) if not name.startswith("_")}

SCHEMA = ("CREATE STREAM S { EVENT A { v:int, x:double, g:int, t:primary_time }, "
          "EVENT B { v:int, x:double, g:int, t:primary_time } }")
QUERIES = [
    "RETURN g, COUNT(*), SUM(A.x), MIN(A.v) PATTERN SEQ(A+, B) WHERE [g] GROUP-BY g "
    "WITHIN 20 SLIDE 5",
    "RETURN COUNT(*), SUM(A.v) PATTERN (SEQ(A+, B))+ SEMANTICS skip-till-next-match "
    "WHERE A.v < NEXT(A).v WITHIN 30 SLIDE 30",
    "RETURN COUNT(*), MAX(B.x) PATTERN SEQ(A, B+) SEMANTICS contiguous WHERE [g] AND "
    "A.v <= NEXT(B).v",
]


class OnlyTheInterface:
    """A runner seen through the interface only: any other member is an AttributeError."""

    def __init__(self, runner) -> None:
        self._runner = runner

    def __getattr__(self, name: str):
        if name not in MEMBERS:
            raise AttributeError(f"the engine used {name!r}, which TrendRunner does not declare")
        return getattr(self._runner, name)


def stream(seed: int, n: int = 400) -> list:
    rng = random.Random(seed)
    v, t, out = 0, 0, []
    for _ in range(n):
        v += rng.choice((-1, 1))
        t += rng.choice((0, 1, 1, 2))
        out.append((rng.choice("AAB"), {"v": v, "x": rng.uniform(-1, 1), "g": rng.randint(0, 2),
                                        "t": t}))
    return out


def test_both_backends_satisfy_the_interface(backend):
    engine = compile_trend(QUERIES[0], SCHEMA).engine(backend)
    assert engine.backend == backend
    assert isinstance(engine.runner, TrendRunner)
    for name in MEMBERS:
        assert hasattr(engine.runner, name), name
    list(engine.process(stream(2)[:50]))
    aggregators = [a for parts in engine.open.values() for a in parts.values()]
    assert aggregators
    for agg in aggregators:
        assert isinstance(agg, WindowAggregator)
        assert all(hasattr(agg, name) for name in AGGREGATOR_MEMBERS)


@pytest.mark.parametrize("text", QUERIES)
def test_the_engine_uses_only_the_interface(backend, text):
    q = compile_trend(text, SCHEMA)
    events = stream(len(text))
    expected = q.run(events, backend=backend)
    assert expected
    engine = q.engine(backend)
    engine.runner = OnlyTheInterface(engine.runner)
    table = pa.Table.from_pylist([{"event_type": e, **a} for e, a in events[:150]])
    rows = list(engine.process(table))                      # in bulk (an Arrow table)
    for e, a in events[150:250]:                             # one at a time, with watermarks
        rows += engine.push(e, a)
        rows += engine.advance(a["t"])
    engine = pickle.loads(pickle.dumps(engine))              # (the wrapper pickles its runner)
    rows += list(engine.process(events[250:])) + engine.flush()
    assert rows == expected
    assert engine.state_size()["aggregators"] == 0
