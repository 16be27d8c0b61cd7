"""CEQL queries -> AST: every clause, every operator, precedence, lexical details."""

from __future__ import annotations

import pytest

from cercore.ceql import ast as A
from cercore.ceql.parser import parse_query
from cercore.errors import CEQLSyntaxError


def ev(name: str, stream: str | None = None) -> A.EventAtom:
    return A.EventAtom(name, stream)


def F(text: str) -> A.Formula:
    """The formula of ``SELECT * WHERE <text>``."""
    return parse_query(f"SELECT * WHERE {text}").formula


def P(pred: str) -> A.Pred:
    """The predicate of ``... FILTER X[<pred>]``."""
    f = parse_query(f"SELECT * WHERE X FILTER X[{pred}]").formula
    assert isinstance(f, A.Filter) and isinstance(f.filter, A.AtomicFilter)
    return f.filter.pred


def E(expr: str) -> A.Expr:
    """The left side of ``X[<expr> == 0]``."""
    p = P(f"{expr} == 0")
    assert isinstance(p, A.Compare)
    return p.left


a, b, c = A.AttrRef("a"), A.AttrRef("b"), A.AttrRef("c")
T = A.PredConst(True)
TA = A.AtomicFilter("A", T)


# ---------------------------------------------------------------------------------------
# Clauses
# ---------------------------------------------------------------------------------------
def test_minimal_query():
    q = parse_query("SELECT * WHERE A")
    assert q == A.Query(ev("A"))
    assert q.streams == () and q.strategy is None and q.projection == "*"
    assert q.partition_by == () and q.within is None and q.consume is None and q.limit is None


def test_all_clauses():
    q = parse_query("""
        SELECT LAST x, y[price, name] FROM S1, S2
        WHERE A AS x ; B AS y
        PARTITION BY [a, b], [c]
        WITHIN 10 EVENTS
        CONSUME BY PARTITION
        LIMIT 5
    """)
    assert q == A.Query(
        A.Seq(A.As(ev("A"), "x"), A.As(ev("B"), "y")),
        strategy="LAST",
        projection=(A.ProjectionItem("x"), A.ProjectionItem("y", ("price", "name"))),
        streams=("S1", "S2"),
        partition_by=(("a", "b"), ("c",)),
        within=A.EventsWindow(10),
        consume="PARTITION",
        limit=5,
    )


@pytest.mark.parametrize("strategy", A.STRATEGIES)
def test_strategies(strategy):
    assert parse_query(f"SELECT {strategy.lower()} * FROM S WHERE A").strategy == strategy


@pytest.mark.parametrize("text, projection", [
    ("*", "*"),
    ("NONE", "NONE"),
    ("none", "NONE"),
    ("x", (A.ProjectionItem("x"),)),
    ("x[a]", (A.ProjectionItem("x", ("a",)),)),
    ("x[], y", (A.ProjectionItem("x", ()), A.ProjectionItem("y"))),
    ("ANY x[a, b], y", None),
])
def test_projection(text, projection):
    q = parse_query(f"SELECT {text} WHERE A")
    if projection is None:
        assert q.strategy == "ANY"
        assert q.projection == (A.ProjectionItem("x", ("a", "b")), A.ProjectionItem("y"))
    else:
        assert q.projection == projection


@pytest.mark.parametrize("policy", A.CONSUME_POLICIES)
def test_consume(policy):
    assert parse_query(f"SELECT * WHERE A CONSUME BY {policy.lower()}").consume == policy


@pytest.mark.parametrize("text, window", [
    ("10 EVENTS", A.EventsWindow(10)),
    ("5 seconds", A.TimeWindow(5.0)),
    ("1 SECOND", A.TimeWindow(1.0)),
    ("1.5 minutes", A.TimeWindow(90.0)),
    ("1 HOUR", A.TimeWindow(3600.0)),
    ("1 hours 30 minutes", A.TimeWindow(5400.0)),
    ("30 MINUTES 1 HOUR 15 SECONDS", A.TimeWindow(5415.0)),
    ("2 HOURS 0.5 SECONDS", A.TimeWindow(7200.5)),
    (".5 seconds", A.TimeWindow(0.5)),
    ("10000 [stock_time]", A.AttrWindow(10000, "stock_time")),
    ("2.5 [`ts`]", A.AttrWindow(2.5, "ts")),
])
def test_within(text, window):
    w = parse_query(f"SELECT * WHERE A WITHIN {text}").within
    assert w == window
    assert type(w.seconds if isinstance(w, A.TimeWindow) else 0) in (float, int)


