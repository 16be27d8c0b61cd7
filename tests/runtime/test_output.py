"""The complex event view: the compiled class (cercore_fast.output) and the pure-Python one
behave the same — construction by hand, lazy times/events/bindings from a source, equality,
hashing, repr, to_dict and pickling (which carries the events). Both come from one file,
cercore/interface/complex_event.py, which runs without Cython installed."""

from __future__ import annotations

import gc
import inspect
import os
import pickle
import subprocess
import sys

import pytest

from cercore.runtime.output import ComplexEvent, Event, PureComplexEvent

CLASSES = [PureComplexEvent] + ([ComplexEvent] if ComplexEvent is not PureComplexEvent else [])
EVENTS = {p: Event("A", p, {"v": p, "ts": 10 * p}) for p in range(6)}


class Source:
    def __init__(self) -> None:
        self.reads = 0

    def time(self, p: int) -> int:
        self.reads += 1
        return 10 * p

    def event(self, p: int) -> Event:
        self.reads += 1
        return EVENTS[p]

    def events(self, ce) -> list[Event]:
        return [self.event(p) for p in ce.positions]

    def bindings(self, ce) -> dict:
        return {"x": ce.positions[:1]}


@pytest.mark.parametrize("cls", CLASSES)
def test_view_is_lazy(cls):
    src = Source()
    ce = cls.view(1, 4, (1, 4), src)
    assert src.reads == 0
    assert (ce.start, ce.end, ce.positions) == (1, 4, (1, 4))
    assert (ce.start_time, ce.end_time) == (10, 40)
    assert ce.events == [EVENTS[1], EVENTS[4]]
    reads = src.reads
    ce.events  # noqa: B018 - cached
    assert src.reads == reads
    assert ce.bindings == {"x": (1,)}
    assert ce.to_dict() == {"start": 1, "end": 4, "start_time": 10, "end_time": 40,
                            "positions": [1, 4], "events": [e.to_dict() for e in ce.events]}


@pytest.mark.parametrize("cls", CLASSES)
def test_by_hand_equality_and_pickle(cls):
    ce = cls(0, 2, (0, 2), 1, 3, EVENTS.__getitem__)
    assert ce.start_time == 1 and ce.end_time == 3 and ce.bindings == {}
    assert ce == PureComplexEvent(0, 2, (0, 2)) and hash(ce) == hash(cls(0, 2, (0, 2)))
    assert ce != cls(0, 2, (2,))
    assert repr(ce) == "ComplexEvent(start=0, end=2, positions=(0, 2))"
    back = pickle.loads(pickle.dumps(ce))
    assert type(back) is cls and back == ce
    assert back.events == ce.events and back.start_time == 1


@pytest.mark.skipif(ComplexEvent is PureComplexEvent, reason="the extension is not built")
def test_compiled_from_the_same_source():
    import cercore_fast.output as compiled

    import cercore.interface.complex_event as source

    assert compiled.__doc__ == source.__doc__
    assert inspect.getdoc(compiled.ComplexEvent).endswith(inspect.getdoc(source.ComplexEvent))
    # a C class the cyclic GC does not track (10^5 complex events in a list cost no GC walks)
    assert not gc.is_tracked(ComplexEvent.view(0, 1, (0, 1), Source()))
    assert not gc.is_tracked(ComplexEvent(0, 1, (0, 1)))


def test_runs_without_cython_installed():
    code = ("import sys; sys.modules['cython'] = None\n"
            "import pickle\n"
            "from cercore.runtime.output import ComplexEvent, PureComplexEvent\n"
            "ce = ComplexEvent(0, 2, (0, 2), 1, 3, {0: 'a', 2: 'b'}.__getitem__)\n"
            "assert ComplexEvent is PureComplexEvent and ce.events == ['a', 'b']\n"
            "assert pickle.loads(pickle.dumps(ce)) == ce and ce.end_time == 3\n")
    env = dict(os.environ, CERCORE_PURE_PYTHON="1")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
