"""Unit tests of the brute-force oracle (tests/oracle.py) on hand-computed examples.

Queries are built as ASTs directly so that these tests depend on neither parser nor engine.
"""

from __future__ import annotations

import pytest
from oracle import evaluate, satisfies

from cercore.ceql import ast as A
from cercore.schema import EventType, Schema, Stream
from cercore.types import AttrType

INT, DBL, STR = AttrType.INT, AttrType.DOUBLE, AttrType.STRING


def make_schema(streams: dict[str, dict[str, list[tuple[str, AttrType]]]], *,
                time_attribute: str | None = None, time_unit: str = "s") -> Schema:
    schema = Schema(time_attribute=time_attribute, time_unit=time_unit)
    for sname, types in streams.items():
        for tname, attrs in types.items():
            if tname not in schema.event_types:
                schema.event_types[tname] = EventType(tname, tuple(attrs),
                                                      id=len(schema.event_types))
        schema.streams[sname] = Stream(sname, tuple(types))
    schema.validate()
    return schema


# ---- tiny AST builders ------------------------------------------------------------------
def at(name: str, stream: str | None = None) -> A.EventAtom:
    return A.EventAtom(name, stream)


def seq(*fs):
    out = fs[0]
    for f in fs[1:]:
        out = A.Seq(out, f)
    return out


def cmp(attr: str, op: str, value) -> A.Compare:
    return A.Compare(op, A.AttrRef(attr), A.Literal(value))


def filt(f, var: str, pred) -> A.Filter:
    return A.Filter(f, A.AtomicFilter(var, pred))


def query(f, **kw) -> A.Query:
    return A.Query(f, **kw)


ABC = make_schema({"S": {"A": [("v", INT), ("k", INT), ("ts", INT)],
                         "B": [("v", INT), ("k", INT), ("ts", INT)],
                         "C": [("v", INT), ("g", INT), ("ts", INT)]}})


def ev(t: str, v=0, **kw) -> tuple[str, dict]:
    attrs = {"v": v, "ts": kw.pop("ts", 0)}
    attrs["g" if t == "C" else "k"] = kw.pop("key", None)
    return t, attrs


def word(w: str, values=None) -> list[tuple[str, dict]]:
    values = values or [0] * len(w)
    return [ev(c, v) for c, v in zip(w, values, strict=True)]


# ---- CORE Figure 1 / Q1 ---------------------------------------------------------------------
STOCK = make_schema({"Stock": {
    "BUY": [("name", STR), ("price", DBL)], "SELL": [("name", STR), ("price", DBL)]}})
STOCK_STREAM = [
    ("SELL", {"name": "MSFT", "price": 101.0}),   # 0
    ("BUY", {"name": "INTL", "price": 80.0}),     # 1
    ("SELL", {"name": "INTL", "price": 81.0}),    # 2
    ("SELL", {"name": "AMZN", "price": 1900.0}),  # 3
    ("SELL", {"name": "MSFT", "price": 102.0}),   # 4
    ("SELL", {"name": "AMZN", "price": 1950.0}),  # 5
    ("SELL", {"name": "INTL", "price": 82.0}),    # 6
    ("SELL", {"name": "AMZN", "price": 2000.0}),  # 7
]


def test_q1_three_sells_with_name_filters():
    f = seq(A.As(at("SELL"), "msft"), A.As(at("SELL"), "intel"), A.As(at("SELL"), "amzn"))
    fe = A.FilterAnd(
        A.FilterAnd(A.AtomicFilter("msft", A.PredAnd(cmp("name", "==", "MSFT"),
                                                     cmp("price", ">", 100))),
                    A.AtomicFilter("intel", A.PredAnd(cmp("name", "==", "INTL"),
                                                      cmp("price", "<", 100)))),
        A.AtomicFilter("amzn", A.PredAnd(cmp("name", "==", "AMZN"), cmp("price", ">", 1920))))
    got = evaluate(query(A.Filter(f, fe), streams=("Stock",)), STOCK, STOCK_STREAM)
    assert got == {5: {(0, (0, 2, 5))},
                   7: {(0, (0, 2, 7)), (0, (0, 6, 7)), (4, (4, 6, 7))}}


