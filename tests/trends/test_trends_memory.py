"""Bounded memory of trend aggregation: with a window, what the engine holds -- open windows,
their aggregators, stored events -- stays flat however long the stream (COGRA keeps
aggregates, not events, except the event-grained variables of the mixed granularity, whose
stored events are bounded by the events of the open windows)."""

from __future__ import annotations

import random

import pytest

from cercore.trends import compile_trend

SCHEMA = "CREATE STREAM S { EVENT A { v:int, c:int, t:primary_time }, EVENT B { v:int, c:int, " \
         "t:primary_time } }"
SIZE, SLIDE, COMPANIES = 40, 10, 3


def stream(n: int):
    rng = random.Random(5)
    v = 0
    for t in range(n):
        v += rng.choice((-1, 1))
        yield (rng.choice("AAB"), {"v": v, "c": t % COMPANIES, "t": t})


def peak_state(text: str, backend: str, n: int) -> dict:
    engine = compile_trend(text, SCHEMA).engine(backend)
    peak: dict = {}
    events = list(stream(n))
    for k in range(0, n, 250):
        for _ in engine.process(events[k:k + 250]):
            pass
        for key, value in engine.state_size().items():
            peak[key] = max(peak.get(key, 0), value)
    engine.flush()
    assert engine.state_size()["aggregators"] == 0  # everything is released at the end
    return peak


@pytest.mark.parametrize("semantics, where, stores", [
    ("skip-till-any-match", "", False),
    ("skip-till-next-match", "", False),
    ("contiguous", "", True),
    ("skip-till-any-match", "AND A.v < NEXT(A).v", True),
    ("skip-till-next-match", "AND A.v < NEXT(A).v", True),
])
def test_state_is_flat_in_stream_length(backend, semantics, where, stores):
    text = (f"RETURN COUNT(*), SUM(A.v) PATTERN SEQ(A+, B) SEMANTICS {semantics} "
            f"WHERE [c] {where} WITHIN {SIZE} SLIDE {SLIDE}")
    short, long = peak_state(text, backend, 2_000), peak_state(text, backend, 16_000)
    windows = -(-SIZE // SLIDE) + 1
    assert long["open_windows"] <= windows
    assert long["aggregators"] <= windows * COMPANIES
    # each event is stored at most once per window that holds it
    assert long["stored_events"] <= (windows * SIZE if stores else 0)
    # flat: the long stream's peaks are the short one's (stored events vary with the data,
    # within their bound)
    assert {k: long[k] for k in ("open_windows", "aggregators")} == \
        {k: short[k] for k in ("open_windows", "aggregators")}


def test_advance_closes_windows_without_a_new_event():
    q = compile_trend("RETURN COUNT(*) PATTERN A+ WITHIN 4 SLIDE 4", SCHEMA)
    engine = q.engine("python")
    events = [("A", {"v": 0, "c": 0, "t": t}) for t in (0, 1, 3)]
    assert list(engine.process(events)) == []
    assert engine.advance(3) == []            # [0, 4) may still get events at time 3
    assert engine.advance(4) == [{"window_start": 0, "window_end": 4, "COUNT(*)": 7}]
    assert engine.state_size()["aggregators"] == 0
    with pytest.raises(ValueError, match="before the last event"):
        engine.advance(2)
    assert list(engine.process([("A", {"v": 0, "c": 0, "t": 5})])) == []
    assert engine.flush() == [{"window_start": 4, "window_end": 8, "COUNT(*)": 1}]


@pytest.mark.parametrize("seed", range(6))
def test_watermarks_do_not_change_results(backend, seed):
    """advance(t) between events (t up to the next event's time) only makes rows come out
    earlier: the rows, and their order, equal a run without watermarks."""
    rng = random.Random(seed)
    q = compile_trend("RETURN COUNT(*), SUM(A.v), MAX(B.v) PATTERN SEQ(A+, B) SEMANTICS "
                      f"{rng.choice(['skip-till-any-match', 'skip-till-next-match', 'contiguous'])}"
                      " WHERE [c] AND A.v < NEXT(A).v WITHIN 7 SLIDE 3", SCHEMA)
    events, t = [], 0
    for _ in range(300):
        t += rng.choice([0, 0, 1, 2, 5])
        events.append((rng.choice("AAB"), {"v": rng.randint(0, 9), "c": rng.randint(0, 2),
                                            "t": t}))
    engine = q.engine(backend)
    rows, last = [], 0
    for etype, attrs in events:
        if rng.random() < 0.3:
            last = rng.randint(last, attrs["t"])
            rows += engine.advance(last)
        rows += engine.process([(etype, attrs)])
        last = attrs["t"]
    rows += engine.flush()
    assert rows == q.run(events, backend=backend)


def test_compiled_windows_stay_out_of_the_collector_and_are_freed():
    """The compiled windows are not tracked by Python's cycle collector (one per window and
    partition: tracked, the collector's passes took 16 % of a trend query's time), in every
    mode (int64, exact Python numbers, handed to the reference); and, since a cycle through
    one would never be collected, engines run one after another hold no more memory than
    the first."""
    import gc
    import tracemalloc

    pytest.importorskip("cercore_fast.trends")
    schema = "CREATE STREAM S { EVENT A { v:int, c:int, t:primary_time } }"
    text = ("RETURN c, COUNT(*), SUM(A.v) PATTERN A+ WHERE [c] AND A.v < NEXT(A).v "
            "GROUP-BY c WITHIN 40 SLIDE 10")
    rng = random.Random(3)
    small = [("A", {"v": rng.randint(0, 50), "c": t % 3, "t": t}) for t in range(600)]
    huge = [("A", {"v": 2 ** 60 + a["v"], "c": a["c"], "t": a["t"] + 600}) for _, a in small]
    q = compile_trend(text, schema)

    def run_once() -> set:
        engine = q.engine("cython")
        modes = set()
        for chunk in (small, huge):
            for k in range(0, len(chunk), 100):
                list(engine.process(chunk[k:k + 100]))
                windows = [w for parts in engine.open.values() for w in parts.values()]
                assert windows and not any(gc.is_tracked(w) for w in windows)
                modes |= {w.mode for w in windows}
        engine.flush()
        return modes

    assert run_once() == {"int64", "reference"}
    tracemalloc.start()
    try:
        run_once()
        gc.collect()
        first = tracemalloc.get_traced_memory()[0]
        for _ in range(5):
            run_once()
        gc.collect()
        assert tracemalloc.get_traced_memory()[0] - first < 64 * 1024
    finally:
        tracemalloc.stop()