def test_time_window_seconds_are_exact():
    """Whole seconds stay ints, so a large window is not rounded; fractions are floats."""
    seconds = parse_query("SELECT * WHERE A WITHIN 99999999999999999 HOURS").within.seconds
    assert seconds == 99999999999999999 * 3600 and isinstance(seconds, int)
    assert parse_query("SELECT * WHERE A WITHIN 1.5 SECONDS").within.seconds == 1.5


def test_partition_by_single_group():
    assert parse_query("SELECT * WHERE A PARTITION BY [name]").partition_by == (("name",),)


# ---------------------------------------------------------------------------------------
# Formula operators and precedence
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, formula", [
    ("A", ev("A")),
    ("S>R", ev("R", "S")),
    ("S > R", ev("R", "S")),
    ("A ; B", A.Seq(ev("A"), ev("B"))),
    ("A : B", A.Contig(ev("A"), ev("B"))),
    ("A:B", A.Contig(ev("A"), ev("B"))),
    ("A OR B", A.Or(ev("A"), ev("B"))),
    ("A+", A.Iter(ev("A"))),
    ("A:+", A.Iter(ev("A"), True)),
    ("A AS x", A.As(ev("A"), "x")),
    ("NOT(A)", A.Not(ev("A"))),
    ("NOT (A FILTER A[true])", A.Not(A.Filter(ev("A"), TA))),
    ("A FILTER A[true]", A.Filter(ev("A"), TA)),
    ("(A)", ev("A")),
    ("((A ; B))", A.Seq(ev("A"), ev("B"))),
])
def test_formula_operators(text, formula):
    assert F(text) == formula


@pytest.mark.parametrize("text, formula", [
    # left associativity
    ("A ; B ; C", A.Seq(A.Seq(ev("A"), ev("B")), ev("C"))),
    ("A : B : C", A.Contig(A.Contig(ev("A"), ev("B")), ev("C"))),
    ("A OR B OR C", A.Or(A.Or(ev("A"), ev("B")), ev("C"))),
    # ; binds tighter than OR
    ("A ; B OR C", A.Or(A.Seq(ev("A"), ev("B")), ev("C"))),
    ("A OR B ; C", A.Or(ev("A"), A.Seq(ev("B"), ev("C")))),
    # ; binds tighter than :
    ("A ; B : C", A.Contig(A.Seq(ev("A"), ev("B")), ev("C"))),
    ("A : B ; C", A.Contig(ev("A"), A.Seq(ev("B"), ev("C")))),
    # : binds tighter than OR
    ("A : B OR C", A.Or(A.Contig(ev("A"), ev("B")), ev("C"))),
    ("A OR B : C", A.Or(ev("A"), A.Contig(ev("B"), ev("C")))),
    # postfix operators bind tightest, left to right
    ("A ; B AS x", A.Seq(ev("A"), A.As(ev("B"), "x"))),
    ("A ; B+", A.Seq(ev("A"), A.Iter(ev("B")))),
    ("A : B:+", A.Contig(ev("A"), A.Iter(ev("B"), True))),
    ("A OR B AS x", A.Or(ev("A"), A.As(ev("B"), "x"))),
    ("A+ AS x", A.As(A.Iter(ev("A")), "x")),
    ("A AS x +", A.Iter(A.As(ev("A"), "x"))),
    ("A AS x AS y", A.As(A.As(ev("A"), "x"), "y")),
    ("A++", A.Iter(A.Iter(ev("A")))),
    ("A+:+", A.Iter(A.Iter(ev("A")), True)),
    ("(A ; B)+", A.Iter(A.Seq(ev("A"), ev("B")))),
    ("(A ; B) AS x", A.As(A.Seq(ev("A"), ev("B")), "x")),
    ("S>A AS x", A.As(ev("A", "S"), "x")),
    # FILTER is the loosest
    ("A ; B FILTER A[true]", A.Filter(A.Seq(ev("A"), ev("B")), TA)),
    ("A OR B FILTER A[true]", A.Filter(A.Or(ev("A"), ev("B")), TA)),
    ("A : B FILTER A[true]", A.Filter(A.Contig(ev("A"), ev("B")), TA)),
    ("A ; (B FILTER A[true])", A.Seq(ev("A"), A.Filter(ev("B"), TA))),
    ("A FILTER A[true] FILTER B[false]",
     A.Filter(A.Filter(ev("A"), TA), A.AtomicFilter("B", A.PredConst(False)))),
])
def test_formula_precedence(text, formula):
    assert F(text) == formula


