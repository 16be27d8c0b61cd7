"""The transformWithStateInPandas processor (``cercore.spark.streaming.processor.CerProcessor``)
under pyspark's ``TwsTester``: no JVM, so these are fast. Rows arrive out of order in chunks,
the watermark moves, and the complex events emitted must be the local engine's over the accepted
(non-late) events in (time, seq) order; late rows are counted in state; state is evicted once
the window makes it dead, and positions keep counting after eviction; a checkpoint in another
state format is refused; values pandas would bend (longs above 2**53, nulls) arrive exact.
"""

from __future__ import annotations

import pickle
import random

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")

from pyspark.sql.streaming.tws_tester import TwsTester  # noqa: E402
from pyspark.sql.types import LongType, StringType, StructField, StructType  # noqa: E402

import cercore  # noqa: E402
from cercore.spark.base.frames import infer_schema  # noqa: E402
from cercore.spark.base.job import (  # noqa: E402
    KEY,
    SEQ,
    TIME,
    TYPE,
    US,
    EngineJob,
    table_from_bytes,
)
from cercore.spark.ceql.front import _body_fields  # noqa: E402
from cercore.spark.streaming.processor import LATE_STATE, STATE_VERSION, CerProcessor  # noqa: E402
from cercore.spark.streaming.run import input_layout  # noqa: E402

USER = StructType([StructField("event_type", StringType()), StructField("id", LongType()),
                   StructField("ts", LongType()), StructField("seq", LongType())])
INPUT = StructType(USER.fields + [StructField(TYPE, StringType()), StructField(TIME, LongType()),
                                  StructField(SEQ, LongType()), StructField(KEY, StringType()),
                                  StructField(US, LongType())])
LAYOUT = input_layout(INPUT)
QUERY = "SELECT * FROM S WHERE A; B+; C PARTITION BY [id] WITHIN 5 [ts]"
WIDE = "SELECT * FROM S WHERE A; B+; C PARTITION BY [id] WITHIN 10 [ts]"


def processor(query: str = QUERY, evict: bool = True,
              release_delay_ms: int | None = None) -> CerProcessor:
    schema = infer_schema(USER, query, time="ts", exclude=("seq",))
    job = EngineJob(query, schema, (("id", "id"), ("ts", TIME)), tuple(USER.names))
    w = job.compiled().analysed.window
    return CerProcessor(job, LAYOUT, StructType(_body_fields(USER)),
                        evict_after=int(w.epsilon) if evict else None,
                        release_delay_ms=release_delay_ms)


def make_tester(proc: CerProcessor) -> TwsTester:
    # the processor counts and drops late rows itself: the tester must not filter them
    return TwsTester(proc, timeMode="EventTime", eventTimeExtractor=lambda r: 2**62)


def row(t: str, key: int | None, ts: int, seq: int) -> tuple:
    """A prepared input row (time unit: seconds)."""
    return (t, key, ts, seq, t if t in "ABC" else "__cer_other", ts, seq, f'["{key}"]',
            ts * 1_000_000)


def frame(rows: list[tuple]) -> pd.DataFrame:
    """The pandas frame Spark hands over for ``rows``: numeric columns with nulls filled, the
    null masks after every column, columns named by position (as pandas renames them)."""
    values = [[] for _ in LAYOUT.columns]
    masks = {c.mask: [] for c in LAYOUT.columns if c.mask is not None}
    for r in rows:
        for c, v in zip(LAYOUT.columns, r):
            if c.mask is not None:
                masks[c.mask].append(v is None)
                v = 0 if v is None else v
            values[c.index].append(v)
    cols = [pd.Series(v, dtype="int64" if c.mask is not None else object)
            for c, v in zip(LAYOUT.columns, values)]
    cols += [pd.Series(masks[m], dtype=bool) for m in sorted(masks)]
    return pd.DataFrame({f"_{i}": c for i, c in enumerate(cols)})


def feed(t: TwsTester, key: str, rows: list[tuple]) -> list[dict]:
    return records(t.testInPandas(key, frame(rows)))


def records(pdf: pd.DataFrame) -> list[dict]:
    return pdf.to_dict("records")


def key_state(t: TwsTester, key: str) -> tuple:
    """(version, offset, run, buffered rows, timer) of ``key``."""
    version, offset, blob = t.peekValueState("engine", key)
    run, pending, timer = pickle.loads(blob) if blob is not None else (None, None, None)
    buffered = table_from_bytes(pending)
    return version, offset, run, 0 if buffered is None else buffered.num_rows, timer


def late_count(t: TwsTester, key: str) -> int:
    value = t.peekValueState(LATE_STATE, key)
    return 0 if value is None else value[0]


def seqs(rows) -> list[tuple]:
    return sorted(tuple(e["seq"] for e in r["events"]) for r in rows)