def test_q1_without_filters_counts_all_triples_of_sells():
    f = seq(A.As(at("SELL"), "msft"), A.As(at("SELL"), "intel"), A.As(at("SELL"), "amzn"))
    got = evaluate(query(f), STOCK, STOCK_STREAM)
    sells = [0, 2, 3, 4, 5, 6, 7]
    expected: dict[int, set] = {}
    for x in sells:
        for y in sells:
            for z in sells:
                if x < y < z:
                    expected.setdefault(z, set()).add((x, (x, y, z)))
    assert got == expected
    assert sum(len(s) for s in got.values()) == 35  # C(7, 3)


# ---- iteration ------------------------------------------------------------------------------
def test_iteration_then_b():
    got = evaluate(query(seq(A.Iter(at("A")), at("B"))), ABC, word("AABAB"))
    assert got == {
        2: {(0, (0, 2)), (1, (1, 2)), (0, (0, 1, 2))},
        4: {(0, (0, 4)), (1, (1, 4)), (3, (3, 4)), (0, (0, 1, 4)), (0, (0, 3, 4)),
            (1, (1, 3, 4)), (0, (0, 1, 3, 4))},
    }


def test_iteration_of_a_sequence():
    # (A ; B)+ on ABAB: AB pairs (0,1), (0,3), (2,3), and the chain (0,1)(2,3).
    got = evaluate(query(A.Iter(seq(at("A"), at("B")))), ABC, word("ABAB"))
    assert got == {1: {(0, (0, 1))}, 3: {(0, (0, 3)), (2, (2, 3)), (0, (0, 1, 2, 3))}}


def test_as_collects_every_iteration_and_filter_is_for_all():
    f = filt(seq(A.Iter(A.As(at("A"), "x")), at("B")), "x", cmp("v", ">", 5))
    got = evaluate(query(f), ABC, word("AAAB", [7, 3, 9, 0]))
    # position 1 (v = 3) may not be in x, so no run containing it survives.
    assert got == {3: {(0, (0, 3)), (2, (2, 3)), (0, (0, 2, 3))}}


def test_filter_inside_iteration_applies_per_iteration():
    # (A AS x FILTER x[v > 5])+ is the same set as above on the A part.
    f = seq(A.Iter(filt(A.As(at("A"), "x"), "x", cmp("v", ">", 5))), at("B"))
    got = evaluate(query(f), ABC, word("AAAB", [7, 3, 9, 0]))
    assert got == {3: {(0, (0, 3)), (2, (2, 3)), (0, (0, 2, 3))}}


# ---- OR and vacuous filters -----------------------------------------------------------------
def test_or_across_variables_with_vacuous_filter():
    f = filt(seq(A.Or(A.As(at("A"), "x"), A.As(at("B"), "y")), at("C")), "x", cmp("v", ">", 1))
    got = evaluate(query(f), ABC, word("ABAC", [0, 9, 2, 0]))
    # A@0 fails x[v > 1]; the B branch binds no x, so the filter holds vacuously.
    assert got == {3: {(1, (1, 3)), (2, (2, 3))}}


def test_filter_or_is_union_of_filterings():
    fe = A.FilterOr(A.AtomicFilter("x", cmp("v", ">", 5)), A.AtomicFilter("y", cmp("v", ">", 5)))
    f = A.Filter(seq(A.As(at("A"), "x"), A.As(at("B"), "y")), fe)
    got = evaluate(query(f), ABC, word("AABB", [9, 0, 0, 9]))
    # pairs (a, b): (0,2) x ok; (0,3) both; (1,2) neither; (1,3) y ok.
    assert got == {2: {(0, (0, 2))}, 3: {(0, (0, 3)), (1, (1, 3))}}


def test_filter_and_on_two_variables():
    fe = A.FilterAnd(A.AtomicFilter("x", cmp("v", ">", 5)), A.AtomicFilter("y", cmp("v", ">", 5)))
    f = A.Filter(seq(A.As(at("A"), "x"), A.As(at("B"), "y")), fe)
    got = evaluate(query(f), ABC, word("AABB", [9, 0, 0, 9]))
    assert got == {3: {(0, (0, 3))}}


def test_filter_on_event_type_name_is_vacuous_for_other_branch():
    f = filt(A.Or(at("A"), at("B")), "A", cmp("v", ">", 5))
    got = evaluate(query(f), ABC, word("ABA", [9, 0, 1]))
    assert got == {0: {(0, (0,))}, 1: {(1, (1,))}}


def test_a_or_a_reports_once():
    got = evaluate(query(A.Or(at("A"), at("A"))), ABC, word("AB"))
    assert got == {0: {(0, (0,))}}


