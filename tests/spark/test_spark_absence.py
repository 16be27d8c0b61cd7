"""Absence and counted iteration on Spark.

``A ; ABSENT(B) ; C`` and ``A{n,m}`` live in the automaton, so every plan that runs the local
engine on groups of events handles them as any other formula. A deadline at the end of a
pattern, ``φ ; ABSENT(ψ) WITHIN T``, does not: the local engine reports a pending complex event
on the first later event the query reads in *any* partition, while a keyed group sees only its
key's events, and a T-CER slice only its stretch of time. Batch ``find`` must still equal the
local engine's ``process(whole input)`` (no ``advance``), exactly:

* the workers, without a JVM (many random cases): keyed groups told the input's latest read time
  (``until``; several keys per group, as hash collisions make them), T-CER slices grown by T,
  the single pass;
* ``find`` on a real SparkSession (fewer cases: each costs Spark jobs), keyed, T-CER and single,
  with deadlines, absence between events and counted iteration; ``cer_find`` with
  ``advance =>``; what ``explain`` says;
* streaming: a deadline fires once the watermark passes it, and a restart from the checkpoint
  neither loses nor repeats a pending one.
"""

from __future__ import annotations

import dataclasses
import os
import random
from collections import Counter
from datetime import UTC, datetime

import pyarrow as pa
import pytest
import test_spark_processor as tws  # the streaming processor's harness (TwsTester: no JVM)
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st
from spark_helpers import (
    DDL,
    event_rows,
    local_complex_events,
    spark_complex_events,
    write_file,
)
from strategies import SCHEMAS, bindable, deadline_queries, formulas, queries, streams
from test_spark_tcer_slices import ARROW, ATTRS, out_schema

import cercore
from cercore.ceql import ast, printer
from cercore.spark.base.job import COORD, GROUP, KEY, POS, TIME, TYPE, EngineJob, run_sorted_groups
from cercore.spark.base.plan import KEYED, SINGLE, TCER, choose_plan

SETTINGS = dict(deadline=None)


# ---- random deadline queries: strategies.deadline_queries ---------------------------------


def favoured(q: ast.Query, schema) -> set[str]:
    """The event types the query names (the streams are drawn mostly of them)."""
    return set(bindable(q.formula)) & set(schema.event_types)


def compiled_or_discard(q: ast.Query, schema):
    text = printer.format_query(q)
    try:
        return text, cercore.compile(text, schema)
    except cercore.CEQLSemanticError:  # e.g. a projection naming what ABSENT binds
        assume(False)


def read_time(compiled, events) -> int | None:
    """The latest time of the events ``compiled`` reads (untagged events of a visible type:
    every type here carries ts): what batch ``find`` computes in its first job."""
    schema = compiled.schema
    visible = {schema.type_names[i] for i in compiled.analysed.visible_types}
    return max((a["ts"] for t, a in events if t in visible), default=None)


# ---- the workers, without a JVM -------------------------------------------------------------
def worker_table(rows: list[tuple[int, int]], events, coords=None) -> pa.Table:
    """Rows (group, stream index) as the plans prepare them (POS = the stream index)."""
    cols = {TYPE: [events[i][0] for _, i in rows], TIME: [events[i][1]["ts"] for _, i in rows],
            POS: [i for _, i in rows], KEY: [None] * len(rows), GROUP: [g for g, _ in rows],
            "event_type": [events[i][0] for _, i in rows]}
    if coords is not None:
        cols[COORD] = [coords[i] for _, i in rows]
    for a in ATTRS:
        cols[a] = pa.array([events[i][1].get(a) for _, i in rows], ARROW[a])
    return pa.table(cols)


def job_for(text: str, schema) -> EngineJob:
    declared = schema.attribute_types()
    return EngineJob(text, schema, tuple((a, TIME if a == "ts" else a) for a in ATTRS
                                         if a in declared), ("event_type", *ATTRS))


def run_workers(text, schema, table, cut, slices=None, until=None) -> Counter:
    out = []
    for rb in run_sorted_groups(iter(table.to_batches(max_chunksize=cut)),
                                job_for(text, schema), slices, out_schema(), until=until):
        out += rb.to_pylist()
    for r in out:  # each complex event carries its own rows
        assert [e["event_type"] for e in r["events"]] == [
            r["events"][k]["event_type"] for k in range(len(r["positions"]))]
    return Counter((r["start"], r["end"], tuple(r["positions"])) for r in out)


