"""The printer: format_query(q) parses back to an equal AST (positions aside)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cercore.ceql import ast as A
from cercore.ceql.parser import parse_query
from cercore.ceql.printer import (
    KEYWORDS,
    format_expr,
    format_formula,
    format_name,
    format_pred,
    format_query,
)


def roundtrip(q: A.Query) -> A.Query:
    text = format_query(q)
    back = parse_query(text)
    assert back == q, text
    return back


def q_of(f: A.Formula, **kw) -> A.Query:
    return A.Query(f, **kw)


def ev(name: str) -> A.EventAtom:
    return A.EventAtom(name)


# ---------------------------------------------------------------------------------------
# Hand-written cases
# ---------------------------------------------------------------------------------------
ABC = [ev("A"), ev("B"), ev("C")]


@pytest.mark.parametrize("f", [
    A.Seq(A.Seq(ev("A"), ev("B")), ev("C")),
    A.Seq(ev("A"), A.Seq(ev("B"), ev("C"))),
    A.Or(ev("A"), A.Or(ev("B"), ev("C"))),
    A.Contig(ev("A"), A.Contig(ev("B"), ev("C"))),
    A.Seq(A.Or(ev("A"), ev("B")), ev("C")),
    A.Contig(A.Seq(ev("A"), ev("B")), ev("C")),
    A.Seq(A.Contig(ev("A"), ev("B")), ev("C")),
    A.Iter(A.Seq(ev("A"), ev("B"))),
    A.Iter(A.As(ev("A"), "x")),
    A.As(A.Iter(ev("A")), "x"),
    A.Iter(A.Iter(ev("A"), True)),
    A.As(A.As(ev("A"), "x"), "y"),
    A.Seq(ev("A"), A.Filter(ev("B"), A.AtomicFilter("B", A.PredConst(True)))),
    A.Filter(A.Filter(ev("A"), A.AtomicFilter("A", A.PredConst(True))),
             A.AtomicFilter("A", A.PredConst(False))),
    A.Filter(ev("A"), A.FilterAnd(A.AtomicFilter("A", A.PredConst(True)),
                                  A.FilterOr(A.AtomicFilter("A", A.PredConst(True)),
                                             A.AtomicFilter("A", A.PredConst(False))))),
    A.Not(A.Filter(ev("A"), A.AtomicFilter("A", A.PredConst(True)))),
    A.Seq(ev("A"), A.Not(ev("B"))),
    A.EventAtom("BUY", "S"),
    A.As(A.EventAtom("select", "my stream"), "`odd`"),
])
def test_formula_round_trip(f):
    roundtrip(q_of(f))


def pq(p: A.Pred) -> A.Query:
    return q_of(A.Filter(ev("A"), A.AtomicFilter("A", p)))


a, b = A.AttrRef("a"), A.AttrRef("b")


@pytest.mark.parametrize("p", [
    A.Compare("<", A.BinOp("-", a, A.BinOp("-", b, A.Literal(1))), A.Literal(2)),
    A.Compare("==", A.BinOp("*", A.BinOp("+", a, b), A.Literal(2)), A.Literal(-3)),
    A.Compare("!=", A.Neg(A.Literal(5)), A.Neg(A.Neg(a))),
    A.Compare(">=", A.Literal(-5), A.BinOp("-", a, A.Literal(-5))),
    A.Compare("<=", A.Neg(A.Literal(-5)), A.BinOp("%", a, A.BinOp("/", b, A.Literal(2.5)))),
    A.Compare("==", A.Literal("it's"), A.Literal(True)),
    A.Compare(">", A.Literal(1e300), A.Literal(float("inf"))),
    A.PredNot(A.PredAnd(A.PredOr(A.PredConst(True), A.PredConst(False)), A.PredConst(True))),
    A.PredOr(A.PredConst(True), A.PredOr(A.PredConst(False), A.PredConst(True))),
    A.PredAnd(A.PredConst(True), A.PredAnd(A.PredConst(False), A.PredConst(True))),
    A.Like(a, r"^a\d+'x'$"),
    A.InSet(a, (A.Literal(1), A.Range(A.Literal(2), A.Literal(5)), A.Literal("x")), True),
    A.InSet(a, (A.Range(A.Literal(1.5), A.Literal(-2.5)),)),
    A.InSet(a, ()),
    A.InRange(A.BinOp("+", a, A.Literal(1)), A.Literal(0), A.Neg(b), True),
    A.PredNot(A.PredNot(A.PredConst(True))),
])
def test_pred_round_trip(p):
    roundtrip(pq(p))


def test_clauses_round_trip():
    roundtrip(A.Query(
        A.Seq(ev("A"), ev("B")), strategy="NEXT",
        projection=(A.ProjectionItem("x"), A.ProjectionItem("y", ("a", "b")),
                    A.ProjectionItem("z", ())),
        streams=("S", "T"), partition_by=(("a", "b"), ("c",)), within=A.TimeWindow(5400.0),
        consume="PARTITION", limit=10))
    for w in (A.EventsWindow(3), A.TimeWindow(0.25), A.TimeWindow(3661.0), A.TimeWindow(0.0),
              A.AttrWindow(10000, "stock_time"), A.AttrWindow(2.5, "select")):
        roundtrip(q_of(ev("A"), within=w, projection="NONE"))


def test_printed_text_is_readable():
    q = parse_query("select max * from S where (SELL or BUY) as low ; BUY+ as x "
                    "filter low[price < 10 and name in {'A', 1..3}] within 1 hour 30 minutes")
    assert format_query(q) == (
        "SELECT MAX *\n"
        "FROM S\n"
        "WHERE (SELL OR BUY) AS low ; BUY+ AS x "
        "FILTER low[price < 10 AND name IN {'A', 1..3}]\n"
        "WITHIN 1 HOUR 30 MINUTES")


def test_format_helpers():
    assert format_name("price") == "price"
    assert format_name("select") == "`select`"
    assert format_name("a b`c") == "`a b``c`"
    assert format_expr(A.Neg(A.Literal(5))) == "-(5)"
    assert format_expr(A.Literal(-5)) == "-5"
    assert format_expr(A.Neg(a)) == "-a"
    assert format_pred(A.PredNot(A.Compare(">", a, A.Literal(1)))) == "NOT (a > 1)"
    assert format_formula(A.Iter(A.As(ev("A"), "x"))) == "(A AS x)+"
    assert format_formula(A.Seq(ev("A"), A.Or(ev("B"), ev("C")))) == "A ; (B OR C)"


# ---------------------------------------------------------------------------------------
# Generated ASTs
# ---------------------------------------------------------------------------------------
_plain = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)
names = st.one_of(
    _plain,
    st.sampled_from(sorted(KEYWORDS)).map(str.lower),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=5),
)
numbers = st.one_of(
    st.integers(-10**12, 10**12),
    st.floats(allow_nan=False, allow_infinity=True, width=64),
)
literals = st.one_of(numbers, st.booleans(), st.text(max_size=6)).map(A.Literal)

exprs = st.recursive(
    st.one_of(literals, names.map(A.AttrRef)),
    lambda inner: st.one_of(
        st.builds(A.BinOp, st.sampled_from("+-*/%"), inner, inner),
        st.builds(A.Neg, inner),
    ),
    max_leaves=6,
)
set_items = st.one_of(literals, st.builds(A.Range, exprs, exprs))
pred_atoms = st.one_of(
    st.builds(A.Compare, st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), exprs, exprs),
    st.builds(A.Like, exprs, st.text(max_size=5)),
    st.builds(A.InSet, exprs, st.lists(set_items, max_size=3).map(tuple), st.booleans()),
    st.builds(A.InRange, exprs, exprs, exprs, st.booleans()),
    st.booleans().map(A.PredConst),
)
preds = st.recursive(
    pred_atoms,
    lambda inner: st.one_of(
        st.builds(A.PredAnd, inner, inner),
        st.builds(A.PredOr, inner, inner),
        st.builds(A.PredNot, inner),
    ),
    max_leaves=5,
)
filters = st.recursive(
    st.builds(A.AtomicFilter, names, preds),
    lambda inner: st.one_of(st.builds(A.FilterAnd, inner, inner),
                            st.builds(A.FilterOr, inner, inner)),
    max_leaves=3,
)
formulas = st.recursive(
    st.builds(A.EventAtom, names, st.one_of(st.none(), names)),
    lambda inner: st.one_of(
        st.builds(A.As, inner, names),
        st.builds(A.Filter, inner, filters),
        st.builds(A.Or, inner, inner),
        st.builds(A.Seq, inner, inner),
        st.builds(A.Contig, inner, inner),
        st.builds(A.Iter, inner, st.booleans()),
        st.builds(A.Not, inner),
    ),
    max_leaves=6,
)
windows = st.one_of(
    st.none(),
    st.integers(0, 10**6).map(A.EventsWindow),
    st.floats(0, 10**7, allow_nan=False).map(A.TimeWindow),
    st.integers(0, 10**6).map(float).map(A.TimeWindow),
    st.builds(A.AttrWindow, st.one_of(st.integers(0, 10**6), st.floats(0, 1e6)), names),
)
projections = st.one_of(
    st.just("*"), st.just("NONE"),
    st.lists(st.builds(A.ProjectionItem, names,
                       st.one_of(st.none(), st.lists(names, max_size=3).map(tuple))),
             min_size=1, max_size=3).map(tuple),
)
queries = st.builds(
    A.Query,
    formulas,
    strategy=st.one_of(st.none(), st.sampled_from(A.STRATEGIES)),
    projection=projections,
    streams=st.lists(names, max_size=2).map(tuple),
    partition_by=st.lists(st.lists(names, min_size=1, max_size=2).map(tuple),
                          max_size=2).map(tuple),
    within=windows,
    consume=st.one_of(st.none(), st.sampled_from(A.CONSUME_POLICIES)),
    limit=st.one_of(st.none(), st.integers(0, 10**6)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries)
def test_generated_queries_round_trip(q):
    roundtrip(q)


@settings(max_examples=200, deadline=None)
@given(preds)
def test_generated_predicates_round_trip(p):
    roundtrip(pq(p))