def test_as_renames_and_filters_whole_subformula():
    # (A ; B) AS z FILTER z[v > 0]: both events must satisfy the predicate.
    f = filt(A.As(seq(at("A"), at("B")), "z"), "z", cmp("v", ">", 0))
    got = evaluate(query(f), ABC, word("AABB", [1, 0, 1, 0]))
    assert got == {2: {(0, (0, 2))}}


# ---- windows --------------------------------------------------------------------------------
def test_events_window_boundary():
    q = query(seq(at("A"), at("B")), within=A.EventsWindow(2))
    got = evaluate(q, ABC, word("ABBB"))
    assert got == {1: {(0, (0, 1))}, 2: {(0, (0, 2))}}  # diff 3 at position 3 is out


def test_events_window_zero_keeps_single_events():
    q = query(A.Or(at("A"), seq(at("A"), at("B"))), within=A.EventsWindow(0))
    assert evaluate(q, ABC, word("AB")) == {0: {(0, (0,))}}


TIMED = make_schema({"S": {"A": [("v", INT), ("ts", INT)], "B": [("v", INT), ("ts", INT)]}},
                    time_attribute="ts")
TIMED_MS = make_schema({"S": {"A": [("v", INT), ("ts", INT)], "B": [("v", INT), ("ts", INT)]}},
                       time_attribute="ts", time_unit="ms")
UNTIMED = make_schema({"S": {"A": [("v", INT), ("ts", INT)], "B": [("v", INT), ("ts", INT)]}})


def timed(w: str, times: list[int]):
    return [(c, {"v": 0, "ts": t}) for c, t in zip(w, times, strict=True)]


def test_time_window_boundary_seconds():
    q = query(seq(at("A"), at("B")), within=A.TimeWindow(2.0))
    got = evaluate(q, TIMED, timed("ABBB", [0, 1, 2, 3]))
    assert got == {1: {(0, (0, 1))}, 2: {(0, (0, 2))}}


def test_time_window_boundary_milliseconds_and_fractions():
    q = query(seq(at("A"), at("B")), within=A.TimeWindow(0.003))  # 3 ms
    got = evaluate(q, TIMED_MS, timed("ABBB", [10, 12, 13, 14]))
    assert got == {1: {(0, (0, 1))}, 2: {(0, (0, 2))}}
    q = query(seq(at("A"), at("B")), within=A.TimeWindow(1.5))  # 1500 ms
    got = evaluate(q, TIMED_MS, timed("ABB", [0, 1500, 1501]))
    assert got == {1: {(0, (0, 1))}}


def test_time_window_counts_time_not_events():
    q = query(seq(at("A"), at("B")), within=A.TimeWindow(1.0))
    got = evaluate(q, TIMED, timed("AAAB", [0, 5, 5, 6]))
    assert got == {3: {(1, (1, 3)), (2, (2, 3))}}


def test_attribute_window_boundary():
    q = query(seq(at("A"), at("B")), within=A.AttrWindow(2, "ts"))
    got = evaluate(q, UNTIMED, timed("ABBB", [0, 1, 2, 3]))
    assert got == {1: {(0, (0, 1))}, 2: {(0, (0, 2))}}


def test_window_on_iteration():
    q = query(A.Iter(at("A")), within=A.EventsWindow(1))
    got = evaluate(q, ABC, word("AAA"))
    assert got == {0: {(0, (0,))}, 1: {(1, (1,)), (0, (0, 1))}, 2: {(2, (2,)), (1, (1, 2))}}


# ---- PARTITION BY ---------------------------------------------------------------------------
def test_partition_single_attribute_and_null_key():
    q = query(seq(at("A"), at("B")), partition_by=(("k",),))
    events = [ev("A", key=1), ev("A", key=2), ev("B", key=1), ev("A", key=None),
              ev("B", key=None), ev("B", key=2)]
    got = evaluate(q, ABC, events)
    assert got == {2: {(0, (0, 2))}, 5: {(1, (1, 5))}}


def test_partition_null_key_still_counts_as_tick():
    q = query(seq(at("A"), at("B")), partition_by=(("k",),), within=A.EventsWindow(1))
    events = [ev("A", key=1), ev("A", key=None), ev("B", key=1)]
    assert evaluate(q, ABC, events) == {}
    q = query(seq(at("A"), at("B")), partition_by=(("k",),), within=A.EventsWindow(2))
    assert evaluate(q, ABC, events) == {2: {(0, (0, 2))}}


