"""Nothing held back: over a live source, ``process`` and ``aprocess`` hand
out each complex event before they ask the source for the next event.

The source is a generator (or an async generator) that appends ``("asked", k)`` to a log each
time it is resumed to produce event ``k`` -- and ``("asked", n)`` when it is resumed after its
last event, the request that finds the end; the consumer appends ``("got", output)`` for each
output it receives. For every output, ``asked`` below is the last event asked for before it
was received. What is asserted:

- CEQL queries and ``multi_engine``: every complex event has ``asked == ce.end`` -- received
  after its last event was asked for (trivially) and before the event after it was (the point).
  Positions are input positions here, so ``ce.end`` is the index in the source of the event
  that completes the complex event (its last event; with a trailing NOT(...), the event that
  closes its interval).
- With a reorder slack ``d``: an event is evaluated once an event with time >= its time + d
  has arrived (``cercore.input.order``), and positions count events in that release order. A
  complex event is due when the source event that *releases the event at its end* arrives.
  With ``a`` the source index of the event at position ``ce.end`` and ``M(j)`` the largest
  time among source events 0..j, that is the first ``j >= a`` with ``M(j) >= t(a) + d``; the
  test asserts ``asked == j``, and that the complex events with no such ``j`` are not
  yielded by ``process`` but returned by ``flush()``. (Positions are mapped back to source
  indices by the same rule -- released together, events go in (time, arrival) order --
  cross-checked on the source index each event carries in its attribute ``i``. Streams are
  out of order by at most the slack, so no event is too late.)
- Trend engines: a window [s, e) closes when the engine accepts an event with time >= e; every
  row has ``asked == j`` for the first such event ``j`` (no local predicates, so the query
  accepts every event of the types it reads: its pattern's, or every type under contiguous
  semantics), and the rows of windows that no event closes come from ``flush()`` only.
- Everything received equals what ``process(list)`` (+ ``flush``) gives, so nothing is
  dropped either.

Both CEQL backends, sync and async; hypothesis over random queries and streams
(tests/strategies.py, tests/trends_strategies.py) and explicit examples. These assertions fail
when ``process`` reads even one event ahead (checked by making ``EventInput.live`` and
``AsyncInput.aprocess`` take events two at a time).
"""

from __future__ import annotations

import asyncio
import itertools
import random
from functools import partial

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies import SCHEMAS, STREAMS, TYPES, bindable, queries, schemas, streams
from support import BACKENDS
from trends_strategies import SCHEMA as TREND_SCHEMA
from trends_strategies import cases as trend_cases
from trends_strategies import query_text as trend_text

import cercore
from cercore.ceql import ast, printer
from cercore.schema import EventType, Schema, Stream
from cercore.trends import compile_trend
from cercore.types import AttrType

SETTINGS = dict(deadline=None)
HOW = ["sync", "async"]
MAX_OUTPUT = 500  # random queries can have exponentially many complex events: keep small ones


# ---- the source that records when it is resumed, and the consumer ----------------------------
class Source:
    def __init__(self, events: list) -> None:
        self.events = list(events)
        self.log: list[tuple[str, object]] = []

    def gen(self):
        for k, e in enumerate(self.events):
            self.log.append(("asked", k))
            yield e
        self.log.append(("asked", len(self.events)))

    async def agen(self):
        for k, e in enumerate(self.events):
            self.log.append(("asked", k))
            await asyncio.sleep(0)
            yield e
        self.log.append(("asked", len(self.events)))


def received(engine, events: list, how: str) -> list[tuple[int, object]]:
    """Feed ``events`` to ``engine`` from a live source; ``(asked, output)`` per output, where
    ``asked`` is the last event the source had been asked for when the output was received."""
    source = Source(events)
    if how == "sync":
        for out in engine.process(source.gen()):
            source.log.append(("got", out))
    else:
        async def consume():
            async for out in engine.aprocess(source.agen()):
                source.log.append(("got", out))
        asyncio.run(consume())
    assert source.log[-1] == ("asked", len(events))  # the source was read to its end
    asked, out = -1, []
    for kind, x in source.log:
        if kind == "asked":
            asked = x
        else:
            out.append((asked, x))
    return out


