"""The engine <-> evaluator contract (cercore.interface.evaluator): both backends satisfy it, the
engine uses nothing else, and window arithmetic cannot wrap at the ends of int64 (times near
INT64_MIN, and runs starting far in the past without a window, must neither overflow nor open
a window that wrongly contains them)."""

from __future__ import annotations

import pytest
from strategies import SCHEMAS

import cercore
from cercore.interface import constants
from cercore.interface.evaluator import Evaluator
from cercore.interface.letters import LettersKernel
from cercore.runtime.backend import Backend

MEMBERS = {name for name in dir(Evaluator) if not name.startswith("_")} | {
    "backend", "reported", "on_reclaim"}


USED: set[str] = set()  # the members used through an OnlyTheInterface


class OnlyTheInterface:
    """A kernel seen through its interface only (``members``: by default the evaluator's):
    any other member is an AttributeError."""

    def __init__(self, kernel, members: set[str] = MEMBERS) -> None:
        self._kernel = kernel
        self._members = members

    def __getattr__(self, name: str):
        USED.add(name)
        if name not in self._members:
            raise AttributeError(f"the engine used {name!r}, which the interface does not "
                                 "declare")
        return getattr(self._kernel, name)


def event(t: str, ts: int, k: int = 0) -> tuple[str, dict]:
    attrs = {"v": 1, "w": 0.0, "s": "a", "b": True, "k": k, "g": 0, "ts": ts}
    keep = {a for a, _ in SCHEMAS["seconds"].event_types[t].attributes}
    return t, {a: v for a, v in attrs.items() if a in keep}


def test_both_backends_satisfy_the_interface(backend):
    engine = cercore.compile("SELECT * FROM S WHERE A ; B", SCHEMAS["seconds"]).engine(backend)
    assert isinstance(engine.evaluator, Evaluator)
    for name in MEMBERS:
        assert hasattr(engine.evaluator, name), name


