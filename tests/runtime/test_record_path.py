"""The record path (one event at a time) against the batch path: any stream fed through
``push``, ``process(list)`` with random cuts, ``process(generator)``, ``aprocess`` and
``process(Arrow)`` with random cuts gives identical complex events -- intervals, positions,
events, times, bindings -- and identical stats, on both backends; random queries of the full
CEQL (strategies, CONSUME BY, LIMIT, projections, NOT, contiguity, PARTITION BY, windows,
predicates between events, stream tags) and bad events in skip mode."""

from __future__ import annotations

import asyncio
import itertools

import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies import bindable, queries, queries_between_events, schemas, streams
from support import BACKENDS

import cercore
from cercore.ceql import ast, printer
from cercore.query import CompiledQuery
from cercore.types import AttrType

SETTINGS = dict(deadline=None)
ARROW_TYPES = {AttrType.INT: pa.int64(), AttrType.DOUBLE: pa.float64(),
               AttrType.STRING: pa.string(), AttrType.BOOL: pa.bool_()}


def compile_ast(q: ast.Query, schema) -> CompiledQuery:
    """The query compiled from its text (what users do); discarded when it is refused."""
    try:
        return cercore.compile(printer.format_query(q), schema)
    except cercore.CEQLSemanticError:
        assume(False)


def described(ces) -> list[tuple]:
    """Everything a complex event tells, read back."""
    return [(ce.start, ce.end, ce.positions, ce.start_time, ce.end_time,
             tuple((e.type, e.position, tuple(sorted(e.attributes.items()))) for e in ce.events),
             tuple(sorted(ce.bindings.items()))) for ce in ces]


def as_records(events: list[tuple]) -> list[tuple]:
    """(type, attrs) records; a stream-tagged event loses its tag (fed untagged)."""
    return [(e[0], e[1]) for e in events]


def as_table(schema, events: list[tuple]) -> pa.Table:
    types = schema.attribute_types()
    cols = {"event_type": pa.array([e[0] for e in events], pa.string())}
    for a, t in types.items():
        cols[a] = pa.array([e[1].get(a) for e in events], ARROW_TYPES[t])
    return pa.table(cols)


def feeds(cq, events, backend: str, cuts: list[int]):
    """(name, complex events, engine) of every way of feeding ``events``."""
    def engine():
        return cq.engine(backend, on_error="skip")

    def generator():
        yield from as_records(events)

    async def agen():
        for rec in as_records(events):
            await asyncio.sleep(0)
            yield rec

    async def collect(e):
        return [ce async for ce in e.aprocess(agen())]

    pieces = [0, *sorted(set(cuts)), len(events)]
    out = []
    e = engine()
    out.append(("push", [ce for t, a in as_records(events) for ce in e.push(t, a)], e))
    e = engine()
    out.append(("list", [ce for lo, hi in zip(pieces, pieces[1:])
                         for ce in e.process(as_records(events)[lo:hi])], e))
    e = engine()
    out.append(("generator", list(e.process(generator())), e))
    e = engine()
    out.append(("aprocess", asyncio.run(collect(e)), e))
    e = engine()
    table = as_table(cq.schema, events)
    out.append(("arrow", [ce for lo, hi in zip(pieces, pieces[1:])
                          for ce in e.process(table.slice(lo, hi - lo))], e))
    return out


def stats_of(engine) -> dict:
    s = dict(engine.stats)
    s.pop("backend")
    s.pop("tecs_nodes")  # when the arena is reclaimed depends on batch boundaries
    return s


MAX_OUTPUT = 2000


def assert_all_equal(cq, events, cuts):
    # a stream of 40 events can have exponentially many complex events: keep the ones whose
    # outputs can be held five times over
    first = cq.engine(BACKENDS[-1], on_error="skip").process(as_records(events))
    assume(sum(1 for _ in itertools.islice(first, MAX_OUTPUT + 1)) <= MAX_OUTPUT)
    results = {}
    for backend in BACKENDS:
        for name, ces, engine in feeds(cq, events, backend, cuts):
            results[(backend, name)] = (described(ces), stats_of(engine))
    (first_key, first), *rest = results.items()
    for key, got in rest:
        assert got[0] == first[0], (key, first_key)
        assert got[1] == first[1], (key, first_key)


@st.composite
def cases(draw, between: bool = False, max_len: int = 12):
    schema = draw(schemas())
    q = draw(queries_between_events(schema) if between else queries(schema, full=True))
    events = draw(streams(schema, max_len, favour=set(bindable(q.formula))
                          & set(schema.event_types)))
    cuts = draw(st.lists(st.integers(0, max(len(events), 0)), max_size=3))
    return schema, q, events, cuts


@settings(max_examples=200, **SETTINGS)
@given(cases())
def test_every_way_of_feeding_gives_the_same(case):
    schema, q, events, cuts = case
    assert_all_equal(compile_ast(q, schema), events, cuts)


