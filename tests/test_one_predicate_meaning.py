"""One meaning for a predicate, whichever query kind evaluates it.

The same predicate texts -- nulls, int beside double, division and modulo by zero, integer
division of negative numbers, LIKE, IN, NOT, comparisons between attributes -- are evaluated
on the same events by

* a CEQL query (``A[p]``; records and an Arrow table, both backends),
* a trend query (``RETURN id, COUNT(*) PATTERN A WHERE p GROUP-BY id``; both backends),
* a network (PrePP) query: its filter (``passes_filters``: the predicate layer over columns)
  and its centralised evaluation (the engine),
* Spark columns (``cercore.spark.base.columns``: the predicate AST as a Spark ``Column``, what the
  PrePP semi joins and ``estimate_pairwise`` filter by; a local SparkSession),

and every one must give the truth values written down here (DESIGN.md "Filters": null and
undefined arithmetic are false, ``NOT`` negates a false leaf to true, integer ``/`` and ``%``
truncate toward zero, an int beside a double is a double, LIKE searches unanchored). The
expected values are stated, not derived, so a change of meaning everywhere at once fails too;
``test_the_cases_tell_c_division_from_python_floor_division`` keeps the events able to tell.

Predicates between two events (``A.x < B.d``) go through a CEQL predicate between events, a
network pairwise predicate (the engine, and ``pair_test``: the scalar form the simulator and
the estimators use), a trend condition on adjacent events (``A.x < NEXT(A).d``) and the
Spark column of that network predicate.

"""

from __future__ import annotations

import math
import re

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support import BACKENDS as BACKENDS_BUILT

import cercore
from cercore.network import NetEvent, NetQuery
from cercore.network.evaluate import centralised_matches, passes_filters
from cercore.network.pattern import parse_pattern
from cercore.network.query import Leaf, pair_test

BACKENDS = ["python", pytest.param("cython", marks=pytest.mark.skipif(
    cercore.BACKEND != "cython", reason="the Cython kernels are not built"))]

ATTRS = "id:int, t:int, x:int, y:int, d:double, s:string"
SCHEMA = cercore.Schema.parse(f"CREATE STREAM S {{ EVENT A {{ {ATTRS} }}, EVENT B {{ {ATTRS} }} }}",
                              time_attribute="t")

#        id   x     y     d     s
ROWS = [(0,  -7,    2,  1.5,  "abc"),
        (1,   7,   -2, -0.5,  "xabcx"),
        (2,   7,    0,  0.0,  "b"),
        (3, None,   3,  2.0,  None),
        (4,   3, None, None,  "ABC"),
        (5,   2,    2,  2.0,  ""),
        (6,  -8,   -3,  3.0,  "a.c")]
EVENTS = [{"id": i, "t": i, "x": x, "y": y, "d": d, "s": s} for i, x, y, d, s in ROWS]

# (predicate in trend form -- attributes as A.attr --, the ids of the events it holds for)
CASES = [
    ("A.x / A.y = -3", {0, 1}),                    # -7/2 and 7/-2 truncate to -3; 7/0: false
    ("A.x / 4 = -1", {0}),                         # -7/4 = -1 (not -2)
    ("-A.x / 4 = -1", {1, 2}),                    # -7/4 = -1
    ("A.x % A.y = -1", {0}),                       # -7 % 2 = -1, 7 % -2 = 1 (sign of x)
    ("A.x % (A.y - 2) = 1", {2}),                  # 7 % -2 = 1; % 0 (ids 0, 5): false
    ("A.d / (A.y - 2) > 1", {3}),                  # double / 0 is undefined, not +inf
    ("A.x < A.d", {0, 6}),                         # int beside double
    ("A.x = A.d", {5}),                            # 2 = 2.0
    ("A.x * 2 + A.d > 0", {1, 2, 5}),
    ("A.x > A.y", {1, 2}),                         # between attributes; a null: false
    ("A.x != A.y", {0, 1, 2, 6}),
    ("NOT (A.x > 0)", {0, 3, 6}),                  # null x: the leaf is false, NOT is true
    ("NOT (A.x / A.y = -3)", {2, 3, 4, 5, 6}),     # undefined: false, negated: true
    ("A.x >= 2 AND A.y > 0 OR A.s = 'b'", {2, 5}),
    ("A.s = 'abc'", {0}),
    ("A.s > 'a'", {0, 1, 2, 6}),
    ("A.s LIKE 'a.c'", {0, 1, 6}),                 # unanchored regular-expression search
    ("NOT (A.s LIKE 'b')", {3, 4, 5, 6}),
    ("A.x IN {7, -8, 2..3}", {1, 2, 4, 5, 6}),
    ("A.d IN {2, 1.5}", {0, 3, 5}),                # an int literal against a double
    ("A.s NOT IN {'abc', ''}", {1, 2, 4, 6}),      # null: false, NOT IN too
    ("A.x NOT IN {7}", {0, 4, 5, 6}),
    ("A.x IN {}", set()),                          # the empty set (the grammar, not a token)
    ("A.x NOT IN {}", {0, 1, 2, 4, 5, 6}),
]
IDS = [c[0] for c in CASES]