def key(m) -> tuple:
    """A complex event (or a multi-engine match: with its query's name) as a tuple."""
    return getattr(m, "query", None), m.start, m.end, m.positions


def few_outputs(make_engine, events: list) -> None:
    """Discard (hypothesis) a case with more than MAX_OUTPUT complex events."""
    first = make_engine().process(list(events))
    assume(sum(1 for _ in itertools.islice(first, MAX_OUTPUT + 1)) <= MAX_OUTPUT)


def assert_nothing_held_back(make_engine, events: list, how: str) -> int:
    """Every output has ``asked == end``; the outputs are those of ``process(list)``. Returns
    how many there were."""
    want = [key(m) for m in make_engine().process(list(events))]
    got = received(make_engine(), events, how)
    assert [key(m) for _, m in got] == want
    late = [(asked, key(m)) for asked, m in got if asked != m.end]
    assert not late, f"(last event asked for, complex event), not at its end: {late[:5]}"
    return len(got)


def compile_or_discard(q: ast.Query, schema) -> cercore.CompiledQuery:
    try:
        return cercore.compile(printer.format_query(q), schema)
    except cercore.CEQLSemanticError:
        assume(False)


# ---- explicit examples: CEQL --------------------------------------------------------------
DECL = ("CREATE STREAM S { EVENT A { k:int, v:int, i:int, ts:primary_time }, "
        "EVENT B { k:int, v:int, i:int, ts:primary_time }, "
        "EVENT C { k:int, v:int, i:int, ts:primary_time } }")

CEQL = {
    "sequence": "SELECT * FROM S WHERE A ; B ; C",
    "filtered": "SELECT * FROM S WHERE A as a ; B+ ; C as c FILTER a[v > 0] AND c[v <= 1] "
                "WITHIN 8 EVENTS",
    "partition": "SELECT * FROM S WHERE A ; B+ ; C PARTITION BY [k] WITHIN 5 [ts]",
    "time window": "SELECT * FROM S WHERE A ; (B OR C)+ ; C WITHIN 4 SECONDS",
    "events window": "SELECT * FROM S WHERE A ; B ; C PARTITION BY [k] WITHIN 6 EVENTS",
    "next": "SELECT NEXT * FROM S WHERE A ; B+ ; C PARTITION BY [k] WITHIN 5 [ts]",
    "last": "SELECT LAST * FROM S WHERE A ; B+ ; C WITHIN 5 [ts] CONSUME BY ANY",
    "max": "SELECT MAX * FROM S WHERE A ; (A OR B)+ ; C WITHIN 3 [ts]",
    "strict": "SELECT STRICT * FROM S WHERE A ; B",
    "any": "SELECT ANY * FROM S WHERE A ; B ; C PARTITION BY [k] LIMIT 1",
    "negation": "SELECT * FROM S WHERE A ; NOT(B) ; C WITHIN 5 [ts]",
    "contiguity": "SELECT * FROM S WHERE A : B:+ ; C",
    "between events": "SELECT * FROM S WHERE A as a ; B as b FILTER a.v < b.v WITHIN 6 [ts]",
}


def ceql_stream(n: int, seed: int, slack: int = 0) -> list[tuple[str, dict]]:
    """``n`` events of types A, B, C; ``i`` is the event's index in the stream. With a slack,
    times arrive out of order by up to ``slack``, never so late that the slack cannot reorder
    them (each time is >= every earlier time - slack)."""
    rng = random.Random(seed)
    base, out = 0, []
    for i in range(n):
        base += rng.choice([0, 1, 1, 2])
        ts = base - rng.randint(0, slack)
        out.append((rng.choice("AABBC"), {"k": rng.randint(0, 1), "v": rng.randint(-1, 2),
                                          "i": i, "ts": ts}))
    return out


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("name", CEQL)
def test_ceql_queries_yield_each_complex_event_before_asking_for_more(backend, name, how):
    q = cercore.compile(CEQL[name], DECL)
    total = sum(assert_nothing_held_back(lambda: q.engine(backend), ceql_stream(60, seed), how)
                for seed in range(3))
    assert total > 0  # the example shows something