@settings(max_examples=80, **SETTINGS)
@given(cases(between=True))
def test_predicates_between_events_on_every_path(case):
    schema, q, events, cuts = case
    assert_all_equal(compile_ast(q, schema), events, cuts)


@settings(max_examples=60, **SETTINGS)
@given(cases(max_len=40))
def test_longer_streams(case):
    schema, q, events, cuts = case
    assert_all_equal(compile_ast(q, schema), events, cuts)


BAD_DECL = "CREATE STREAM S { EVENT A { v:int, ts:primary_time }, EVENT B { v:int, " \
           "s:string, ts:primary_time } }"
BAD_EVENTS = [("A", {"v": 1, "ts": 0}), ("B", {"v": "x", "s": "a", "ts": 1}),
              ("C", {"v": 1}), ("B", {"v": 2, "s": "a", "ts": 2}), ("A", {"v": 3}),
              ("A", {"v": 3, "ts": 1}), ("B", {"v": 4, "s": "b", "ts": 3, "z": 1}),
              "junk", ("B", {"v": 5, "s": None, "ts": 4}), ("A", {"v": 2**70, "ts": 5}),
              ("B", {"v": 6, "s": "c", "ts": 6})]


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_events_are_skipped_alike(backend):
    """Every kind of bad event, skipped and counted the same one at a time and in a batch."""
    q = cercore.compile("SELECT * FROM S WHERE A ; B+ WITHIN 4 [ts]", BAD_DECL)
    bulk = q.engine(backend, on_error="skip")
    want = described(bulk.process(BAD_EVENTS))
    one = q.engine(backend, on_error="skip")
    got = described(ce for rec in BAD_EVENTS
                    for ce in (one.push(*rec) if isinstance(rec, tuple) else
                               one.process(iter([rec]))))
    assert got == want and want
    assert one.stats["skipped_by_reason"] == bulk.stats["skipped_by_reason"]
    assert one.stats["skipped"] == 7  # v="x", C, no ts, ts back to 1, z, junk, 2**70


@pytest.mark.parametrize("backend", BACKENDS)
def test_raise_mode_stops_at_the_bad_event_without_consuming_it(backend):
    q = cercore.compile("SELECT * FROM S WHERE A ; B", BAD_DECL)
    e = q.engine(backend)
    assert e.push("A", {"v": 1, "ts": 0}) == []
    with pytest.raises(cercore.EventError, match="time goes backwards"):
        e.push("B", {"v": 1, "s": "a", "ts": -1})
    with pytest.raises(cercore.EventError, match="unknown event type"):
        e.push("C", {})
    assert e.position == 1
    assert [(ce.start, ce.end) for ce in e.push("B", {"v": 1, "s": "a", "ts": 0})] == [(0, 1)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_reorder_slack_one_at_a_time(backend):
    """With a reorder slack, push and a generator release events as the batch path does."""
    q = cercore.compile("SELECT * FROM S WHERE A ; B WITHIN 3 [ts]", BAD_DECL)
    events = [("A", {"v": i, "ts": t}) if i % 2 else ("B", {"v": i, "s": "x", "ts": t})
              for i, t in enumerate([0, 2, 1, 3, 5, 4, 6, 8, 7, 9])]
    bulk = q.engine(backend, reorder_slack=2)
    want = described(list(bulk.process(events)) + bulk.flush())
    pushed = q.engine(backend, reorder_slack=2)
    got = described([ce for t, a in events for ce in pushed.push(t, a)] + pushed.flush())
    live = q.engine(backend, reorder_slack=2)
    streamed = described(list(live.process(iter(events))) + live.flush())
    assert got == want == streamed and want


def test_scalar_leaves_equal_vectorised_leaves():
    """The scalar form of a leaf (the record path) equals the vectorised one on every event,
    for random predicates over every attribute type, nulls included."""
    from strategies import _attrs_of, predicates

    from cercore.input import EventDecoder
    from cercore.predicates import evaluate_leaf, scalar_leaf

    @settings(max_examples=200, **SETTINGS)
    @given(st.data())
    def check(data):
        schema = data.draw(schemas())
        types = set(schema.event_types)
        pred = data.draw(predicates(_attrs_of(schema, types), depth=0))
        assume(not isinstance(pred, ast.PredConst))  # folded away by analysis: never a leaf
        events = data.draw(streams(schema, 10))
        decoder = EventDecoder(schema)
        batch = decoder.from_records(events, 0)
        want = evaluate_leaf(pred, batch.columns).tolist()
        fn = scalar_leaf(pred)
        got = [fn(decoder.decode_one(t, attrs, -1, k)[1]) for k, (t, attrs) in enumerate(events)]
        assert got == want, pred

    check()
