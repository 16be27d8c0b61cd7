"""Several queries, one pass: ``cercore.multi_engine`` gives each query exactly the complex
events its own engine gives, merged in stream order, and evaluates shared predicates once."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import SCHEMAS, queries, streams
from support import compiled_or_discarded

import cercore
from cercore.ceql.printer import format_query
from cercore.runtime import letters


def key(ce) -> tuple:
    return ce.start, ce.end, ce.positions, tuple((e.type, e.attributes) for e in ce.events)


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_each_query_gets_what_its_own_engine_finds(backend, data):
    schema = data.draw(st.sampled_from(list(SCHEMAS.values())))
    texts = [format_query(q) for q in
             data.draw(st.lists(queries(schema, full=True), min_size=1, max_size=4))]
    events = data.draw(streams(schema, max_len=10))
    batch = data.draw(st.sampled_from([1, 4, 16384]))
    compiled = {f"q{i}": compiled_or_discarded(t, schema) for i, t in enumerate(texts)}
    multi = cercore.multi_engine(compiled, backend=backend)
    multi.input.batch_size = batch
    got = list(multi.process(events))
    for name, q in compiled.items():
        alone = [key(ce) for ce in q.engine(backend).process(events)]
        assert [key(m.ce) for m in got if m.query == name] == alone, name
    ends = [m.ce.end for m in got]
    assert ends == sorted(ends)  # stream order across queries
    bulk = multi_engine_arrays(compiled, backend, events)
    for name, q in compiled.items():
        alone = q.engine(backend).process_arrays(events)
        assert bulk[name].start.tolist() == alone.start.tolist()
        assert bulk[name].positions.tolist() == alone.positions.tolist()


def multi_engine_arrays(compiled, backend, events):
    return cercore.multi_engine(compiled, backend=backend).process_arrays(events)


def test_shared_predicates_are_evaluated_once(monkeypatch):
    schema = SCHEMAS["seconds"]
    texts = ["SELECT * FROM S WHERE A AS x; B AS y FILTER x[v > 1] AND y[s = 'a']",
             "SELECT * FROM S WHERE B AS y; A AS x FILTER x[v > 1] AND y[s = 'b']",
             "SELECT * FROM S WHERE A AS x FILTER x[v > 1]"]
    calls: list[str] = []
    real = letters.evaluate_leaf

    def counting(p, cols):
        calls.append(letters._leaf_text(p))
        return real(p, cols)

    monkeypatch.setattr(letters, "evaluate_leaf", counting)
    events = [("A", {"v": 2, "w": 0.0, "s": "a", "b": True, "k": 0, "ts": 1}),
              ("B", {"v": 0, "w": 0.0, "s": "a", "k": 0, "ts": 2})]
    multi = cercore.multi_engine(texts, schema, backend="python")
    got = [(m.query, m.ce.positions) for m in multi.process(events)]
    assert got == [("q2", (0,)), ("q0", (0, 1))]
    assert sorted(calls) == sorted(["v > 1", "s == 'a'", "s == 'b'"])


def test_time_order_is_checked_once_for_the_stream():
    schema = SCHEMAS["seconds"]
    multi = cercore.multi_engine(["SELECT * FROM S WHERE A WITHIN 2 SECONDS",
                                  "SELECT * FROM S WHERE A; A WITHIN 2 SECONDS"], schema,
                                 on_error="skip")
    a = {"v": 0, "w": 0.0, "s": "", "b": True, "k": 0}
    got = [(m.query, m.ce.positions) for m in
           multi.process([("A", {**a, "ts": 5}), ("A", {**a, "ts": 3}), ("A", {**a, "ts": 6})])]
    assert got == [("q0", (0,)), ("q0", (2,)), ("q1", (0, 2))]
    assert multi.stats["skipped_by_reason"] == {"time goes backwards": 1}
    raising = cercore.multi_engine(["SELECT * FROM S WHERE A WITHIN 2 SECONDS"], schema)
    with pytest.raises(cercore.EventError, match="time goes backwards"):
        list(raising.process([("A", {**a, "ts": 5}), ("A", {**a, "ts": 3})]))
    assert raising.stats["events"] == 1


def test_queries_must_share_a_schema():
    other = cercore.Schema.parse("CREATE STREAM S { EVENT A { v:int } }")
    with pytest.raises(cercore.ConfigError, match="share one schema"):
        cercore.multi_engine([cercore.compile("SELECT * FROM S WHERE A", other),
                              cercore.compile("SELECT * FROM S WHERE A", SCHEMAS["seconds"])])