def test_partition_alternatives():
    # [k, g]: A and B are keyed by k, C (which has no k) by g.
    q = query(seq(at("A"), at("C")), partition_by=(("k", "g"),))
    events = [ev("A", key=1), ev("C", key=2), ev("A", key=2), ev("C", key=1), ev("C", key=2),
              ev("C", key=None)]
    got = evaluate(q, ABC, events)
    assert got == {3: {(0, (0, 3))}, 4: {(2, (2, 4))}}


def test_partition_type_without_group_attribute_never_matches():
    q = query(seq(at("A"), at("C")), partition_by=(("k",),))  # C has no k
    assert evaluate(q, ABC, [ev("A", key=1), ev("C", key=1)]) == {}


def test_partition_composite_key():
    schema = make_schema({"S": {"A": [("k", INT), ("s", STR)], "B": [("k", INT), ("s", STR)]}})
    q = query(seq(at("A"), at("B")), partition_by=(("k",), ("s",)))
    events = [("A", {"k": 1, "s": "x"}), ("A", {"k": 1, "s": "y"}), ("B", {"k": 1, "s": "y"}),
              ("B", {"k": 2, "s": "x"}), ("B", {"k": 1, "s": None})]
    assert evaluate(q, schema, events) == {2: {(1, (1, 2))}}


def test_partition_iteration_stays_within_partition():
    q = query(A.Iter(at("A")), partition_by=(("k",),))
    events = [ev("A", key=1), ev("A", key=2), ev("A", key=1)]
    got = evaluate(q, ABC, events)
    assert got == {0: {(0, (0,))}, 1: {(1, (1,))}, 2: {(2, (2,)), (0, (0, 2))}}


# ---- FROM -----------------------------------------------------------------------------------
TWO = make_schema({"S": {"A": [("v", INT)], "B": [("v", INT)]},
                   "T": {"C": [("v", INT)], "B": [("v", INT)]},
                   "U": {"E": [("v", INT)]}})


def test_from_two_streams_and_invisible_events():
    events = [("A", {"v": 0}), ("E", {"v": 0}), ("C", {"v": 0}), ("E", {"v": 0}), ("B", {"v": 0})]
    q = query(seq(at("A"), at("C")), streams=("S", "T"), within=A.EventsWindow(1))
    assert evaluate(q, TWO, events) == {2: {(0, (0, 2))}}  # E is no tick
    q = query(seq(at("A"), A.Or(at("C", "T"), at("B"))), streams=("S", "T"))
    assert evaluate(q, TWO, events) == {2: {(0, (0, 2))}, 4: {(0, (0, 4))}}
    # Without FROM every event is visible (and E is a tick).
    q = query(seq(at("A"), at("C")), within=A.EventsWindow(1))
    assert evaluate(q, TWO, events) == {}
    # An event type outside FROM never matches.
    q = query(seq(at("A"), at("E")), streams=("S",))
    assert evaluate(q, TWO, events) == {}


# ---- predicates -----------------------------------------------------------------------------
def lit(v):
    return A.Literal(v)


def ref(a):
    return A.AttrRef(a)