def partition_key(analysed, event) -> tuple | None:
    """The key the keyed plan groups an event by (None: in no partition): per PARTITION BY
    group, the first of its attributes the event's type declares."""
    t, attrs = event
    et = analysed.schema.event_types[t]
    key = []
    for g in analysed.partition_by:
        attr = next((a for a in g if et.has(a)), None)
        if attr is None or attrs.get(attr) is None:
            return None
        key.append(attrs[attr])
    return tuple(key)


@settings(max_examples=250, **SETTINGS)
@given(data=st.data())
def test_keyed_groups_fire_with_the_inputs_latest_time(data):
    """Keyed plan: one engine per group of keys (``n_groups`` draws hash collisions), told the
    input's latest read time; the union equals the local engine over the whole stream. Without
    ``until`` a group would miss complex events a later event of another key fires."""
    schema = data.draw(st.sampled_from([SCHEMAS["seconds"], SCHEMAS["millis"]]))
    q = data.draw(deadline_queries(schema, partitioned=True))
    text, compiled = compiled_or_discard(q, schema)
    assume(choose_plan(compiled.analysed, "ts").kind == KEYED)
    events = data.draw(streams(schema, max_len=12, favour=favoured(q, schema)))
    n_groups = data.draw(st.sampled_from([1, 2, 7]))
    keys = [partition_key(compiled.analysed, e) for e in events]
    rows = sorted((hash(k) % n_groups, i) for i, k in enumerate(keys) if k is not None)
    want = local_complex_events(text, schema, events)
    got = run_workers(text, schema, worker_table(rows, events), data.draw(st.integers(1, 5)),
                      until=read_time(compiled, events))
    event("some complex events" if want else "none")
    assert got == want, text