@pytest.mark.parametrize("text, filt", [
    ("X[true] AND Y[true]", A.FilterAnd(A.AtomicFilter("X", T), A.AtomicFilter("Y", T))),
    ("X[true] OR Y[true] AND Z[true]",
     A.FilterOr(A.AtomicFilter("X", T),
                A.FilterAnd(A.AtomicFilter("Y", T), A.AtomicFilter("Z", T)))),
    ("X[true] AND Y[true] OR Z[true]",
     A.FilterOr(A.FilterAnd(A.AtomicFilter("X", T), A.AtomicFilter("Y", T)),
                A.AtomicFilter("Z", T))),
    ("X[true] AND (Y[true] OR Z[true])",
     A.FilterAnd(A.AtomicFilter("X", T),
                 A.FilterOr(A.AtomicFilter("Y", T), A.AtomicFilter("Z", T)))),
    ("X[true] AND Y[true] AND Z[true]",
     A.FilterAnd(A.FilterAnd(A.AtomicFilter("X", T), A.AtomicFilter("Y", T)),
                 A.AtomicFilter("Z", T))),
])
def test_filter_expressions(text, filt):
    f = F(f"A FILTER {text}")
    assert f == A.Filter(ev("A"), filt)


# ---------------------------------------------------------------------------------------
# Predicates
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("op, stored", [
    ("<", "<"), ("<=", "<="), (">", ">"), (">=", ">="), ("=", "=="), ("==", "=="),
    ("!=", "!="), ("<>", "!="),
])
def test_comparisons(op, stored):
    assert P(f"a {op} 1") == A.Compare(stored, a, A.Literal(1))


@pytest.mark.parametrize("text, pred", [
    ("a > 1 AND b < 2 OR c == 3",
     A.PredOr(A.PredAnd(A.Compare(">", a, A.Literal(1)), A.Compare("<", b, A.Literal(2))),
              A.Compare("==", c, A.Literal(3)))),
    ("a > 1 OR b < 2 AND c == 3",
     A.PredOr(A.Compare(">", a, A.Literal(1)),
              A.PredAnd(A.Compare("<", b, A.Literal(2)), A.Compare("==", c, A.Literal(3))))),
    ("(a > 1 OR b < 2) AND c == 3",
     A.PredAnd(A.PredOr(A.Compare(">", a, A.Literal(1)), A.Compare("<", b, A.Literal(2))),
               A.Compare("==", c, A.Literal(3)))),
    ("NOT a > 1 AND b < 2",
     A.PredAnd(A.PredNot(A.Compare(">", a, A.Literal(1))), A.Compare("<", b, A.Literal(2)))),
    ("NOT (a > 1 AND b < 2)",
     A.PredNot(A.PredAnd(A.Compare(">", a, A.Literal(1)), A.Compare("<", b, A.Literal(2))))),
    ("NOT NOT true", A.PredNot(A.PredNot(T))),
    ("true", T),
    ("FALSE", A.PredConst(False)),
    ("(true)", T),
    ("a == true", A.Compare("==", a, A.Literal(True))),
    ("true OR false AND true",
     A.PredOr(T, A.PredAnd(A.PredConst(False), T))),
    ("(price > 10) OR (volume < 5)",
     A.PredOr(A.Compare(">", A.AttrRef("price"), A.Literal(10)),
              A.Compare("<", A.AttrRef("volume"), A.Literal(5)))),
    ("(price + 1) * 2 > 10",
     A.Compare(">", A.BinOp("*", A.BinOp("+", A.AttrRef("price"), A.Literal(1)), A.Literal(2)),
               A.Literal(10))),
    ("((price + 1) * 2 > 10)",
     A.Compare(">", A.BinOp("*", A.BinOp("+", A.AttrRef("price"), A.Literal(1)), A.Literal(2)),
               A.Literal(10))),
    ("name LIKE 'A.*'", A.Like(A.AttrRef("name"), "A.*")),
    (r"name LIKE '\d+\.x'", A.Like(A.AttrRef("name"), r"\d+\.x")),
    ("a IN {1, 2, 3}", A.InSet(a, (A.Literal(1), A.Literal(2), A.Literal(3)))),
    ("a NOT IN {'x', 'y'}", A.InSet(a, (A.Literal("x"), A.Literal("y")), True)),
    ("a IN {1..5}", A.InSet(a, (A.Range(A.Literal(1), A.Literal(5)),))),
    ("a IN {1 .. 5, 7, -3..-1}",
     A.InSet(a, (A.Range(A.Literal(1), A.Literal(5)), A.Literal(7),
                 A.Range(A.Literal(-3), A.Literal(-1))))),
    ("a IN {1.5..2.5}", A.InSet(a, (A.Range(A.Literal(1.5), A.Literal(2.5)),))),
    ("a IN {}", A.InSet(a, ())),
    ("a IN RANGE(1, 10)", A.InRange(a, A.Literal(1), A.Literal(10))),
    ("a NOT IN RANGE(b, b + 10)",
     A.InRange(a, b, A.BinOp("+", b, A.Literal(10)), True)),
    ("NOT a IN {1}", A.PredNot(A.InSet(a, (A.Literal(1),)))),
])
def test_predicates(text, pred):
    assert P(text) == pred