def test_rows_wait_for_the_watermark_and_are_evaluated_in_time_order():
    t = make_tester(processor())
    assert feed(t, '["1"]', [row("C", 1, 13, 3), row("A", 1, 10, 0)]) == []
    assert key_state(t, '["1"]')[3:] == (2, 10_000)  # buffered; a timer at the earliest
    assert records(t.setWatermark(11_000)) == []  # releases A10 only
    assert key_state(t, '["1"]')[3:] == (1, 13_000)
    assert feed(t, '["1"]', [row("B", 1, 12, 2), row("B", 1, 11, 1)]) == []  # B11 is late
    assert late_count(t, '["1"]') == 1
    out = records(t.setWatermark(13_000))
    assert seqs(out) == [(0, 2, 3)]
    assert [(r["start"], r["end"], list(r["positions"])) for r in out] == [(0, 2, [0, 1, 2])]
    assert out[0]["partition"] == '["1"]' and out[0]["start_time"] == 10


def test_rows_the_next_watermark_will_pass_are_released_in_their_micro_batch():
    """Knowing the watermark's delay (2 s), a key releases the rows at or below its newest
    time − 2 s at once: the next watermark is at least that, so any row still to come is late
    or newer. Without the delay they wait for the watermark itself."""
    rows = [row("A", 1, 10, 0), row("B", 1, 11, 1), row("C", 1, 12, 2), row("C", 1, 20, 3)]
    early = make_tester(processor(release_delay_ms=2000))
    assert seqs(feed(early, '["1"]', rows)) == [(0, 1, 2)]
    late = make_tester(processor())
    assert feed(late, '["1"]', rows) == []
    assert seqs(records(late.setWatermark(18_000))) == [(0, 1, 2)]


def test_rows_the_watermark_has_passed_are_released_on_arrival():
    """Spark runs a micro-batch's input rows before its timers: a key with new rows releases
    what the watermark has passed then, and moves its timer (no stale one fires)."""
    t = make_tester(processor())
    feed(t, '["1"]', [row("A", 1, 10, 0), row("B", 1, 12, 1)])
    t._currentWatermarkMs = 11_000  # the next batch's watermark, before its timers fire
    assert feed(t, '["1"]', [row("C", 1, 13, 2)]) == []
    assert key_state(t, '["1"]')[3:] == (2, 12_000)  # A10 went to the engine
    assert list(t.handle._timers.listTimers('["1"]')) == [12_000]
    assert seqs(records(t.setWatermark(13_000))) == [(0, 1, 2)]


def test_late_rows_are_counted_per_key_and_not_evaluated():
    t = make_tester(processor())
    feed(t, '["1"]', [row("A", 1, 10, 0)])
    t.setWatermark(20_000)
    assert feed(t, '["1"]', [row("B", 1, 15, 1), row("C", 1, 20, 2), row("C", 1, 21, 3)]) == []
    feed(t, '["2"]', [row("A", 2, 3, 4)])
    assert (late_count(t, '["1"]'), late_count(t, '["2"]')) == (2, 1)
    assert key_state(t, '["1"]')[3] == 1


def test_state_is_evicted_when_dead_and_positions_keep_counting():
    t = make_tester(processor())
    feed(t, '["1"]', [row("A", 1, 10, 0), row("B", 1, 11, 1), row("C", 1, 12, 2)])
    assert seqs(records(t.setWatermark(12_000))) == [(0, 1, 2)]
    version, offset, run, buffered, timer = key_state(t, '["1"]')
    assert (version, offset, buffered, timer) == (STATE_VERSION, 0, 0, 17_000)
    assert run is not None
    t.setWatermark(16_000)  # 12 + 5 = 17 not yet passed: an event at 17 may still come
    assert key_state(t, '["1"]')[2] is not None
    t.setWatermark(17_000)
    assert t.peekValueState("engine", '["1"]') == (STATE_VERSION, 3, None)
    feed(t, '["1"]', [row("A", 1, 20, 3), row("B", 1, 21, 4), row("C", 1, 22, 5)])
    out = records(t.setWatermark(22_000))
    assert [(r["start"], r["end"]) for r in out] == [(3, 5)]


def test_no_eviction_without_a_time_window():
    t = make_tester(processor("SELECT * FROM S WHERE A; C PARTITION BY [id]", evict=False))
    feed(t, '["1"]', [row("A", 1, 10, 0)])
    t.setWatermark(10_000)
    t.setWatermark(1_000_000)
    feed(t, '["1"]', [row("C", 1, 2000, 1)])
    assert seqs(records(t.setWatermark(2_000_000))) == [(0, 1)]


def test_state_of_another_format_version_is_refused():
    t = make_tester(processor())
    t.updateValueState("engine", '["1"]', (STATE_VERSION - 1, 0, b"whatever"))
    with pytest.raises(cercore.CercoreError, match="format version 1"):
        feed(t, '["1"]', [row("A", 1, 10, 0)])