@settings(max_examples=250, **SETTINGS)
@given(data=st.data())
def test_tcer_slices_grown_by_the_deadline(data):
    """T-CER by time: slices [k·WA, k·WA + WS) built by enumeration with WS = WA + D_C − 1 + T
    (+ a leading absence's span), each fires at its end what the input's latest read time
    passes, and keeps the complex events ending in its part (⌊(end − ε [− T_before]) / WA⌋ =
    k); the union equals the local engine."""
    schema = data.draw(st.sampled_from([SCHEMAS["seconds"], SCHEMAS["millis"]]))
    q = data.draw(deadline_queries(schema, partitioned=False, windowed=True))
    text, compiled = compiled_or_discard(q, schema)
    plan = choose_plan(compiled.analysed, "ts")
    if isinstance(q.within, ast.EventsWindow):  # positions do not bound a deadline's time
        assert plan.kind == SINGLE and "deadline" in plan.reason
        return
    assume(plan.kind == TCER)
    for span, absence in ((plan.reach, compiled.analysed.deadline),
                          (plan.lookback, compiled.analysed.lookback)):
        assert span == (0 if absence is None else absence.span)
    events = data.draw(streams(schema, max_len=12, favour=favoured(q, schema)))
    advance = data.draw(st.integers(1, plan.span_limit + plan.reach + plan.lookback + 3))
    size = plan.slice_size(advance)
    coords = [a["ts"] for _, a in events]
    rows = []
    if coords:
        for k in range((min(coords) - size) // advance, max(coords) // advance + 1):
            rows += [(k, i) for i, c in enumerate(coords) if k * advance <= c < k * advance + size]
    want = local_complex_events(text, schema, events)
    got = run_workers(text, schema, worker_table(rows, events, coords),
                      data.draw(st.integers(1, 5)), slices=(advance, plan.keep_offset),
                      until=read_time(compiled, events))
    event("some complex events" if want else "none")
    assert got == want, (text, advance)


@settings(max_examples=100, **SETTINGS)
@given(data=st.data())
def test_the_single_pass_equals_the_local_engine(data):
    schema = SCHEMAS["seconds"]
    q = data.draw(deadline_queries(schema))
    text, compiled = compiled_or_discard(q, schema)
    events = data.draw(streams(schema, max_len=12, favour=favoured(q, schema)))
    got = run_workers(text, schema, worker_table([(0, i) for i in range(len(events))], events),
                      data.draw(st.integers(1, 5)), until=read_time(compiled, events))
    assert got == local_complex_events(text, schema, events), text


def test_a_group_holds_the_rows_of_pending_complex_events():
    """A deadline far beyond the window: the complex events wait while the store moves on;
    the rows they report stay held until they are reported."""
    schema = cercore.Schema.parse("CREATE STREAM S { EVENT A { k:int, ts:int }, "
                                  "EVENT B { k:int, ts:int } }", time_attribute="ts")
    text = ("SELECT * FROM S WHERE A AS a ; ABSENT(B) WITHIN 5000 [ts] PARTITION BY [k] "
            "WITHIN 2 [ts]")
    events = [("A", {"k": i % 3, "ts": i}) for i in range(6000)]
    table = pa.table({TYPE: [t for t, _ in events], TIME: [a["ts"] for _, a in events],
                      POS: list(range(len(events))), KEY: ["0"] * len(events),
                      GROUP: [0] * len(events), "event_type": [t for t, _ in events],
                      "k": [a["k"] for _, a in events], "ts": [a["ts"] for _, a in events]})
    job = EngineJob(text, schema, (("k", "k"), ("ts", TIME)), ("event_type", "k", "ts"))
    event_type = pa.struct([("event_type", pa.string()), ("k", pa.int64()), ("ts", pa.int64())])
    schema_out = pa.schema([f if f.name != "events" else pa.field("events", pa.list_(event_type))
                            for f in out_schema()])
    rows = [r for rb in run_sorted_groups(iter(table.to_batches(max_chunksize=500)), job, None,
                                          schema_out, until=11_000)
            for r in rb.to_pylist()]
    # none is ruled out: the first 1,000 fire on later events, the rest at the group's end
    assert len(rows) == 6000
    assert all(r["events"][0]["ts"] == r["start"] for r in rows)


# ---- find on Spark ----------------------------------------------------------------------------
def spark_find(spark, schema, text, events, **kw) -> Counter:
    from cercore.spark import find

    df = spark.createDataFrame(event_rows(events, seed=len(events)), DDL)
    return spark_complex_events(find(df, text, schema=schema, sequence="seq", **kw).collect())


def check_find(spark, schema, text, events, expected_plan: str, **kw) -> None:
    from cercore.spark import explain

    plan_line = explain(schema, text).splitlines()[0]
    assert expected_plan in plan_line, (text, plan_line)
    want = local_complex_events(text, schema, events)
    event(plan_line + (" (some complex events)" if want else ""))
    assert spark_find(spark, schema, text, events, **kw) == want, text


@pytest.mark.spark
@settings(max_examples=6, derandomize=True, **SETTINGS)
@given(data=st.data())
def test_find_keyed_deadlines_equal_the_local_engine(spark, data):
    schema = SCHEMAS["seconds"]
    q = data.draw(deadline_queries(schema, partitioned=True))
    text, compiled = compiled_or_discard(q, schema)
    assume(choose_plan(compiled.analysed, "ts").kind == KEYED)
    check_find(spark, schema, text, data.draw(streams(schema, max_len=16,
                                                      favour=favoured(q, schema))),
               "keyed")


@pytest.mark.spark
@settings(max_examples=6, derandomize=True, **SETTINGS)
@given(data=st.data())
def test_find_unkeyed_deadlines_equal_the_local_engine(spark, data):
    """T-CER under a time window, slices grown by T (with a tiny forced slice advance now and
    then, so complex events straddle slices)."""
    schema = SCHEMAS["seconds"]
    q = data.draw(deadline_queries(schema, partitioned=False, windowed=True))
    if isinstance(q.within, ast.EventsWindow):
        q = dataclasses.replace(q, within=ast.AttrWindow(q.within.count, "ts"))
    text, _ = compiled_or_discard(q, schema)
    check_find(spark, schema, text, data.draw(streams(schema, max_len=16,
                                                      favour=favoured(q, schema))),
               "T-CER", slice_advance=data.draw(st.sampled_from([None, 1])))


@st.composite
def absence_or_count(draw, schema) -> ast.Formula:
    """A random formula with ``x ; ABSENT(ψ) ; y`` or a counted iteration at its top."""
    def sub():
        return draw(formulas(schema, max_depth=1))

    if draw(st.booleans()):
        psi = ast.EventAtom(draw(st.sampled_from(sorted(schema.event_types))))
        return ast.Seq(ast.Seq(sub(), ast.Absent(psi)), sub())
    lo = draw(st.integers(1, 3))
    return ast.Repeat(sub(), lo, draw(st.sampled_from([lo, lo + 1, None])), draw(st.booleans()))


@pytest.mark.spark
@settings(max_examples=6, derandomize=True, **SETTINGS)
@given(data=st.data())
def test_find_absence_between_and_counted_iteration(spark, data):
    """Nothing to do for them on Spark: they are automaton states. Keyed and T-CER (their
    complex events span at most the window) equal the local engine."""
    schema = SCHEMAS["seconds"]
    partitioned = data.draw(st.booleans())
    q = data.draw(queries(schema, partitioned=partitioned, windowed=True))
    q = dataclasses.replace(q, formula=data.draw(absence_or_count(schema)))
    if isinstance(q.within, ast.EventsWindow):
        q = dataclasses.replace(q, within=ast.AttrWindow(q.within.count, "ts"))
    text, _ = compiled_or_discard(q, schema)
    events = data.draw(streams(schema, max_len=16, favour=favoured(q, schema)))
    check_find(spark, schema, text, events, "keyed" if partitioned else "T-CER")


DECL = """CREATE STREAM S {
  EVENT A { id:int, v:int, ts:primary_time },
  EVENT B { id:int, v:int, ts:primary_time },
  EVENT C { id:int, v:int, ts:primary_time } }"""
HEARTBEAT = ("SELECT * FROM S WHERE A AS a ; ABSENT(B AS b) WITHIN 3 SECONDS FILTER b[v > 0] "
             "PARTITION BY [id]")
# key 1's A at 10 is due after 13: only an event of key 2 (at 14) passes it
TWO_KEYS = [("A", 1, 1, 10, 0), ("B", 1, 0, 11, 1), ("A", 2, 0, 12, 2), ("B", 2, 1, 13, 3),
            ("C", 2, 0, 14, 4)]
ROWS_DDL = "event_type string, id long, v long, ts long, seq long"


def rows_as_events(rows) -> list[tuple[str, dict]]:
    return [(t, {"id": i, "v": v, "ts": ts}) for t, i, v, ts, _ in rows]


@pytest.mark.spark
def test_another_keys_event_fires_a_deadline(spark):
    """The local engine reports key 1's A (ts 10, due after 13) on key 2's C at 14; a keyed
    group of key 1 alone only learns it from the input's latest read time."""
    from cercore.spark import explain, find

    want = local_complex_events(HEARTBEAT, DECL, rows_as_events(TWO_KEYS))
    assert list(want) == [(0, 0, (0,))]
    df = spark.createDataFrame(TWO_KEYS, ROWS_DDL)
    got = find(df, HEARTBEAT, schema=DECL, sequence="seq").collect()
    assert spark_complex_events(got) == want
    text = explain(DECL, HEARTBEAT)
    assert text.startswith("spark plan: keyed") and "latest read time" in text
    # without the C at 14 nothing has passed 13: nothing reported, as locally
    assert find(df.filter("ts < 14"), HEARTBEAT, schema=DECL, sequence="seq").count() == 0


@pytest.mark.spark
def test_a_skipped_event_does_not_pass_a_deadline(spark):
    """With on_error="skip" the local engine skips key 2's C at 14 (v = 0.5 is no int), so
    event time never passes key 1's deadline (13) and nothing is reported: the input's latest
    read time on Spark counts only the events the engine reads, not the skipped ones."""
    from cercore.spark import find

    rows = [(t, i, float(v), ts, seq) for t, i, v, ts, seq in TWO_KEYS]
    rows[-1] = ("C", 2, 0.5, 14, 4)
    events = [(t, {"id": i, "v": v, "ts": ts}) for t, i, v, ts, _ in rows]
    engine = cercore.compile(HEARTBEAT, DECL).engine(on_error="skip")
    assert list(engine.process(events)) == [] and engine.stats["skipped"] == 1
    df = spark.createDataFrame(rows, ROWS_DDL.replace("v long", "v double"))
    for plan in ("keyed", "single"):
        found = find(df, HEARTBEAT, schema=DECL, sequence="seq", on_error="skip", plan=plan)
        assert found.collect() == [], plan
    # the C at 14 with a good value passes it, as locally
    rows[-1] = ("C", 2, 0.0, 14, 4)
    df = spark.createDataFrame(rows, ROWS_DDL.replace("v long", "v double"))
    assert find(df, HEARTBEAT, schema=DECL, sequence="seq", on_error="skip").count() == 1


@pytest.mark.spark
def test_a_deadline_on_spark_connect(connect):
    """The latest read time comes from the same aggregate on a Spark Connect session."""
    from cercore.spark import find

    got = find(connect.createDataFrame(TWO_KEYS, ROWS_DDL), HEARTBEAT, schema=DECL,
               sequence="seq")
    assert spark_complex_events(got.collect()) == local_complex_events(
        HEARTBEAT, DECL, rows_as_events(TWO_KEYS))


@pytest.mark.spark
def test_cer_find_advances_to_a_column(spark):
    """cer_find per key: ``advance =>`` names a column holding the input's latest read time;
    then its rows equal find's. Without it a table partition fires only on its own events;
    WITH SINGLE PARTITION needs nothing."""
    import cercore.spark

    cercore.spark.register(spark)
    rng = random.Random(5)
    rows, ts = [], 0
    for i in range(60):
        ts += rng.choice([0, 1, 2])
        rows.append((rng.choice("AABC"), rng.randrange(3), rng.randrange(2), ts, i))
    # key 0's last A is due after ts + 4: only key 1's C at ts + 10 passes it
    rows += [("A", 0, 0, ts + 1, 60), ("C", 1, 0, ts + 10, 61)]
    spark.createDataFrame(rows, ROWS_DDL).createOrReplaceTempView("absence_events")
    want = local_complex_events(HEARTBEAT, DECL, rows_as_events(rows))
    find_rows = cercore.spark.find(spark.table("absence_events"), HEARTBEAT, schema=DECL,
                                   sequence="seq").collect()
    assert spark_complex_events(find_rows) == want and sum(want.values()) >= 5

    def cer_find(table: str, partition: str, extra: str = "") -> list:
        return spark.sql(f"""SELECT * FROM cer_find(TABLE({table}) {partition}
            ORDER BY (ts, seq), '{HEARTBEAT}', '{DECL}', position => 'pos'{extra})""").collect()

    numbered = ("SELECT *, row_number() OVER (ORDER BY ts, seq) - 1 AS pos, "
                "max(ts) OVER () AS latest FROM absence_events")
    got = cer_find(f"{numbered}", "PARTITION BY id", ", advance => 'latest'")
    assert sorted(map(tuple, got)) == sorted(map(tuple, find_rows))
    alone = spark_complex_events(cer_find(numbered, "PARTITION BY id"))
    assert alone != want and not alone - want  # some wait for a later event of another key
    single = cer_find("SELECT *, row_number() OVER (ORDER BY ts, seq) - 1 AS pos FROM "
                      "absence_events", "WITH SINGLE PARTITION")
    assert spark_complex_events(single) == want


def test_explain_and_plans_with_a_deadline():
    from cercore.spark import explain

    keyed = explain(DECL, HEARTBEAT)
    assert "deadline: T = 3 [ts]" in keyed and "latest read time" in keyed
    tcer = explain(DECL, "SELECT * FROM S WHERE A ; C ; ABSENT(B) WITHIN 7 [ts] WITHIN 2 [ts]",
                   slice_advance=4)
    assert "T-CER" in tcer and "plus the deadline T = 7" in tcer
    assert "slice advance WA = 4, slice size WS = 13" in tcer
    events = explain(DECL, "SELECT * FROM S WHERE A ; C ; ABSENT(B) WITHIN 7 [ts] "
                     "WITHIN 2 EVENTS")
    assert events.startswith("spark plan: single") and "does not bound" in events
    streaming = explain(DECL, HEARTBEAT, streaming=True)
    assert "when the watermark passes it" in streaming


# ---- the streaming processor, without a JVM (pyspark's TwsTester) ---------------------------
PROCESSOR_QUERIES = [  # (keyed ones; without PARTITION BY, T-CER slices where windowed)
    # T > ε: the engine outlives its window until the deadlines it holds have passed
    "SELECT * FROM S WHERE A ; C ; ABSENT(B) WITHIN 4 [ts] PARTITION BY [id] WITHIN 2 [ts]",
    "SELECT * FROM S WHERE A AS a ; ABSENT(B) WITHIN 2 [ts] PARTITION BY [id]",  # no eviction
    "SELECT * FROM S WHERE A ; B ; ABSENT(C OR B) WITHIN 0 [ts] PARTITION BY [id] "
    "WITHIN 3 [ts]",
    "SELECT * FROM S WHERE ABSENT(B) WITHIN 3 [ts] ; A ; C PARTITION BY [id] WITHIN 2 [ts]",
    "SELECT * FROM S WHERE ABSENT(C) WITHIN 2 [ts] ; A ; C ; ABSENT(B) WITHIN 3 [ts] "
    "PARTITION BY [id] WITHIN 2 [ts]",
]
SLICED_QUERIES = [q.replace(" PARTITION BY [id]", "") for q in PROCESSOR_QUERIES
                  if q.endswith("[ts]")]


def prepared_row(schema, e: tuple, key: str | None = None) -> tuple:
    """The processor's input row of event (type, id, ts, seq): a type the query does not
    name is the inferred schema's catch-all; the key column is PARTITION BY's or the slice."""
    t, i, ts, seq = e
    engine_type = t if t in schema.event_types else "__cer_other"
    return (t, i, ts, seq, engine_type, ts, seq, key if key is not None else f'["{i}"]',
            ts * 1_000_000)


def stream_case(seed: int, n: int, keys: int) -> tuple[list[tuple], list[tuple]]:
    """Events (type, key, ts, seq) and their arrival order (shuffled within a few seconds)."""
    rng = random.Random(seed)
    ts, events = 100, []
    for i in range(n):
        ts += rng.choice([0, 1, 1, 2, 3])
        events.append((rng.choice("ABCBAD"), rng.randrange(keys), ts, i))
    return events, sorted(events, key=lambda e: e[2] + rng.uniform(0, 3))


def local_seqs(query: str, schema, events: list[tuple], until: int | None) -> list[tuple]:
    """The local engine over ``events`` in (ts, seq) order, then ``advance(until)``."""
    mine = sorted(events, key=lambda e: (e[2], e[3]))
    engine = cercore.compile(query, schema).engine()
    found = list(engine.process([(e[0] if e[0] in schema.event_types else "__cer_other",
                                  {"id": e[1], "ts": e[2]}) for e in mine]))
    if until is not None:
        found += engine.advance(until)
    return sorted(tuple(mine[p][3] for p in ce.positions) for ce in found)


def stream_through(tester, arrival, chunk: int, delay: int, keys_of, row_of, check):
    """Feed ``arrival`` chunk by chunk (each key its rows), the watermark trailing the newest
    time by ``delay`` s after each chunk; ``check(out so far, accepted, watermark s)`` after
    each watermark; then a watermark past everything. Returns (out, accepted)."""
    feed, records = tws.feed, tws.records
    out, accepted, watermark, newest = [], [], 0, 0
    for i in range(0, len(arrival), chunk):
        part = arrival[i:i + chunk]
        accepted += [e for e in part if e[2] * 1000 > watermark]
        for key in sorted({k for e in part for k in keys_of(e)}):
            rows = [row_of(e, key) for e in part if key in keys_of(e)]
            out += feed(tester, key, rows)
        newest = max([newest] + [e[2] for e in part])
        if (newest - delay) * 1000 > watermark:
            watermark = (newest - delay) * 1000
            out += records(tester.setWatermark(watermark))
            check(out, accepted, watermark // 1000)
    out += records(tester.setWatermark(10**9))
    return out, accepted


@pytest.mark.parametrize("query", PROCESSOR_QUERIES)
@settings(max_examples=30, **SETTINGS)
@given(n=st.integers(5, 40), seed=st.integers(0, 2**32), delay=st.integers(0, 4),
       chunk=st.integers(1, 5))
def test_processor_fires_deadlines_with_the_watermark(query, n, seed, delay, chunk):
    """Keyed streaming: after every watermark W, what each key has reported is exactly the
    local engine over its accepted rows up to W, then ``advance(W + 1)``: every row at or
    before W has arrived (a later one is late), so a deadline up to W has passed and one after
    it has not. The key's state (engine, pending complex events, rows they report) is pickled
    between calls, as across micro-batches and restarts. At the end, a watermark past
    everything: the local engine with ``advance`` past everything."""
    USER, seqs = tws.USER, tws.seqs
    from cercore.spark.base.frames import infer_schema
    from cercore.spark.streaming.run import eviction_span

    proc = tws.processor(query)
    proc.deadlines = proc.job.compiled().analysed.deadline is not None
    proc.evict_after = eviction_span(proc.job.compiled().analysed, "ts")
    schema = infer_schema(USER, query, time="ts", exclude=("seq",))
    tester = tws.make_tester(proc)
    events, arrival = stream_case(seed, n, 2)

    def check(out, accepted, w):
        want = []
        for key in (0, 1):
            mine = [e for e in accepted if e[1] == key and e[2] <= w]
            want += local_seqs(query, schema, mine, w + 1)
        assert seqs(out) == sorted(want), (query, w)

    out, accepted = stream_through(tester, arrival, chunk, delay, lambda e: [f'["{e[1]}"]'],
                                   lambda e, key: prepared_row(schema, e), check)
    want = [ce for key in (0, 1)
            for ce in local_seqs(query, schema, [e for e in accepted if e[1] == key], 10**6)]
    event("some complex events" if want else "no complex events")
    assert seqs(out) == sorted(want), query


@pytest.mark.parametrize("query", SLICED_QUERIES)
@settings(max_examples=25, **SETTINGS)
@given(n=st.integers(5, 40), seed=st.integers(0, 2**32), delay=st.integers(0, 4),
       chunk=st.integers(1, 5), advance=st.integers(1, 9))
def test_processor_tcer_slices_with_absences(query, n, seed, delay, chunk, advance):
    """Streaming T-CER with a deadline or a leading absence: slices grown by their spans
    (``SparkPlan.slice_size``), each keeping the complex events ⌊(end − keep offset) / WA⌋
    assigns it and firing what the watermark passes; together the local engine's, each
    once, and every slice's state is cleared once the watermark passes it."""
    from pyspark.sql.types import StructType

    USER, seqs, slices_holding = tws.USER, tws.seqs, tws.slices_holding
    from cercore.spark.base.frames import infer_schema
    from cercore.spark.ceql.front import _body_fields
    from cercore.spark.streaming.processor import CerProcessor
    from cercore.spark.streaming.run import eviction_span

    schema = infer_schema(USER, query, time="ts", exclude=("seq",))
    job = EngineJob(query, schema, (("id", "id"), ("ts", TIME)), tuple(USER.names))
    analysed = job.compiled().analysed
    plan = choose_plan(analysed, "ts")
    assert plan.kind == TCER
    size = plan.slice_size(advance)
    tester = tws.make_tester(CerProcessor(
        job, tws.LAYOUT, StructType(_body_fields(USER)), evict_after=eviction_span(analysed, "ts"),
        slices=(advance, size, plan.keep_offset), deadlines=analysed.deadline is not None))
    events, arrival = stream_case(seed, n, 1)
    keys = set()

    def keys_of(e):
        found = slices_holding(e[2], advance, size)
        keys.update(found)
        return found

    out, accepted = stream_through(
        tester, arrival, chunk, delay, keys_of,
        lambda e, k: prepared_row(schema, e, f"slice {k}"), lambda *_: None)
    want = local_seqs(query, schema, accepted, 10**6)
    event("some complex events" if want else "no complex events")
    assert seqs(out) == sorted(want), (query, advance)
    assert all(tester.peekValueState("engine", k) is None for k in keys)


def test_processor_keeps_an_engine_while_a_deadline_is_pending():
    """WITHIN 2 but a deadline 4 after the end: the key's engine outlives its window (its
    pending complex event could still be ruled out by a B, and must still fire)."""
    from cercore.spark.base.frames import infer_schema
    from cercore.spark.streaming.run import eviction_span

    query = PROCESSOR_QUERIES[0]  # A ; C ; ABSENT(B) WITHIN 4 [ts] ... WITHIN 2 [ts]
    schema = infer_schema(tws.USER, query, time="ts", exclude=("seq",))
    for ruled_out in (False, True):
        proc = tws.processor(query)
        proc.deadlines = True
        proc.evict_after = eviction_span(proc.job.compiled().analysed, "ts")
        assert proc.evict_after == 4
        t = tws.make_tester(proc)
        tws.feed(t, '["1"]', [prepared_row(schema, e) for e in [("A", 1, 10, 0),
                                                                  ("C", 1, 11, 1)]])
        assert tws.records(t.setWatermark(14_000)) == []  # due after 15: not passed yet
        assert tws.key_state(t, '["1"]')[2] is not None  # the engine is kept
        if ruled_out:
            tws.feed(t, '["1"]', [prepared_row(schema, ("B", 1, 15, 2))])
        got = tws.records(t.setWatermark(15_000))
        assert tws.seqs(got) == ([] if ruled_out else [(0, 1)])
        t.setWatermark(19_000)  # the last time (11, or the B at 15) + 4 has passed
        assert t.peekValueState("engine", '["1"]')[2] is None  # evicted: nothing pending


def test_processor_keeps_an_engine_while_a_lead_can_look_back():
    """ABSENT(B) WITHIN 3 ; A ; C WITHIN 2: a quiet key's engine is not dropped 2 after its
    last B, while a later A could still look back to it."""
    from cercore.spark.base.frames import infer_schema
    from cercore.spark.streaming.run import eviction_span

    query = PROCESSOR_QUERIES[3]
    schema = infer_schema(tws.USER, query, time="ts", exclude=("seq",))
    proc = tws.processor(query)
    proc.evict_after = eviction_span(proc.job.compiled().analysed, "ts")
    assert proc.evict_after == 3
    t = tws.make_tester(proc)
    tws.feed(t, '["1"]', [prepared_row(schema, ("B", 1, 10, 0))])
    t.setWatermark(12_000)
    tws.feed(t, '["1"]', [prepared_row(schema, e) for e in [("A", 1, 13, 1), ("C", 1, 14, 2),
                                                              ("A", 1, 14, 3), ("C", 1, 15, 4)]])
    assert tws.seqs(tws.records(t.setWatermark(20_000))) == [(3, 4)]  # A at 13 is ruled out


# ---- streaming ----------------------------------------------------------------------------
STREAM_QUERIES = {
    "keyed": ("SELECT * FROM S WHERE A AS a ; C AS c ; ABSENT(B AS b) WITHIN 8 SECONDS "
              "FILTER b[v > 0] PARTITION BY [id] WITHIN 4 SECONDS"),
    "tcer": ("SELECT * FROM S WHERE A AS a ; C AS c ; ABSENT(B AS b) WITHIN 8 SECONDS "
             "FILTER b[v > 0] WITHIN 4 SECONDS"),
}
STREAM_OPTIONS = {"tcer": {"plan": "tcer", "slice_advance": 5}}
LATENESS = 3  # seconds


def stream_events(n: int, seed: int) -> list[tuple]:
    rng = random.Random(seed)
    ts, out = 100, []
    for i in range(n):
        ts += rng.choice([0, 1, 1, 2, 3])
        out.append((rng.choice("AACB"), rng.randrange(2), rng.choice([0, 0, 1]), ts, i))
    return out


def by_seq(rows) -> Counter:
    return Counter(tuple(e["seq"] for e in r["events"]) for r in rows)


def local_by_seq(query: str, rows, watermark: int | None = None) -> Counter:
    """The local engine over ``rows`` (in (ts, seq) order; only those at or before
    ``watermark`` when it is given, as the stream releases them), then ``advance`` past the
    watermark: the complex events by their events' seq."""
    rows = sorted(rows, key=lambda r: (r[3], r[4]))
    if watermark is not None:
        rows = [r for r in rows if r[3] <= watermark]
    engine = cercore.compile(query, DECL).engine()
    found = list(engine.process(rows_as_events(rows)))
    if watermark is not None:
        found += engine.advance(watermark + 1)
    return Counter(tuple(rows[p][4] for p in ce.positions) for ce in found)


def start_stream(spark, base: str, query: str, **options):
    from cercore.spark import find

    source = (spark.readStream.schema(ROWS_DDL).option("maxFilesPerTrigger", 1)
              .parquet(os.path.join(base, "in")))
    out = find(source, query, schema=DECL, sequence="seq", watermark=f"{LATENESS} seconds",
               **options)
    return (out.writeStream.format("parquet").option("path", os.path.join(base, "out"))
            .option("checkpointLocation", os.path.join(base, "checkpoint"))
            .trigger(availableNow=True).start())


def watermark_of(query) -> int:
    """The watermark (whole seconds) of the query's last micro-batch."""
    text = query.lastProgress["eventTime"]["watermark"]
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).timestamp())