@pytest.mark.parametrize("text, expr", [
    ("a + b * c", A.BinOp("+", a, A.BinOp("*", b, c))),
    ("a * b + c", A.BinOp("+", A.BinOp("*", a, b), c)),
    ("a - b - c", A.BinOp("-", A.BinOp("-", a, b), c)),
    ("a / b % c", A.BinOp("%", A.BinOp("/", a, b), c)),
    ("(a + b) * c", A.BinOp("*", A.BinOp("+", a, b), c)),
    ("-a", A.Neg(a)),
    ("-a * b", A.BinOp("*", A.Neg(a), b)),
    ("-5", A.Literal(-5)),
    ("- 2.5", A.Literal(-2.5)),
    ("-(5)", A.Neg(A.Literal(5))),
    ("-(-5)", A.Neg(A.Literal(-5))),
    ("a - -5", A.BinOp("-", a, A.Literal(-5))),
    ("a-5", A.BinOp("-", a, A.Literal(5))),
    ("-(a + b)", A.Neg(A.BinOp("+", a, b))),
])
def test_arithmetic(text, expr):
    assert E(text) == expr


@pytest.mark.parametrize("text, value", [
    ("12", 12), ("1.5", 1.5), (".5", 0.5), ("1e3", 1000.0), ("2.5E-1", 0.25), ("0", 0),
    ("'abc'", "abc"), ("'it''s'", "it's"), ("''", ""), ('"double"', "double"),
    ('"say ""hi"""', 'say "hi"'), ("'a\"b'", 'a"b'), ("'--not a comment'", "--not a comment"),
    ("true", True), ("FALSE", False),
])
def test_literals(text, value):
    e = E(text)
    assert isinstance(e, A.Literal) and e.value == value and type(e.value) is type(value)


# ---------------------------------------------------------------------------------------
# Lexical details
# ---------------------------------------------------------------------------------------
def test_keywords_are_case_insensitive():
    assert parse_query("select * from s where a") == A.Query(ev("a"), streams=("s",))
    assert parse_query("SeLeCt aLL * FrOm S wHeRe A aS x FiLtEr x[price > 1] "
                       "WiThIn 5 EvEnTs CoNsUmE bY aNy LiMiT 3").strategy == "ALL"


def test_identifiers_are_case_sensitive():
    assert F("Buy ; BUY") == A.Seq(ev("Buy"), ev("BUY"))


def test_identifiers_may_contain_keywords():
    assert F("selection ; ORDERS ; `from` ; android ; or_else") == A.Seq(A.Seq(A.Seq(A.Seq(
        ev("selection"), ev("ORDERS")), ev("from")), ev("android")), ev("or_else"))