def ceql_form(text: str) -> str:
    """The predicate over one event's attributes, as inside ``A[...]``."""
    return re.sub(r"\bA\.(?=[a-z])", "", text)


def ids_of(events: list[dict], positions) -> set[int]:
    return {events[p]["id"] for p in positions}


# ---- one event: CEQL, trend, network -------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("text", "expected"), CASES, ids=IDS)
def test_ceql_query(text, expected, backend):
    q = cercore.compile(f"SELECT * FROM S WHERE A FILTER A[{ceql_form(text)}]", SCHEMA)
    records = [("A", e) for e in EVENTS]
    assert ids_of(EVENTS, [p for ce in q.run(records, backend=backend) for p in ce.positions]) \
        == expected
    table = pa.Table.from_pylist([{"event_type": "A", **e} for e in EVENTS])
    assert ids_of(EVENTS, [p for ce in q.run(table, backend=backend) for p in ce.positions]) \
        == expected


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("text", "expected"), CASES, ids=IDS)
def test_trend_query(text, expected, backend):
    q = cercore.compile(f"RETURN id, COUNT(*) PATTERN A WHERE {text} GROUP-BY id", SCHEMA)
    records = [("A", e) for e in EVENTS]
    table = pa.Table.from_pylist([{"event_type": "A", **e} for e in EVENTS])
    for events in (records, table):
        rows = q.run(events, backend=backend)
        assert {r["id"] for r in rows if r["COUNT(*)"]} == expected
        assert all(r["COUNT(*)"] == 1 for r in rows)


# the int64 edges: exact on every path (push evaluates one event in Python integers, a batch in
# numpy, which wraps -(-2**63) to -2**63 unless it falls back to Python integers)
EDGE_EVENTS = [{"id": i, "t": i, "x": x, "y": None, "d": None, "s": None}
               for i, x in enumerate([-2**63, 5, 2**63 - 1])]
EDGE_CASES = [("-A.x > 0", {0}), ("-A.x = 9223372036854775808", {0}), ("-A.x < 0", {1, 2}),
              ("-A.x / 2 > 0", {0}), ("-(-A.x) < 0", {0}), ("A.x - 1 < 0", {0}),
              ("A.x + 1 > 0", {1, 2}), ("A.x * -1 > 0", {0}), ("0 - A.x > 0", {0})]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("text", "expected"), EDGE_CASES, ids=[c[0] for c in EDGE_CASES])
def test_int64_edges_mean_the_same_on_every_path(text, expected, backend):
    q = cercore.compile(f"SELECT * FROM S WHERE A FILTER A[{ceql_form(text)}]", SCHEMA)
    engine = q.engine(backend)
    pushed = [p for e in EDGE_EVENTS for ce in engine.push("A", e) for p in ce.positions]
    records = [("A", e) for e in EDGE_EVENTS]
    table = pa.Table.from_pylist([{"event_type": "A", **e} for e in EDGE_EVENTS])
    for events in (records, table):
        found = [p for ce in q.run(events, backend=backend) for p in ce.positions]
        assert ids_of(EDGE_EVENTS, found) == expected, events is table
    assert ids_of(EDGE_EVENTS, pushed) == expected
    trend = cercore.compile(f"RETURN id, COUNT(*) PATTERN A WHERE {text} GROUP-BY id", SCHEMA)
    for events in (records, table):
        rows = trend.run(events, backend=backend)
        assert {r["id"] for r in rows if r["COUNT(*)"]} == expected