@pytest.mark.spark
@pytest.mark.parametrize("plan", ["keyed", "tcer"])
def test_stream_deadlines_fire_with_the_watermark_across_a_restart(spark, tmp_path, plan):
    """Two micro-batches, a stop, a restart from the checkpoint, two more. After the first
    run the sink holds exactly what the local engine reports over the rows the watermark has
    passed plus ``advance`` past the watermark: a deadline fires once the watermark passes it,
    not before. Complex events still pending then are carried in state across the restart:
    the union of both runs equals batch ``find`` over all rows (a last row far ahead pushes
    the watermark past every deadline), each exactly once, and some were reported only after
    the restart, from events all seen before it."""
    from cercore.spark import find

    query, options = STREAM_QUERIES[plan], STREAM_OPTIONS.get(plan, {})
    events = stream_events(80, seed=3)
    base = str(tmp_path)
    os.makedirs(os.path.join(base, "in"))
    chunks = [events[0:20], events[20:40], events[40:60], events[60:80]]
    for i in range(3):  # the latest rows of a chunk arrive with the next (within lateness)
        chunks[i + 1] = chunks[i][-2:] + chunks[i + 1]
        chunks[i] = chunks[i][:-2]
    flush = [("C", 9, 0, events[-1][3] + 100, 1000)]
    chunks[3] = chunks[3] + flush
    for k, rows in enumerate(chunks):
        random.Random(k).shuffle(rows)
    for k in (0, 1):
        write_file(spark, os.path.join(base, "in"), f"b{k}", chunks[k], ROWS_DDL)
    q = start_stream(spark, base, query, **options)
    q.awaitTermination()
    watermark = watermark_of(q)
    first = by_seq(spark.read.parquet(os.path.join(base, "out")).collect())
    seen = chunks[0] + chunks[1]
    assert watermark == max(r[3] for r in seen) - LATENESS
    assert first == local_by_seq(query, seen, watermark)
    for k in (2, 3):
        write_file(spark, os.path.join(base, "in"), f"b{k}", chunks[k], ROWS_DDL)
    q = start_stream(spark, base, query, **options)
    q.awaitTermination()
    got = by_seq(spark.read.parquet(os.path.join(base, "out")).collect())
    batch = find(spark.createDataFrame(events + flush, ROWS_DDL), query, schema=DECL,
                 sequence="seq").collect()
    want = by_seq(batch)
    assert want == local_by_seq(query, events + flush)
    assert sum(want.values()) >= 5
    assert got == want and max(got.values()) == 1
    seen_seq = {r[4] for r in seen}
    carried = [ce for ce in got if ce not in first and set(ce) <= seen_seq]
    assert carried, "no complex event was pending across the restart"