def test_values_pandas_would_bend_arrive_exact():
    big = 2**60 + 1
    rows = [row("A", None, 10, big), row("B", 7, 11, 1)]
    table = LAYOUT.table([frame(rows)])
    assert table.schema.field(SEQ).type == pa.int64()
    assert table.column("seq").to_pylist() == [big, 1]
    assert table.column("id").to_pylist() == [None, 7]
    assert table.column(KEY).to_pylist() == ['["None"]', '["7"]']


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 40), st.integers(0, 2**32), st.integers(0, 4), st.integers(1, 5),
       st.booleans())
def test_processor_equals_local_engine(n, seed, delay, chunk, early):
    """Random types, keys and time steps (from ``seed``); arrival shuffled within a few
    seconds; the watermark trails the newest time by ``delay`` s after every chunk of
    ``chunk`` rows, as Spark moves it; then everything is flushed. ``early``: the processor
    knows the delay and releases in each chunk the rows the next watermark will pass."""
    rng = random.Random(seed)
    ts, events = 100, []
    for i in range(n):
        ts += rng.choice([0, 1, 1, 2])
        events.append((rng.choice("ABCBAD"), rng.randrange(2), ts, i))
    arrival = sorted(events, key=lambda e: e[2] + rng.uniform(0, 3))
    t = make_tester(processor(WIDE, release_delay_ms=delay * 1000 if early else None))
    out, accepted, watermark, newest = [], [], 0, 0
    for i in range(0, len(arrival), chunk):
        part = arrival[i:i + chunk]
        for key in (0, 1):
            rows = [row(*e) for e in part if e[1] == key]
            accepted += [e for e in part if e[1] == key and e[2] * 1000 > watermark]
            if rows:
                out += feed(t, f'["{key}"]', rows)
        newest = max([newest] + [e[2] for e in part])
        if (newest - delay) * 1000 > watermark:
            watermark = (newest - delay) * 1000
            out += records(t.setWatermark(watermark))
    out += records(t.setWatermark(10**9))
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
    late = sum(late_count(t, f'["{key}"]') for key in (0, 1))
    assert late == len(events) - len(accepted)


UNKEYED = "SELECT * FROM S WHERE A; B+; C WITHIN 5 [ts]"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 40), st.integers(0, 2**32), st.integers(0, 4), st.integers(1, 5),
       st.integers(1, 9), st.booleans())
def test_tcer_slices_equal_local_engine(n, seed, delay, chunk, advance, early):
    """Streaming T-CER: every row goes to each slice [k·WA, k·WA + WS) holding its time (the
    key is k), WS = WA + ε; the slices together report the local engine's complex events over
    the accepted rows, each once; a late row is counted once (in its last slice); each slice's
    state is cleared once the watermark passes its last time."""
    size, epsilon = advance + 5, 5
    schema = infer_schema(USER, UNKEYED, time="ts", exclude=("seq",))
    job = EngineJob(UNKEYED, schema, (("id", "id"), ("ts", TIME)), tuple(USER.names))
    t = make_tester(CerProcessor(job, LAYOUT, StructType(_body_fields(USER)), evict_after=5,
                                 slices=(advance, size, epsilon),
                                 release_delay_ms=delay * 1000 if early else None))
    rng = random.Random(seed)
    ts, events = 100, []
    for i in range(n):
        ts += rng.choice([0, 1, 1, 2])
        events.append((rng.choice("ABCBAD"), 0, ts, i))
    arrival = sorted(events, key=lambda e: e[2] + rng.uniform(0, 3))
    out, accepted, watermark, newest, keys = [], [], 0, 0, set()
    for i in range(0, len(arrival), chunk):
        part = arrival[i:i + chunk]
        accepted += [e for e in part if e[2] * 1000 > watermark]
        for k in sorted({k for e in part for k in slices_holding(e[2], advance, size)}):
            rows = [row(*e)[:7] + (f"slice {k}", e[2] * 1_000_000) for e in part
                    if k in slices_holding(e[2], advance, size)]
            out += feed(t, k, rows)  # Spark (and the tester) hands the processor (k,)
            keys.add(k)
        newest = max([newest] + [e[2] for e in part])
        if (newest - delay) * 1000 > watermark:
            watermark = (newest - delay) * 1000
            out += records(t.setWatermark(watermark))
    out += records(t.setWatermark(10**9))
    mine = sorted(accepted, key=lambda e: (e[2], e[3]))
    ces = cercore.run(UNKEYED, schema, [(e[0] if e[0] in "ABC" else "__cer_other",
                                         {"id": e[1], "ts": e[2]}) for e in mine])
    want = [tuple(mine[p][3] for p in ce.positions) for ce in ces]
    event("some complex events" if want else "no complex events")
    assert seqs(out) == sorted(want)
    assert all(r["partition"].startswith("slice ") for r in out)
    assert sum(late_count(t, k) for k in keys) == len(events) - len(accepted)
    assert all(t.peekValueState("engine", k) is None for k in keys)  # every slice done


def slices_holding(time: int, advance: int, size: int) -> list[int]:
    """The slices k with k·WA ≤ time < k·WA + WS."""
    return list(range((time - size) // advance + 1, time // advance + 1))