@pytest.mark.parametrize("how", HOW)
def test_one_event_completing_more_than_an_output_buffer(backend, how):
    """One event completes 2^14 - 1 complex events, 131,071 positions: more than the Cython
    evaluator's output buffer holds, so they come out of a generator; all of them arrive
    before the next event is asked for."""
    events = [("A", {"k": 0, "v": 0, "i": i, "ts": i}) for i in range(14)]
    events += [("C", {"k": 0, "v": 0, "i": 14, "ts": 14}), ("A", {"k": 0, "v": 0, "i": 15,
                                                                   "ts": 15})]
    q = cercore.compile("SELECT * FROM S WHERE A+ ; C", DECL)
    assert assert_nothing_held_back(lambda: q.engine(backend), events, how) == 2 ** 14 - 1


# ---- reorder slack ------------------------------------------------------------------------
def release_schedule(times: list[int], slack: int) -> tuple[list[int | None], list[int]]:
    """The reorder slack's rule (``cercore.input.order``), for streams where no event is too
    late: event ``a`` is released by the first source event ``j >= a`` whose largest time so
    far is >= its time + slack (None: by none, only by flush()); the events released together
    go in (time, arrival) order, and positions count events in release order. Returns each
    event's releaser and the source index of the event at each position."""
    highest = list(itertools.accumulate(times, max))
    release = [next((j for j in range(a, len(times)) if highest[j] >= t + slack), None)
               for a, t in enumerate(times)]
    last = len(times)
    order = sorted(range(len(times)),
                   key=lambda a: (last if release[a] is None else release[a], times[a], a))
    return release, order


def assert_released_on_time(make_engine, events: list, slack: int, how: str) -> int:
    """Every complex event is received when the source event releasing the event at its end
    has been asked for, and before the next one is; the ones no event releases come from
    flush() only. Process + flush equals process(list) + flush."""
    bulk = make_engine()
    want = [key(ce) for ce in list(bulk.process(list(events))) + bulk.flush()]
    engine = make_engine()
    got = received(engine, events, how)
    flushed = engine.flush()
    assert engine.stats["skipped"] == 0  # no event too late: the schedule below holds
    assert [key(ce) for _, ce in got] + [key(ce) for ce in flushed] == want
    release, order = release_schedule([a["ts"] for _, a in events], slack)
    for ce in [ce for _, ce in got] + flushed:  # the schedule's positions are the engine's
        last = ce.events[-1].attributes.get("i") if ce.events else None  # (not projected)
        assert last is None or last == order[ce.positions[-1]], (key(ce), last)
    for asked, ce in got:
        assert asked == release[order[ce.end]], (key(ce), asked, release[order[ce.end]])
    for ce in flushed:
        assert release[order[ce.end]] is None, key(ce)
    return len(got)


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("slack", [0, 1, 3])
@pytest.mark.parametrize("name", ["sequence", "partition", "time window", "next", "max",
                                  "negation", "between events"])
def test_reorder_slack_releases_each_complex_event_on_time(backend, name, slack, how):
    q = cercore.compile(CEQL[name], DECL)
    total = sum(assert_released_on_time(lambda: q.engine(backend, reorder_slack=slack),
                                        ceql_stream(60, seed, slack), slack, how)
                for seed in range(2))
    assert total > 0


# ---- explicit examples: several queries at once ---------------------------------------------
MULTI = [("sequence", "partition", "next"), ("time window", "last"),
         ("events window", "any", "between events")]


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("names", MULTI, ids="+".join)
def test_multi_engine_yields_each_match_before_asking_for_more(backend, names, how):
    qs = {n: cercore.compile(CEQL[n], DECL) for n in names}
    seen: set[str] = set()
    for seed in range(3):
        def make():
            return cercore.multi_engine(qs, backend=backend)
        assert_nothing_held_back(make, ceql_stream(60, seed), how)
        seen |= {m.query for m in make().process(ceql_stream(60, seed))}
    assert seen == set(names)  # every query contributed


