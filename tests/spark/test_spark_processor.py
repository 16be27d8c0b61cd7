"""The transformWithState processor (``cercore.spark.streaming.CerProcessor``) under
pyspark's ``TwsTester``: no JVM, so these are fast. Rows arrive out of order in chunks, the
watermark moves, and the complex events emitted must be the local engine's over the accepted
(non-late) events in (time, seq) order; state is evicted once the window makes it dead, and
positions keep counting after eviction; a checkpoint in another state format is refused.
"""

from __future__ import annotations

import datetime
import random

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")

from pyspark.sql import Row  # noqa: E402
from pyspark.sql.streaming.tws_tester import TwsTester  # noqa: E402
from pyspark.sql.types import (  # noqa: E402
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

import cercore  # noqa: E402
from cercore.spark.frames import infer_schema  # noqa: E402
from cercore.spark.job import KEY, SEQ, TIME, TYPE, US, EngineJob  # noqa: E402
from cercore.spark.streaming import STATE_VERSION, CerProcessor  # noqa: E402

USER = StructType([StructField("event_type", StringType()), StructField("id", LongType()),
                   StructField("ts", LongType()), StructField("seq", LongType())])
INPUT = StructType(USER.fields + [StructField(TYPE, StringType()), StructField(TIME, LongType()),
                                  StructField(SEQ, LongType()), StructField(KEY, StringType()),
                                  StructField("__cer_wm", TimestampType()),
                                  StructField(US, LongType())])
QUERY = "SELECT * FROM S WHERE A; B+; C PARTITION BY [id] WITHIN 5 [ts]"
WIDE = "SELECT * FROM S WHERE A; B+; C PARTITION BY [id] WITHIN 10 [ts]"


def processor(query: str = QUERY, evict: bool = True) -> CerProcessor:
    schema = infer_schema(USER, query, time="ts", exclude=("seq",))
    job = EngineJob(query, schema, (("id", "id"), ("ts", TIME)), tuple(USER.names))
    w = job.compiled().analysed.window
    return CerProcessor(job, INPUT, keyed=True, evict_after=int(w.epsilon) if evict else None)


def make_tester(proc: CerProcessor) -> TwsTester:
    return TwsTester(proc, timeMode="EventTime", eventTimeExtractor=lambda r: r[US] // 1000)


ROW = Row(*INPUT.names)


def row(t: str, key: int, ts: int, seq: int) -> Row:
    """A prepared input row (time unit: seconds)."""
    when = datetime.datetime.fromtimestamp(ts, datetime.UTC)
    return ROW(t, key, ts, seq, t if t in "ABC" else "__cer_other", ts, seq, f'["{key}"]',
               when, ts * 1_000_000)


def seqs(rows) -> list[tuple]:
    return sorted(tuple(e[3] for e in r["events"]) for r in rows)


def test_rows_wait_for_the_watermark_and_are_evaluated_in_time_order():
    t = make_tester(processor())
    assert t.test('["1"]', [row("C", 1, 13, 3), row("A", 1, 10, 0)]) == []
    assert len(t.peekListState("buffer", '["1"]')) == 2
    assert t.setWatermark(11_000) == []  # releases A10 only
    assert len(t.peekListState("buffer", '["1"]')) == 1
    assert t.test('["1"]', [row("B", 1, 12, 2), row("B", 1, 11, 1)]) == []  # B11 is late
    out = t.setWatermark(13_000)
    assert seqs(out) == [(0, 2, 3)]
    assert [(r["start"], r["end"], r["positions"]) for r in out] == [(0, 2, [0, 1, 2])]
    assert out[0]["partition"] == '["1"]' and out[0]["start_time"] == 10


def test_state_is_evicted_when_dead_and_positions_keep_counting():
    t = make_tester(processor())
    t.test('["1"]', [row("A", 1, 10, 0), row("B", 1, 11, 1), row("C", 1, 12, 2)])
    assert seqs(t.setWatermark(12_000)) == [(0, 1, 2)]
    version, offset, blob = t.peekValueState("engine", '["1"]')
    assert (version, offset) == (STATE_VERSION, 0) and blob is not None
    t.setWatermark(16_000)  # 12 + 5 = 17 not yet passed: an event at 17 may still come
    assert t.peekValueState("engine", '["1"]')[2] is not None
    t.setWatermark(17_000)
    assert t.peekValueState("engine", '["1"]') == (STATE_VERSION, 3, None)
    t.test('["1"]', [row("A", 1, 20, 3), row("B", 1, 21, 4), row("C", 1, 22, 5)])
    out = t.setWatermark(22_000)
    assert [(r["start"], r["end"]) for r in out] == [(3, 5)]


def test_no_eviction_without_a_time_window():
    t = make_tester(processor("SELECT * FROM S WHERE A; C PARTITION BY [id]", evict=False))
    t.test('["1"]', [row("A", 1, 10, 0)])
    t.setWatermark(10_000)
    t.setWatermark(1_000_000)
    t.test('["1"]', [row("C", 1, 2000, 1)])
    assert seqs(t.setWatermark(2_000_000)) == [(0, 1)]


def test_state_of_another_format_version_is_refused():
    t = make_tester(processor())
    t.updateValueState("engine", '["1"]', (STATE_VERSION + 1, 0, b"whatever"))
    t.test('["1"]', [row("A", 1, 10, 0)])
    with pytest.raises(cercore.CercoreError, match="format version"):
        t.setWatermark(10_000)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 40), st.integers(0, 2**32), st.integers(0, 4), st.integers(1, 5))
def test_processor_equals_local_engine(n, seed, delay, chunk):
    """Random types, keys and time steps (from ``seed``); arrival shuffled within a few
    seconds; the watermark trails the newest time by ``delay`` s after every chunk of
    ``chunk`` rows; then everything is flushed."""
    rng = random.Random(seed)
    ts, events = 100, []
    for i in range(n):
        ts += rng.choice([0, 1, 1, 2])
        events.append((rng.choice("ABCBAD"), rng.randrange(2), ts, i))
    arrival = sorted(events, key=lambda e: e[2] + rng.uniform(0, 3))
    t = make_tester(processor(WIDE))
    out, accepted, watermark, newest = [], [], 0, 0
    for i in range(0, len(arrival), chunk):
        part = arrival[i:i + chunk]
        for key in (0, 1):
            rows = [row(*e) for e in part if e[1] == key]
            accepted += [e for e in part if e[1] == key and e[2] * 1000 > watermark]
            out += t.test(f'["{key}"]', rows)
        newest = max([newest] + [e[2] for e in part])
        if (newest - delay) * 1000 > watermark:
            watermark = (newest - delay) * 1000
            out += t.setWatermark(watermark)
    out += t.setWatermark(10**9)
    want = []
    for key in (0, 1):
        mine = sorted((e for e in accepted if e[1] == key), key=lambda e: (e[2], e[3]))
        ces = cercore.run(WIDE, infer_schema(USER, WIDE, time="ts", exclude=("seq",)),
                          [(e[0] if e[0] in "ABC" else "__cer_other",
                            {"id": e[1], "ts": e[2]}) for e in mine])
        want += [tuple(mine[p][3] for p in ce.positions) for ce in ces]
    event("some complex events" if want else "no complex events")
    event("some late rows" if len(accepted) < len(events) else "no late rows")
    assert seqs(out) == sorted(want)