def net_events(rows: list[dict], types: str = "A") -> list[NetEvent]:
    return [NetEvent(e["id"], types[k % len(types)], e["t"], None,
                     {a: v for a, v in e.items() if a not in ("t",) and v is not None})
            for k, e in enumerate(rows)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("text", "expected"), CASES, ids=IDS)
def test_network_query(text, expected, backend):
    q = NetQuery(Leaf("A"), 10, filters={"A": ceql_form(text)})
    events = net_events(EVENTS)
    assert {e.uid for e in passes_filters(q, events, SCHEMA, backend)} == expected
    assert centralised_matches(q, events, SCHEMA, backend) == {frozenset({i}) for i in expected}


# ---- two events: CEQL, network (engine and pair_test), trend (adjacent events) ------------
PAIR_CASES = ["A.x < B.d", "A.x = B.d", "A.x >= B.y", "A.s != B.s", "A.s < B.s", "A.d > B.y"]


def truth(op: str, a, b) -> bool:
    """The expected truth of ``a op b``: false on a null, an int beside a double compares as
    the double (exact here: small values)."""
    if a is None or b is None:
        return False
    return {"<": a < b, "=": a == b, ">=": a >= b, "!=": a != b, ">": a > b}[op]


def pair_expectation(text: str) -> dict[tuple[int, int], bool]:
    (la, op, ra) = re.fullmatch(r"A\.(\w+) (\S+) B\.(\w+)", text).groups()
    return {(a["id"], b["id"]): truth(op, a[la], b[ra]) for a in EVENTS for b in EVENTS}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("text", PAIR_CASES)
def test_predicates_between_events(text, backend):
    expected = pair_expectation(text)
    assert any(expected.values()) and not all(expected.values())
    ceql = cercore.compile(f"SELECT * FROM S WHERE A ; B FILTER {text}", SCHEMA)
    trend = cercore.compile("RETURN COUNT(*) PATTERN A+ WHERE "
                            + text.replace("B.", "NEXT(A).") + " WITHIN 10 SLIDE 10", SCHEMA)
    net = parse_pattern(f"PATTERN SEQ(A, B) WHERE {text} WITHIN 10")
    holds = pair_test(net.predicates)
    for (i, j), want in expected.items():
        a, b = dict(EVENTS[i], t=0, id=0), dict(EVENTS[j], t=1, id=1)
        got_ceql = bool(ceql.run([("A", a), ("B", b)], backend=backend))
        # A+ over two A events: {a}, {b} and, when the condition holds, {a, b}
        got_trend = trend.run([("A", a), ("A", b)], backend=backend)[0]["COUNT(*)"] == 3
        pair = net_events([a, b], "AB")
        got_net = bool(centralised_matches(net, pair, SCHEMA, backend))
        got_scalar = holds(*pair) and holds(pair[1], pair[0])  # either order of the types
        assert (got_ceql, got_trend, got_net, got_scalar) == (want,) * 4, (i, j)


# ---- the cases can fail ---------------------------------------------------------------------
def python_truth(text: str, e: dict) -> bool:
    """``text`` read with Python's arithmetic (floor division, modulo with the divisor's sign,
    inf for a double divided by zero), false on a null -- the meanings a drifting evaluator
    could fall back to."""
    expr = ceql_form(text).replace(" = ", " == ").replace("NOT ", "not ").replace(
        " AND ", " and ").replace(" OR ", " or ").replace(" / ", " // ")
    if any(e[a] is None for a in re.findall(r"\b([xyds])\b", expr)):
        return False
    try:
        return bool(eval(expr, {}, dict(e)))  # noqa: S307 - our own fixed texts
    except ZeroDivisionError:
        return math.inf > 1


def test_the_cases_tell_c_division_from_python_floor_division():
    arithmetic = [(t, want) for t, want in CASES if re.search(r"[/%]", t) and "NOT" not in t]
    for text, want in arithmetic:
        got = {e["id"] for e in EVENTS if python_truth(text, e)}
        assert got != want, text