@pytest.mark.parametrize("pred, attrs, expected", [
    (A.Compare("==", A.BinOp("/", lit(-7), lit(2)), lit(-3)), {}, True),
    (A.Compare("==", A.BinOp("%", lit(-7), lit(2)), lit(-1)), {}, True),
    (A.Compare("==", A.BinOp("/", ref("v"), lit(2)), lit(3)), {"v": 7}, True),
    (A.Compare("==", A.BinOp("/", ref("w"), lit(2)), lit(3.5)), {"w": 7.0}, True),
    (A.Compare("==", ref("v"), lit(2.0)), {"v": 2}, True),
    (A.Compare("<", ref("s"), lit("b")), {"s": "ab"}, True),
    (A.Compare("!=", ref("s"), lit("a")), {"s": "a"}, False),
    (A.Compare(">", A.BinOp("/", lit(1), ref("v")), lit(-5)), {"v": 0}, False),
    (A.PredNot(A.Compare(">", A.BinOp("/", lit(1), ref("v")), lit(-5))), {"v": 0}, True),
    (A.Compare(">", ref("v"), lit(0)), {"v": None}, False),
    (A.Compare("<=", ref("v"), lit(0)), {"v": None}, False),
    (A.Compare(">", ref("missing"), lit(0)), {"v": 1}, False),
    (A.PredNot(A.Compare(">", ref("v"), lit(0))), {"v": None}, True),
    (A.Like(ref("s"), "b"), {"s": "abc"}, True),
    (A.Like(ref("s"), "^b"), {"s": "abc"}, False),
    (A.Like(ref("s"), "^b"), {"s": None}, False),
    (A.InSet(ref("v"), (lit(1), A.Range(lit(3), lit(5)))), {"v": 5}, True),
    (A.InSet(ref("v"), (lit(1), A.Range(lit(3), lit(5)))), {"v": 2}, False),
    (A.InSet(ref("v"), (lit(1), A.Range(lit(3), lit(5))), negated=True), {"v": 2}, True),
    (A.InSet(ref("v"), (lit(1),), negated=True), {"v": None}, False),
    (A.InSet(ref("s"), (lit("a"), lit("b"))), {"s": "b"}, True),
    (A.InRange(ref("w"), lit(1), lit(2)), {"w": 2.0}, True),
    (A.InRange(ref("w"), lit(1), lit(2), negated=True), {"w": 2.5}, True),
    (A.InRange(ref("w"), lit(1), lit(2), negated=True), {"w": None}, False),
    (A.Compare("==", ref("b"), lit(True)), {"b": True}, True),
    (A.Compare("!=", ref("b"), lit(False)), {"b": None}, False),
    (A.PredOr(A.Compare("==", ref("v"), lit(1)), A.PredConst(True)), {"v": None}, True),
    (A.PredAnd(A.PredConst(True), A.Compare("==", A.Neg(ref("v")), lit(-1))), {"v": 1}, True),
    (A.Compare("==", A.BinOp("%", ref("w"), lit(2)), lit(-1.5)), {"w": -3.5}, True),  # fmod
    (A.Compare("==", A.BinOp("%", ref("w"), lit(0.0)), lit(0)), {"w": 1.0}, False),
])
def test_predicates(pred, attrs, expected):
    assert satisfies(pred, attrs) is expected


# Hand-derived answers for the full language (end position -> {(start, positions)}).
@pytest.mark.parametrize("q, w, expected", [
    (query(A.Contig(at("A"), at("B"))), "ABCAB", {1: {(0, (0, 1))}, 4: {(3, (3, 4))}}),
    (query(A.Contig(at("A"), at("B"))), "ACB", {}),
    (query(A.Iter(at("A"), contiguous=True)), "AA",
     {0: {(0, (0,))}, 1: {(1, (1,)), (0, (0, 1))}}),
    (query(A.Iter(at("A"), contiguous=True)), "ACA", {0: {(0, (0,))}, 2: {(2, (2,))}}),
    (query(seq(at("A"), A.Not(at("C")), at("B"))), "ACB", {}),
    (query(seq(at("A"), A.Not(at("C")), at("B"))), "AAB", {2: {(0, (0, 2))}}),
    (query(seq(A.Not(at("C")), at("B"))), "AB", {1: {(0, (1,))}}),
    (query(seq(at("A"), A.Not(at("C")))), "AB", {1: {(0, (0,))}}),
    (query(seq(A.As(at("A"), "x"), at("B")), projection=(A.ProjectionItem("x"),)), "AAB",
     {2: {(0, (0,)), (1, (1,))}}),
    (query(seq(at("A"), at("B")), projection="NONE"), "AB", {1: {(0, ())}}),
    (query(seq(at("A"), at("B")), strategy="STRICT"), "AAB", {2: {(1, (1, 2))}}),
    (query(seq(at("A"), at("B")), consume="ANY"), "AABB", {2: {(0, (0, 2)), (1, (1, 2))}}),
    (query(seq(at("A"), at("B")), consume="ANY"), "AABAB", {2: {(0, (0, 2)), (1, (1, 2))},
                                                          4: {(3, (3, 4))}}),
])
def test_full_language_vectors(q, w, expected):
    assert evaluate(q, ABC, word(w)) == expected


def test_unsupported_features_raise():
    for q in (query(seq(A.Not(at("C")), at("A")), strategy="NEXT"),
              query(seq(at("A"), at("B")), strategy="MAX",
                    projection=(A.ProjectionItem("B"),))):
        with pytest.raises(NotImplementedError):
            evaluate(q, ABC, word("AB"))