def test_backtick_identifiers():
    q = parse_query("SELECT `my var`[`a b`] FROM `my stream` WHERE `S 1`>`ev``t` AS `my var` "
                    "FILTER `my var`[`select` > 1] PARTITION BY [`where`]")
    assert q.streams == ("my stream",)
    assert q.projection == (A.ProjectionItem("my var", ("a b",)),)
    assert q.formula == A.Filter(
        A.As(ev("ev`t", "S 1"), "my var"),
        A.AtomicFilter("my var", A.Compare(">", A.AttrRef("select"), A.Literal(1))))
    assert q.partition_by == (("where",),)


def test_comments_and_whitespace():
    q = parse_query("""
        -- a line comment
        SELECT * /* a block
                    comment */ FROM S
        WHERE A--x
        ;B -- trailing
    """)
    assert q == A.Query(A.Seq(ev("A"), ev("B")), streams=("S",))
    assert parse_query("SELECT*FROM S WHERE A;B:C+FILTER A[a>=1]") == parse_query(
        "SELECT * FROM S WHERE A ; B : C+ FILTER A[a >= 1]")


def test_colon_plus_is_one_token():
    assert F("A:+") == A.Iter(ev("A"), True)
    assert F("A : B+") == A.Contig(ev("A"), A.Iter(ev("B")))


def test_range_dots_are_not_a_float():
    assert P("a IN {1..5}") == A.InSet(a, (A.Range(A.Literal(1), A.Literal(5)),))


def test_bad_input_types():
    with pytest.raises(TypeError):
        parse_query(None)  # type: ignore[arg-type]


def test_keyword_not_an_identifier():
    with pytest.raises(CEQLSyntaxError):
        parse_query("SELECT * WHERE A AS filter")


# ---------------------------------------------------------------------------------------
# The papers' queries
# ---------------------------------------------------------------------------------------
def test_core_figure_1():
    q = parse_query("""
        SELECT MAX * FROM Stock
        WHERE (SELL OR BUY) AS low ; (SELL OR BUY)+ ; (SELL OR BUY) AS high
        FILTER low[price < 100] AND high[price > 110]
        PARTITION BY [name]
        WITHIN 1 hours
    """)
    sb = A.Or(ev("SELL"), ev("BUY"))
    assert q == A.Query(
        A.Filter(
            A.Seq(A.Seq(A.As(sb, "low"), A.Iter(sb)), A.As(sb, "high")),
            A.FilterAnd(A.AtomicFilter("low", A.Compare("<", A.AttrRef("price"), A.Literal(100))),
                        A.AtomicFilter("high",
                                       A.Compare(">", A.AttrRef("price"), A.Literal(110))))),
        strategy="MAX", streams=("Stock",), partition_by=(("name",),),
        within=A.TimeWindow(3600.0))


def test_stock_query_s3():
    q = parse_query("""
        SELECT * FROM S
        WHERE (SELL as T1; BUY as T2; BUY as T3)
        FILTER T1[name = 'INTC'] AND T2[name = 'RIMM'] AND T3[name = 'QQQ']
        WITHIN 10000 [stock_time]
    """)
    assert q.within == A.AttrWindow(10000, "stock_time")
    assert q.formula == A.Filter(
        A.Seq(A.Seq(A.As(ev("SELL"), "T1"), A.As(ev("BUY"), "T2")), A.As(ev("BUY"), "T3")),
        A.FilterAnd(A.FilterAnd(
            A.AtomicFilter("T1", A.Compare("==", A.AttrRef("name"), A.Literal("INTC"))),
            A.AtomicFilter("T2", A.Compare("==", A.AttrRef("name"), A.Literal("RIMM")))),
            A.AtomicFilter("T3", A.Compare("==", A.AttrRef("name"), A.Literal("QQQ")))))


def test_stock_query_s6_style():
    q = parse_query("""
        SELECT * FROM S
        WHERE (BUY OR SELL) AS msft ; (BUY OR SELL) AS orcl ; (BUY OR SELL) AS csco
        FILTER msft[name = 'MSFT'] AND orcl[name = 'ORCL' AND price > 20]
           AND csco[name = 'CSCO' AND volume IN RANGE(100, 5000)]
        PARTITION BY [id]
        WITHIN 10000 [stock_time]
        CONSUME BY ANY
    """)
    assert q.within == A.AttrWindow(10000, "stock_time")
    assert q.consume == "ANY"
    assert isinstance(q.formula, A.Filter)
    assert q.formula.filter.right == A.AtomicFilter("csco", A.PredAnd(
        A.Compare("==", A.AttrRef("name"), A.Literal("CSCO")),
        A.InRange(A.AttrRef("volume"), A.Literal(100), A.Literal(5000))))