# ---- arithmetic on the edges of the doubles: one event (push) means what a batch means ------
# The scalar form (push, live iterators) and the vector form (bulk: records, Arrow) must agree
# where Python's float operations and numpy's part ways: math.fmod raises on an infinite
# dividend where np.fmod gives nan; inf and nan propagate; -0.0 divides by zero. The ints stay
# small enough that no product of four leaves leaves int64 (the int64 edges are the cases
# above; an exact integer beyond int64 beside a double is test_an_exact_big_integer_...).
EDGE_DOUBLES = [math.inf, -math.inf, math.nan, 1e308, -1e308, -0.0, 0.0, 5e-324, 1.5, -2.5]
EDGE_INTS = [0, 1, -1, 7, -7, 2**15, -2**15]
EDGE_LITERALS = ["1e400", "1e308", "0.0", "-0.0", "2.5", "0", "3", "-7", "32768"]
EDGE_SCHEMA = cercore.Schema.parse("CREATE STREAM S { EVENT A { t:int, x:int, y:int, d:double, "
                                   "e:double } }", time_attribute="t")
EDGE_ARROW = pa.schema([("event_type", pa.string()), ("t", pa.int64()), ("x", pa.int64()),
                        ("y", pa.int64()), ("d", pa.float64()), ("e", pa.float64())])


def _edge_expr(children):
    return st.one_of(
        st.tuples(children, st.sampled_from(["+", "-", "*", "/", "%"]), children).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"),
        children.map(lambda c: f"-({c})"))


EDGE_EXPRS = st.recursive(st.sampled_from(["x", "y", "d", "e"] + EDGE_LITERALS), _edge_expr,
                          max_leaves=4)
EDGE_PREDS = st.tuples(EDGE_EXPRS, st.sampled_from(["<", "<=", ">", ">=", "=", "!="]),
                       EDGE_EXPRS).map(" ".join)
EDGE_ROWS = st.lists(st.fixed_dictionaries({
    "x": st.sampled_from([None, *EDGE_INTS]), "y": st.sampled_from([None, *EDGE_INTS]),
    "d": st.sampled_from([None, *EDGE_DOUBLES]), "e": st.sampled_from([None, *EDGE_DOUBLES])}),
    min_size=1, max_size=6)


def edge_paths(text: str, rows: list[dict], backend: str) -> dict[str, list]:
    """The events satisfying ``A[text]`` through push, bulk records and a bulk Arrow table."""
    q = cercore.compile(f"SELECT * FROM S WHERE A FILTER A[{text}]", EDGE_SCHEMA)
    events = [dict(r, t=i) for i, r in enumerate(rows)]
    engine = q.engine(backend)
    table = pa.Table.from_pylist([{"event_type": "A", **e} for e in events], schema=EDGE_ARROW)
    return {"push": [ce.positions for e in events for ce in engine.push("A", e)],
            "records": [ce.positions for ce in q.run([("A", e) for e in events],
                                                     backend=backend)],
            "table": [ce.positions for ce in q.run(table, backend=backend)]}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's inf/nan warnings, by design
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=EDGE_PREDS, rows=EDGE_ROWS)
@example(text="y < 1e400 % x", rows=[{"x": 3, "y": 1, "d": None, "e": None}])  # push raised
def test_push_and_bulk_agree_on_extreme_doubles(text, rows):
    results = {backend: edge_paths(text, rows, backend) for backend in BACKENDS_BUILT}
    first = results["python"]["records"]
    assert all(got == first for paths in results.values() for got in paths.values()), results


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("text", "expected"), [
    ("y < 1e400 % x", []),                # inf % x is nan: false, where math.fmod raised
    ("NOT (y < 1e400 % x)", [(0,)]),      # nan compares false, so NOT holds
    ("d % 1e400 = d", [(0,)]),            # 1.5 % inf = 1.5
    ("d * 1e308 * 10 > 1e308", [(0,)]),   # overflows to inf, no error
    ("(d * 1e400) - 1e400 = 0", []),      # inf - inf = nan
    ("d / -0.0 < 0", []),                 # division by (negative) zero: false, not -inf
    ("e % d = -0.0 AND e % d = 0", [(0,)]),  # fmod(-0.0, 1.5) = -0.0 = 0
    ("x = e * 0 + 9007199254740992.0", [(0,)]),  # 2**53 + 1 beside a double: read as a double
])
def test_extreme_doubles_mean_numpys_arithmetic_on_every_path(text, expected, backend):
    got = edge_paths(text, [{"x": 2**53 + 1, "y": 1, "d": 1.5, "e": -0.0}], backend)
    assert got == {"push": expected, "records": expected, "table": expected}