@pytest.mark.parametrize("query", [
    "SELECT * FROM S, T WHERE A ; B+ ; D PARTITION BY [k] WITHIN 5 SECONDS",
    "SELECT * FROM S WHERE A ; B WITHIN 2 SECONDS CONSUME BY ANY LIMIT 1",
    "SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 2 SECONDS CONSUME BY PARTITION",
    "SELECT * FROM S WHERE A ; B WITHIN 4 EVENTS",
    "SELECT * FROM S WHERE A AS a ; B+ AS b FILTER b.v > a.v - 1 AND b.w <= NEXT(b).w "
    "PARTITION BY [k] WITHIN 3 SECONDS CONSUME BY PARTITION",
])
def test_the_engine_uses_only_the_interface(backend, query):
    events = [event("ABD"[i % 3], i // 2, i % 2) for i in range(40_000)]
    compiled = cercore.compile(query, SCHEMAS["seconds"])
    expected = [(ce.start, ce.end, ce.positions) for ce in compiled.engine(backend).process(events)]
    engine = compiled.engine(backend)
    engine.evaluator = OnlyTheInterface(engine.evaluator)
    got = [(ce.start, ce.end, ce.positions, ce.bindings) for ce in engine.process(events)]
    assert [g[:3] for g in got] == expected and expected
    pushed = compiled.engine(backend)  # the record path
    pushed.evaluator = OnlyTheInterface(pushed.evaluator)
    assert [(ce.start, ce.end, ce.positions) for e in events[:3000]
            for ce in pushed.push(*e)] == [c for c in expected if c[1] < 3000]
    arrays = compiled.engine(backend)
    arrays.evaluator = OnlyTheInterface(arrays.evaluator)
    assert len(arrays.process_arrays(events)) == len(expected)
    assert engine.stats["complex_events"] == len(expected)
    live = compiled.engine(backend)  # a live iterator: the record path through process
    live.evaluator = OnlyTheInterface(live.evaluator)
    assert [(ce.start, ce.end, ce.positions) for ce in live.process(iter(events[:3000]))] \
        == [c for c in expected if c[1] < 3000]
    multi = cercore.multi_engine([compiled], backend=backend)  # each query's own engine
    multi.engines[0].evaluator = OnlyTheInterface(multi.engines[0].evaluator)
    assert [(m.start, m.end, m.positions) for m in multi.process(events)] == expected


class LettersThroughTheInterface(Backend):
    """The compiled backend whose letters kernel is seen through ``LettersKernel`` only."""

    __slots__ = ()

    @property
    def letters(self):
        return OnlyTheInterface(super().letters, LETTERS_MEMBERS)


LETTERS_MEMBERS = {name for name in dir(LettersKernel) if not name.startswith("_")}


@pytest.mark.skipif(cercore.BACKEND != "cython", reason="the Cython kernels are not built")
@pytest.mark.parametrize("query", [
    "SELECT * FROM S, T WHERE A ; B+ ; D PARTITION BY [k] WITHIN 5 SECONDS",
    "SELECT * FROM S, T WHERE T>C ; (A AS a OR B AS b) FILTER a[s = 'a'] AND b[v > 0] "
    "WITHIN 3 SECONDS",
])
def test_the_engine_uses_only_the_letters_kernel_interface(query):
    """Every batch path (process, process_arrays, a MultiEngine) reaches the compiled letters
    passes through ``cercore.interface.letters.LettersKernel`` only."""
    events = [event("ABCD"[i % 4], i // 3, i % 2) for i in range(20_000)]
    compiled = cercore.compile(query, SCHEMAS["seconds"])
    expected = [(ce.start, ce.end, ce.positions)
                for ce in compiled.engine("python").process(events)]
    USED.clear()
    engine = compiled.engine("cython")
    engine.kernels = LettersThroughTheInterface("cython")
    assert [(ce.start, ce.end, ce.positions) for ce in engine.process(events)] == expected
    arrays = compiled.engine("cython")
    arrays.kernels = LettersThroughTheInterface("cython")
    assert len(arrays.process_arrays(events)) == len(expected)
    multi = cercore.multi_engine([compiled], backend="cython")
    for e in multi.engines:
        e.kernels = LettersThroughTheInterface("cython")
    assert [(m.start, m.end, m.positions) for m in multi.process(events)] == expected
    assert USED == LETTERS_MEMBERS  # (the wrapper was in the way)


MIN, MAX = constants.INT64_MIN, constants.INT64_MAX


@pytest.mark.parametrize("query,times,expected", [
    # window start t - epsilon below INT64_MIN: saturates, the run is inside the window
    ("SELECT * FROM S WHERE A ; B WITHIN 10 SECONDS", [MIN, MIN + 3], [(0, 1)]),
    ("SELECT * FROM S WHERE A ; B WITHIN 2 SECONDS", [MIN, MIN + 3], []),
    # huge windows: a span of exactly epsilon fits (inclusive), one more does not
    (f"SELECT * FROM S WHERE A ; B WITHIN {1 << 62} SECONDS", [MIN, MIN + (1 << 62)], [(0, 1)]),
    (f"SELECT * FROM S WHERE A ; B WITHIN {1 << 62} SECONDS", [MIN, MIN + (1 << 62) + 1], []),
    (f"SELECT * FROM S WHERE A ; B WITHIN {1 << 62} SECONDS", [MIN, MIN, MAX], []),
    ("SELECT * FROM S WHERE A ; B WITHIN 5 SECONDS", [MAX - 5, MAX], [(0, 1)]),
    # no window: runs that start before -2^62 (the old "unbounded past") are reported
    ("SELECT * FROM S WHERE A ; B", [MIN, -(1 << 62) - 1, MAX], [(0, 2)]),
    ("SELECT * FROM S WHERE A ; C", [MIN, MIN + 1, MIN + 2], [(0, 2)]),
])
def test_window_arithmetic_at_the_ends_of_int64(backend, query, times, expected):
    types = "ACB" if len(times) == 3 else "AB"
    if "A ; C" in query:
        types = "ABC"
    events = [event(t, ts) for t, ts in zip(types, times)]
    got = [(ce.start, ce.end) for ce in
           cercore.compile(query, SCHEMAS["seconds"]).engine(backend).process(events)]
    assert got == expected