def test_rising_price_run():
    q = parse_query("""
        SELECT * FROM S
        WHERE BUY AS low ; (BUY AS mid)+ ; BUY AS high
        FILTER low[name = 'INTC' AND price <= 27.65] AND mid[volume >= 2000]
           AND high[price >= 27.73]
        PARTITION BY [name]
        WITHIN 30 SECONDS
    """)
    assert q.formula.formula == A.Seq(
        A.Seq(A.As(ev("BUY"), "low"), A.Iter(A.As(ev("BUY"), "mid"))), A.As(ev("BUY"), "high"))
    assert q.within == A.TimeWindow(30.0)


def test_packaged_queries_parse_and_round_trip():
    from importlib.resources import files

    from cercore.ceql.printer import format_query

    paths = [p for p in files("cercore.data").iterdir() if p.name.endswith(".ceql")]
    assert paths
    for path in paths:
        q = parse_query(path.read_text())
        assert parse_query(format_query(q)) == q


# ---------------------------------------------------------------------------------------
# Positions
# ---------------------------------------------------------------------------------------
def test_positions():
    q = parse_query("SELECT x[a]\nFROM S\nWHERE A AS x ;\n  S>B\nFILTER x[price > -1]")
    assert (q.line, q.column) == (1, 1)
    assert (q.projection[0].line, q.projection[0].column) == (1, 8)
    f = q.formula
    assert isinstance(f, A.Filter) and (f.line, f.column) == (3, 7)
    seq = f.formula
    assert (seq.line, seq.column) == (3, 7)
    assert (seq.left.line, seq.left.column) == (3, 7)            # A AS x
    assert (seq.left.formula.line, seq.left.formula.column) == (3, 7)
    assert (seq.right.line, seq.right.column) == (4, 3)          # S>B
    af = f.filter
    assert (af.line, af.column) == (5, 8)
    cmp_ = af.pred
    assert (cmp_.line, cmp_.column) == (5, 10)
    assert (cmp_.left.line, cmp_.left.column) == (5, 10)
    assert (cmp_.right.line, cmp_.right.column) == (5, 18)       # -1 starts at the minus


def test_every_node_has_a_position():
    import dataclasses

    q = parse_query("SELECT ANY x[a] FROM S WHERE (A AS x ; NOT(B) ; C:+ : D+ OR E) "
                    "FILTER x[a + -b * 2 > 1 AND NOT c LIKE 'x' OR d IN {1, 2..3} "
                    "OR e NOT IN RANGE(1, 2) OR true] AND (x[false] OR x[true]) "
                    "WITHIN 5 EVENTS")
    seen = 0

    def walk(node):
        nonlocal seen
        if dataclasses.is_dataclass(node):
            seen += 1
            assert node.line is not None and node.column is not None, node
            for fld in dataclasses.fields(node):
                walk(getattr(node, fld.name))
        elif isinstance(node, tuple):
            for x in node:
                walk(x)

    walk(q)
    assert seen > 30


@pytest.mark.parametrize("keyword", sorted(__import__("cercore.ceql.printer",
                                                      fromlist=["KEYWORDS"]).KEYWORDS))
def test_every_keyword_is_reserved_but_quotable(keyword):
    with pytest.raises(CEQLSyntaxError):
        parse_query(f"SELECT * WHERE A AS {keyword.lower()}")
    assert F(f"A AS `{keyword.lower()}`") == A.As(ev("A"), keyword.lower())
    assert F(f"A AS {keyword.lower()}_x") == A.As(ev("A"), f"{keyword.lower()}_x")


def test_keyword_list_matches_the_grammar():
    """Error messages print keywords from cercore.ceql.grammar.KEYWORDS: it must name exactly
    the grammar's keyword terminals."""
    from cercore.ceql import grammar

    assert grammar.grammar_keywords() == set(grammar._KEYWORD_TERMINALS)