@pytest.mark.parametrize("how", HOW)
def test_multi_engine_with_a_reorder_slack(backend, how):
    qs = {n: cercore.compile(CEQL[n], DECL) for n in ("sequence", "partition", "max")}
    total = sum(assert_released_on_time(
        lambda: cercore.multi_engine(qs, backend=backend, reorder_slack=2),
        ceql_stream(60, seed, 2), 2, how) for seed in range(2))
    assert total > 0


# ---- hypothesis: random queries and streams --------------------------------------------------
@st.composite
def ceql_cases(draw):
    schema = draw(schemas())
    q = draw(queries(schema, full=True))
    favour = set(bindable(q.formula)) & set(schema.event_types)
    return schema, q, draw(streams(schema, 12, favour=favour))


@settings(max_examples=200, **SETTINGS)
@given(ceql_cases(), st.sampled_from(HOW))
def test_random_queries_hold_nothing_back(case, how):
    schema, q, events = case
    cq = compile_or_discard(q, schema)
    few_outputs(lambda: cq.engine(BACKENDS[-1], on_error="skip"), events)
    for backend in BACKENDS:
        assert_nothing_held_back(partial(cq.engine, backend, on_error="skip"), events, how)


@settings(max_examples=80, **SETTINGS)
@given(st.data(), st.sampled_from(HOW))
def test_random_multi_engines_hold_nothing_back(data, how):
    schema = data.draw(schemas())
    drawn = data.draw(st.lists(queries(schema, full=True), min_size=2, max_size=3))
    qs = {f"q{n}": compile_or_discard(q, schema) for n, q in enumerate(drawn)}
    favour = set().union(*(bindable(q.formula) for q in drawn)) & set(schema.event_types)
    events = data.draw(streams(schema, 12, favour=favour))
    few_outputs(lambda: cercore.multi_engine(qs, backend=BACKENDS[-1], on_error="skip"), events)
    for backend in BACKENDS:
        assert_nothing_held_back(
            partial(cercore.multi_engine, qs, backend=backend, on_error="skip"), events, how)


def indexed_schema() -> Schema:
    """The random queries' schema (in seconds), each type also carrying its index in the
    stream (``i``)."""
    schema = Schema(time_attribute="ts", time_unit="s")
    for name, attrs in TYPES.items():
        schema.event_types[name] = EventType(name, (*attrs, ("i", AttrType.INT)),
                                             id=len(schema.event_types))
    for name, types in STREAMS.items():
        schema.streams[name] = Stream(name, types)
    schema.validate()
    return schema


INDEXED = indexed_schema()


@st.composite
def slack_cases(draw):
    q = draw(queries(INDEXED, full=True))
    favour = set(bindable(q.formula)) & set(INDEXED.event_types)
    events = draw(streams(SCHEMAS["seconds"], 12, favour=favour))
    slack = draw(st.integers(0, 3))
    base, jittered = -1, []
    for i, (t, a) in enumerate(events):  # out of order by up to the slack, never too late
        base = max(base, a["ts"])
        jittered.append((t, {**a, "ts": base - draw(st.integers(0, slack)), "i": i}))
    return q, jittered, slack


@settings(max_examples=120, **SETTINGS)
@given(slack_cases(), st.sampled_from(HOW))
def test_random_queries_with_a_reorder_slack_release_on_time(case, how):
    q, events, slack = case
    cq = compile_or_discard(q, INDEXED)
    few_outputs(lambda: cq.engine(BACKENDS[-1], reorder_slack=slack), events)
    for backend in BACKENDS:
        assert_released_on_time(partial(cq.engine, backend, reorder_slack=slack),
                                events, slack, how)