@pytest.mark.xfail(strict=True, reason="the vector form compares integers that left int64 (an "
                   "object array: the whole batch's, once one event overflows) with a double "
                   "exactly, where the scalar form and DESIGN.md read them as a double; the fix "
                   "belongs in evaluate_leaf's comparison, outside the scalar form")
@pytest.mark.parametrize("backend", BACKENDS)
def test_an_exact_big_integer_beside_a_double_compares_as_a_double(backend):
    """2**53 + 1 beside the double 2**53 is read as that double (equal) on its own; an event
    whose x * y leaves int64 in the same batch must not change that."""
    rows = [{"x": 2**53 + 1, "y": 1, "d": 2.0**53, "e": None},
            {"x": 2**62, "y": 4, "d": 1.0, "e": None}]
    got = edge_paths("x * y = d", rows, backend)
    assert got == {"push": [(0,)], "records": [(0,)], "table": [(0,)]}


# ---- Spark columns: the same cases as boolean Spark columns (cercore.spark.base.columns) ---------
SPARK_DDL = "id long, t long, x long, y long, d double, s string"


def spark_truths(spark, rows: list[dict], texts: list[str]) -> dict[str, set[int]]:
    """Per predicate (CEQL form, over one event), the ids of the rows its Spark column holds
    for; the column is never NULL (a null or undefined leaf is false, not unknown)."""
    from cercore.ceql.parser import parse_predicate
    from cercore.spark.base.columns import pred_column

    types = SCHEMA.attribute_types()

    def term(ref):
        from pyspark.sql import functions as F
        return F.col(ref.name), types[ref.name]

    df = spark.createDataFrame([tuple(r[c] for c in ("id", "t", "x", "y", "d", "s"))
                                for r in rows], SPARK_DDL)
    cols = [pred_column(parse_predicate(t), term).alias(f"p{i}") for i, t in enumerate(texts)]
    got: dict[str, set[int]] = {t: set() for t in texts}
    for r in df.select("id", *cols).collect():
        for i, t in enumerate(texts):
            assert r[f"p{i}"] is not None, (t, r["id"])
            if r[f"p{i}"]:
                got[t].add(r["id"])
    return got


@pytest.mark.spark
@pytest.mark.parametrize(("cases", "rows"), [(CASES, EVENTS), (EDGE_CASES, EDGE_EVENTS)],
                         ids=["cases", "int64 edges"])
def test_spark_columns(spark, cases, rows):
    texts = [ceql_form(t) for t, _ in cases]
    assert spark_truths(spark, rows, texts) == {ceql_form(t): want for t, want in cases}


@pytest.mark.spark
def test_spark_columns_on_extreme_doubles(spark):
    extreme = {"y < 1e400 % x": False, "NOT (y < 1e400 % x)": True, "d % 1e400 = d": True,
               "d * 1e308 * 10 > 1e308": True, "(d * 1e400) - 1e400 = 0": False,
               "d / -0.0 < 0": False, "x = d * 0 + 9007199254740992.0": True}
    row = {"id": 0, "t": 0, "x": 2**53 + 1, "y": 1, "d": 1.5, "s": None}
    got = spark_truths(spark, [row], list(extreme))
    assert {t: bool(ids) for t, ids in got.items()} == extreme


@pytest.mark.spark
@pytest.mark.parametrize("text", PAIR_CASES)
def test_spark_columns_between_events(spark, text):
    """A network pairwise predicate (``Predicate.compare``) as the Spark column the semi joins
    and ``estimate_pairwise`` use, over every pair of events."""
    from pyspark.sql import functions as F

    from cercore.spark.base.columns import pred_column

    types = SCHEMA.attribute_types()
    compare = parse_pattern(f"PATTERN SEQ(A, B) WHERE {text} WITHIN 10").predicates[0].compare
    df = spark.createDataFrame([tuple(e[c] for c in ("id", "t", "x", "y", "d", "s"))
                                for e in EVENTS], SPARK_DDL)

    def term(ref):
        return F.col(f"{ref.var.lower()}.{ref.attr}"), types[ref.attr]

    pairs = df.alias("a").crossJoin(df.alias("b")).select(
        "a.id", "b.id", pred_column(compare, term).alias("ok")).collect()
    assert {(r[0], r[1]): r["ok"] for r in pairs} == pair_expectation(text)