# ---- trend engines ------------------------------------------------------------------------
def assert_rows_on_time(make_engine, events: list, reads: str, how: str) -> int:
    """Every row of a window [s, e) is received when the first event with time >= e has been
    asked for, and before the next; the windows no event closes come from flush() only. Rows
    equal those of process(list) + flush. (The query accepts every event whose type is in
    ``reads``: its pattern's types, no local predicate.)"""
    bulk = make_engine()
    want = list(bulk.process(list(events))) + bulk.flush()
    engine = make_engine()
    got = received(engine, events, how)
    flushed = engine.flush()
    assert [row for _, row in got] + flushed == want
    times = [a["t"] if typ in reads else None for typ, a in events]
    for asked, row in got:
        assert "window_end" in row, row  # without a window, rows come from flush() only
        closer = next(j for j, t in enumerate(times)
                      if t is not None and t >= row["window_end"])
        assert asked == closer, (row, asked, closer)
    last = max((t for t in times if t is not None), default=None)
    assert all(row.get("window_end", float("inf")) > last for row in flushed)
    return len(got)


TRENDS = {  # query -> the types it reads
    "RETURN COUNT(*), SUM(A.v) PATTERN A+ WITHIN 10 SLIDE 5": "A",
    "RETURN COUNT(*), MIN(B.v) PATTERN SEQ(A+, B)+ WITHIN 6 SLIDE 6": "AB",
    "RETURN g, COUNT(*), MAX(A.v) PATTERN SEQ(A+, B) SEMANTICS skip-till-next-match "
    "WHERE [h] AND A.v < NEXT(A).v GROUP-BY g WITHIN 8 SLIDE 3": "AB",
    "RETURN COUNT(*) PATTERN SEQ(A, B+) SEMANTICS contiguous WITHIN 4 SLIDE 1": "AB",
}


def trend_stream(n: int, seed: int) -> list[tuple[str, dict]]:
    rng = random.Random(seed)
    t, out = 0, []
    for _ in range(n):
        t += rng.choice([0, 1, 1, 2, 3])
        out.append((rng.choice("AAB"), {"v": rng.randint(0, 3), "g": rng.randint(0, 1),
                                         "h": rng.randint(0, 1), "t": t}))
    return out


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("text", TRENDS)
def test_trend_rows_come_out_when_their_window_closes(backend, text, how):
    q = cercore.compile(text, TREND_SCHEMA)
    total = sum(assert_rows_on_time(lambda: q.engine(backend), trend_stream(80, seed),
                                    TRENDS[text], how) for seed in range(3))
    assert total > 0


@settings(max_examples=150, **SETTINGS)
@given(trend_cases(max_events=30), st.sampled_from(HOW))
def test_random_trend_queries_hold_nothing_back(c, how):
    # no local predicate: the query accepts every event of its pattern's types (of every type
    # under contiguous semantics, which any event breaks), so which event closes a window is
    # simple to tell
    pattern_types: set[str] = set()

    def collect(p):
        if p[0] == "atom":
            pattern_types.add(p[2])
        else:
            for sub in p[1:]:
                collect(sub)
    collect(c["pattern"])
    c = {**c, "local": []}
    q = compile_trend(trend_text(c), TREND_SCHEMA)
    events = [(e["type"], {k: e[k] for k in ("v", "g", "h", "t")}) for e in c["events"]]
    reads = "ABCD" if c["semantics"] == "contiguous" else "".join(pattern_types)
    for backend in BACKENDS:
        assert_rows_on_time(partial(q.engine, backend), events, reads, how)


@pytest.mark.parametrize("backend", BACKENDS)
def test_trend_window_closes_on_an_event_filtered_out(backend):
    """An event of a read type that a local predicate filters out still moves event time on:
    the windows it passes close (found held back by the resumption tests above)."""
    q = cercore.compile("RETURN COUNT(*) PATTERN A+ WHERE A.v > 5 WITHIN 10 SLIDE 10",
                        TREND_SCHEMA)
    engine = q.engine(backend)
    assert engine.push("A", {"v": 9, "g": 0, "h": 0, "t": 1}) == []
    rows = engine.push("A", {"v": 0, "g": 0, "h": 0, "t": 15})
    assert engine.last_time == 15
    assert rows == [{"window_start": 0, "window_end": 10, "COUNT(*)": 1}]
