"""Hypothesis strategies for random CEQL queries (as ASTs), schemas and event streams.

Everything generated is meant to be inside the feature set the engine evaluates (no selection
strategies beyond ALL/ANY, projection ``*``, no ``:``/``:+``/``NOT``, no CONSUME/LIMIT) and to be
well-typed for the schema, so the engine must accept every generated query.

Value domains are tiny so that predicates, partitions and windows go both ways.
"""

from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

from cercore.ceql import ast
from cercore.schema import EventType, Schema, Stream
from cercore.types import AttrType

INT, DBL, STR, BOOL = AttrType.INT, AttrType.DOUBLE, AttrType.STRING, AttrType.BOOL

# Stream S carries A, B, C; stream T carries C (shared) and D. ``k`` is the usual partition key;
# C has ``g`` instead (so PARTITION BY [k, g] keys every type), ``ts`` is non-decreasing.
TYPES = {
    "A": [("v", INT), ("w", DBL), ("s", STR), ("b", BOOL), ("k", INT), ("ts", INT)],
    "B": [("v", INT), ("w", DBL), ("s", STR), ("k", INT), ("ts", INT)],
    "C": [("v", INT), ("s", STR), ("g", INT), ("ts", INT)],
    "D": [("v", INT), ("w", DBL), ("b", BOOL), ("k", INT), ("g", INT), ("ts", INT)],
}
STREAMS = {"S": ("A", "B", "C"), "T": ("C", "D")}


def make_schema(time_attribute: str | None, time_unit: str = "s") -> Schema:
    schema = Schema(time_attribute=time_attribute, time_unit=time_unit)
    for name, attrs in TYPES.items():
        schema.event_types[name] = EventType(name, tuple(attrs), id=len(schema.event_types))
    for name, types in STREAMS.items():
        schema.streams[name] = Stream(name, types)
    schema.validate()
    return schema


SCHEMAS = {"untimed": make_schema(None), "seconds": make_schema("ts", "s"),
           "millis": make_schema("ts", "ms")}


def schemas() -> st.SearchStrategy[Schema]:
    return st.sampled_from(list(SCHEMAS.values()))


# ---------------------------------------------------------------------------------------
# Event streams
# ---------------------------------------------------------------------------------------
DOMAINS = {
    "v": st.integers(-3, 3),
    "w": st.sampled_from([-2.5, -1.5, 0.0, 0.5, 1.0, 2.0, 3.5]),
    "s": st.sampled_from(["", "a", "b", "ab", "ba", "abc"]),
    "b": st.booleans(),
    "k": st.integers(0, 1),
    "g": st.integers(0, 2),
}


@st.composite
def streams(draw, schema: Schema, max_len: int = 8,
            favour: set[str] | None = None, tagged: bool = False) -> list[tuple]:
    """Events of every declared type (mostly of the types in ``favour`` when given); small
    domains, occasional None, non-decreasing ts. ``tagged``: some events carry the stream they
    come from, ``(type, attrs, stream)``."""
    n = draw(st.sampled_from([max_len] * 4 + list(range(max_len - 1, 0, -1)) + [0]))
    types = sorted(schema.event_types)
    if favour:  # first: hypothesis favours the first choices
        types = sorted(favour) * 3 + types
    ts = draw(st.integers(0, 3))
    out = []
    for _ in range(n):
        t = draw(st.sampled_from(types))
        ts += draw(st.sampled_from([0, 1, 1, 2]))
        attrs = {}
        for a, _ in schema.event_types[t].attributes:
            if a == "ts":
                attrs[a] = ts
            elif draw(st.sampled_from(range(10))) == 9:  # shrinks towards a value
                attrs[a] = None
            else:
                attrs[a] = draw(DOMAINS[a])
        holders = [name for name, st_ in schema.streams.items() if t in st_.event_types]
        if tagged and draw(st.booleans()):
            out.append((t, attrs, draw(st.sampled_from(holders))))
        else:
            out.append((t, attrs))
    return out


# ---------------------------------------------------------------------------------------
# Predicates
# ---------------------------------------------------------------------------------------
INT_LITS = st.integers(0, 4)
DBL_LITS = st.sampled_from([0.5, 1.0, 2.5, 0.0])
STR_LITS = st.sampled_from(["", "a", "b", "ab", "c"])
PATTERNS = st.sampled_from(["a", "^a", "b$", "a.", "^$", "a|c", "^(ab)+$", "[bc]", "^a.*c$"])
COMPARE_OPS = st.sampled_from(["<", "<=", ">", ">=", "==", "!="])


@st.composite
def _num_literal(draw) -> ast.Expr:
    lit = ast.Literal(draw(st.one_of(INT_LITS, DBL_LITS)))
    if lit.value and draw(st.sampled_from(range(5))) == 0:
        return ast.Neg(lit)
    return lit


@st.composite
def _num_expr(draw, numeric_attrs: list[str], depth: int, need_attr: bool = False) -> ast.Expr:
    """A numeric expression; with ``need_attr`` it mentions at least one attribute."""
    kind = draw(st.sampled_from(range(10))) if depth > 0 else 0
    if kind <= 5:  # a leaf
        if need_attr or draw(st.booleans()):
            return ast.AttrRef(draw(st.sampled_from(numeric_attrs)))
        return draw(_num_literal())
    if kind <= 8:
        op = draw(st.sampled_from(["+", "-", "*", "/", "%"]))
        left = draw(_num_expr(numeric_attrs, depth - 1, need_attr))
        right = draw(_num_expr(numeric_attrs, depth - 1))
        return ast.BinOp(op, left, right)
    return ast.Neg(draw(_num_expr(numeric_attrs, depth - 1, need_attr)))


@st.composite
def _atomic_pred(draw, attrs: dict[str, AttrType]) -> ast.Pred:
    numeric = sorted(a for a, t in attrs.items() if t.is_numeric)
    strings = sorted(a for a, t in attrs.items() if t is STR)
    bools = sorted(a for a, t in attrs.items() if t is BOOL)
    kinds = ["cmp", "cmp", "cmp", "arith", "arith", "in", "range"] \
        + (["str", "like", "strin"] if strings else []) + (["bool"] if bools else []) + ["const"]
    kind = draw(st.sampled_from(kinds))
    if kind == "cmp":
        depth = draw(st.sampled_from([0, 1, 1, 2]))
        left = draw(_num_expr(numeric, depth, need_attr=True))
        right = draw(_num_expr(numeric, depth // 2))
        if draw(st.booleans()):
            left, right = right, left
        return ast.Compare(draw(COMPARE_OPS), left, right)
    if kind == "in":
        plain = st.one_of(INT_LITS, DBL_LITS, st.sampled_from([-1, -0.5])).map(ast.Literal)
        bound = st.one_of(_num_literal(), _num_literal(), st.sampled_from(numeric).map(ast.AttrRef))
        items = draw(st.lists(st.one_of(plain, st.builds(ast.Range, bound, bound)),
                              min_size=1, max_size=3))
        return ast.InSet(draw(_num_expr(numeric, 1, need_attr=True)), tuple(items),
                         negated=draw(st.booleans()))
    if kind == "range":
        bound = st.one_of(_num_literal(), _num_literal(), st.sampled_from(numeric).map(ast.AttrRef))
        return ast.InRange(draw(_num_expr(numeric, 1, need_attr=True)), draw(bound), draw(bound),
                           negated=draw(st.booleans()))
    if kind == "str":
        left, right = ast.AttrRef(draw(st.sampled_from(strings))), ast.Literal(draw(STR_LITS))
        if draw(st.booleans()):
            left, right = right, left
        return ast.Compare(draw(COMPARE_OPS), left, right)
    if kind == "like":
        return ast.Like(ast.AttrRef(draw(st.sampled_from(strings))), draw(PATTERNS))
    if kind == "strin":
        items = draw(st.lists(STR_LITS.map(ast.Literal), min_size=1, max_size=3))
        return ast.InSet(ast.AttrRef(draw(st.sampled_from(strings))), tuple(items),
                         negated=draw(st.booleans()))
    if kind == "bool":
        left = ast.AttrRef(draw(st.sampled_from(bools)))
        right = ast.Literal(draw(st.booleans()))
        if draw(st.booleans()):
            left, right = right, left
        return ast.Compare(draw(st.sampled_from(["==", "!="])), left, right)
    return ast.PredConst(draw(st.booleans()))


@st.composite
def predicates(draw, attrs: dict[str, AttrType], depth: int = 2) -> ast.Pred:
    """A predicate over attributes ``attrs`` (name -> type) of one event."""
    kind = draw(st.sampled_from(range(12))) if depth > 0 else 0
    if kind <= 6:
        return draw(_atomic_pred(attrs))
    if kind <= 9:
        cls = ast.PredAnd if kind == 7 else ast.PredOr
        return cls(draw(predicates(attrs, depth - 1)), draw(predicates(attrs, depth - 1)))
    return ast.PredNot(draw(predicates(attrs, depth - 1)))


# ---------------------------------------------------------------------------------------
# Formulas
# ---------------------------------------------------------------------------------------
VARIABLES = ["x", "y", "z"]
FORMULA_KINDS = ["seq", "seq", "seq", "iter", "iter", "or", "or", "as", "as", "as-type", "filter",
                 "filter", "filter", "atom", "atom"]  # hypothesis favours the first ones
# the whole of CEQL's formula language: adds ':', ':+' and NOT(...)
FULL_FORMULA_KINDS = ["seq", "contig", "seq", "iter", "citer", "not", "or", "as", "contig",
                      "as-type", "filter", "not", "iter", "filter", "atom", "atom", "or",
                      "absent", "repeat"]


def bindable(f: ast.Formula) -> dict[str, set[str]]:
    """Variable (incl. event type names) -> event types whose positions it can hold in ``f``."""
    if isinstance(f, ast.EventAtom):  # S>R binds R and the stream-qualified S>R
        out = {f.event_type: {f.event_type}}
        if f.stream is not None:
            out[f"{f.stream}>{f.event_type}"] = {f.event_type}
        return out
    if isinstance(f, ast.Not | ast.Absent):  # NOT and ABSENT bind nothing
        return {}
    out: dict[str, set[str]] = {}
    children = [f.formula] if hasattr(f, "formula") else [f.left, f.right]
    for child in children:
        for var, types in bindable(child).items():
            out.setdefault(var, set()).update(types)
    if isinstance(f, ast.As):
        inner = set().union(*bindable(f.formula).values())
        if inner:  # AS around only NOT(...) binds nothing
            out.setdefault(f.var, set()).update(inner)
    return out


def absent_read(f: ast.Formula) -> set[str]:
    """The variables the ABSENT(...) elements of ``f`` read (incl. names shared with present
    elements, as an event type read on both sides)."""
    if isinstance(f, ast.Absent):
        return set(bindable(f.formula))
    children = [f.formula] if hasattr(f, "formula") else \
        [f.left, f.right] if hasattr(f, "left") else []
    return set().union(*(absent_read(c) for c in children))


def _attrs_of(schema: Schema, types: set[str]) -> dict[str, AttrType]:
    return {a: t for name in sorted(types) for a, t in schema.event_types[name].attributes}


@st.composite
def _filter_expr(draw, schema: Schema, binds: dict[str, set[str]], n: int) -> ast.FilterExpr:
    if n <= 1:
        var = draw(st.sampled_from(sorted(binds)))
        return ast.AtomicFilter(var, draw(predicates(_attrs_of(schema, binds[var]))))
    left = draw(st.integers(1, n - 1))
    cls = draw(st.sampled_from([ast.FilterAnd, ast.FilterOr]))
    return cls(draw(_filter_expr(schema, binds, left)), draw(_filter_expr(schema, binds, n - left)))


def _qualifiers(schema: Schema, from_streams: tuple[str, ...]) -> dict[str, list[str]]:
    """Event type -> the streams in scope that may qualify it (``S>R``)."""
    scope = from_streams or tuple(schema.streams)
    return {t: [s for s in scope if t in schema.streams[s].event_types]
            for t in schema.event_types}


@st.composite
def formulas(draw, schema: Schema, max_depth: int = 3,
             from_streams: tuple[str, ...] = (), full: bool = False) -> ast.Formula:
    """A CEL formula over the event types visible through ``from_streams`` (all if empty);
    ``full`` adds contiguity and NOT."""
    kinds = FULL_FORMULA_KINDS if full else FORMULA_KINDS
    if from_streams:
        visible = sorted({t for s in from_streams for t in schema.streams[s].event_types})
    else:
        visible = sorted(schema.event_types)
    qualifiers = _qualifiers(schema, from_streams)

    def atom():
        t = draw(st.sampled_from(visible))
        if qualifiers[t] and draw(st.sampled_from(range(4))) == 0:
            return ast.EventAtom(t, draw(st.sampled_from(qualifiers[t])))
        return ast.EventAtom(t)

    def one_event() -> ast.Formula:
        """What NOT(...) and ABSENT(...) take: an atom, an OR of two, a filtered atom."""
        body = atom()
        shape = draw(st.sampled_from(["atom", "or", "filter"]))
        if shape == "or":
            body = ast.Or(body, atom())
        elif shape == "filter" and any(
                t.is_numeric for t in _attrs_of(schema, {body.event_type}).values()):
            body = ast.Filter(body, draw(_filter_expr(schema, bindable(body), 1)))
        return body

    def gen(depth: int) -> ast.Formula:
        kind = draw(st.sampled_from(kinds)) if depth > 0 else "atom"
        if kind == "atom":
            return atom()
        if kind == "not":
            return ast.Not(one_event())
        if kind == "absent":
            # left ; ABSENT(psi) ; right, sometimes with psi named and filtered from outside
            # (the filter says which events count)
            body = one_event()
            binds = bindable(body)
            var = None
            if draw(st.booleans()):
                var = draw(st.sampled_from(VARIABLES))
                body = ast.As(body, var)
                binds = {var: set().union(*binds.values())}
            chain = ast.Seq(ast.Seq(gen(depth - 1), ast.Absent(body)), gen(depth - 1))
            if var is not None and draw(st.booleans()) and any(
                    t.is_numeric for t in _attrs_of(schema, binds[var]).values()):
                chain = ast.Filter(chain, draw(_filter_expr(schema, binds, 1)))
            return chain
        if kind == "repeat":  # A{n}, A{n,m}, A{n,}, and the contiguous forms
            lo = draw(st.integers(1, 3))
            hi = draw(st.sampled_from([lo, lo + 1, None]))
            return ast.Repeat(gen(depth - 1), lo, hi, draw(st.booleans()))
        if kind == "contig":
            return ast.Contig(gen(depth - 1), gen(depth - 1))
        if kind == "citer":
            return ast.Iter(gen(depth - 1), contiguous=True)
        if kind in ("as", "as-type"):
            var = draw(st.sampled_from(VARIABLES + (visible if kind == "as-type" else [])))
            return ast.As(gen(depth - 1), var)
        if kind == "filter":
            sub = gen(depth - 1)
            if not bindable(sub):  # e.g. NOT(...): nothing to filter
                return sub
            return ast.Filter(sub, draw(_filter_expr(schema, bindable(sub),
                                                     draw(st.sampled_from([1, 1, 2, 3])))))
        if kind == "or":
            return ast.Or(gen(depth - 1), gen(depth - 1))
        if kind == "seq":
            return ast.Seq(gen(depth - 1), gen(depth - 1))
        return ast.Iter(gen(depth - 1))

    return gen(max_depth)


# ---------------------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------------------
PARTITIONS = [(("k",),), (("g",),), (("k", "g"),), (("g", "k"),), (("k",), ("g",)),
              (("k",), ("b",)), (("s",),), (("k", "s"),), (("b",), ("k", "g"))]


@st.composite
def windows(draw, schema: Schema, allow_none: bool = True) -> ast.Window | None:
    kinds = (["none"] if allow_none else []) + ["events", "attr"]
    kinds += ["time"] if schema.time_attribute else []
    kind = draw(st.sampled_from(kinds))
    if kind == "none":
        return None
    if kind == "events":
        return ast.EventsWindow(draw(st.integers(0, 4)))
    if kind == "attr":
        return ast.AttrWindow(draw(st.sampled_from([0, 1, 2, 3, 4, 1.5])), "ts")
    if schema.time_unit == "s":
        return ast.TimeWindow(draw(st.sampled_from([0, 1, 2, 3, 1.5])))
    return ast.TimeWindow(draw(st.sampled_from([0.001, 0.002, 0.003, 0.0015, 0])))


@st.composite
def queries(draw, schema: Schema, *, partitioned: bool | None = None,
            windowed: bool | None = None, max_depth: int = 3, full: bool = False,
            strategies: tuple[str | None, ...] | None = None) -> ast.Query:
    """A supported query; ``partitioned``/``windowed`` force PARTITION BY / WITHIN on or off
    (None: either); ``full`` also draws ':', ':+', NOT, projections, STRICT, CONSUME BY and
    LIMIT; ``strategies`` restricts the selection strategies drawn."""
    from_streams = draw(st.sampled_from([(), (), ("S",), ("T",), ("S", "T"), ("T", "S")]))
    formula = draw(formulas(schema, max_depth, from_streams, full))
    declared = {a for s in (from_streams or schema.streams) for t in schema.streams[s].event_types
                for a, _ in schema.event_types[t].attributes}
    partition_by: tuple = ()
    if partitioned or (partitioned is None and draw(st.booleans())):
        visible = [schema.event_types[t] for s in (from_streams or schema.streams)
                   for t in schema.streams[s].event_types]
        # inside one bracket each event type has exactly one of the attributes (DESIGN.md
        # "PARTITION BY"): a bracket that a visible type has several of is left out
        options = [p for p in PARTITIONS if all(a in declared for g in p for a in g)
                   and not any(sum(et.has(a) for a in g) > 1 for g in p for et in visible)]
        partition_by = draw(st.sampled_from(options))
    within = None
    if windowed or (windowed is None and draw(st.booleans())):
        within = draw(windows(schema, allow_none=not windowed))
    strategy = draw(st.sampled_from(strategies or [None, None, None, "ALL", "ANY"]
                                    + (["STRICT", "NEXT", "LAST", "MAX"] * 2 if full else [])))
    if not full:
        return ast.Query(formula, strategy=strategy, streams=from_streams,
                         partition_by=partition_by, within=within)
    names = sorted(bindable(formula))
    projection: str | tuple = draw(st.sampled_from(["*", "*", "NONE", "list"] if names
                                                   else ["*", "NONE"]))
    if projection == "list":
        chosen = draw(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True))
        binds = bindable(formula)
        items = []
        for v in chosen:  # sometimes only some attributes: SELECT x[v, s]
            known = sorted({a for t in binds[v] for a, _ in schema.event_types[t].attributes})
            attrs = draw(st.one_of(st.none(), st.lists(st.sampled_from(known), min_size=1,
                                                        max_size=2, unique=True).map(tuple)))
            items.append(ast.ProjectionItem(v, attrs))
        projection = tuple(items)
    consume = draw(st.sampled_from([None, None, "NONE", "ANY", "PARTITION"]))
    limit = draw(st.sampled_from([None, None, None, 0, 1, 2]))
    return ast.Query(formula, strategy=strategy, projection=projection, streams=from_streams,
                     partition_by=partition_by, within=within, consume=consume, limit=limit)


@st.composite
def predicate_queries(draw, schema: Schema) -> ast.Query:
    """``(R1 OR R2 ...) AS x FILTER x[P]``: exercises predicate semantics on every event of a
    stream (including types that lack an attribute P mentions)."""
    types = draw(st.lists(st.sampled_from(sorted(schema.event_types)), min_size=1, max_size=3,
                          unique=True))
    f: ast.Formula = ast.EventAtom(types[0])
    for t in types[1:]:
        f = ast.Or(f, ast.EventAtom(t))
    pred = draw(predicates(_attrs_of(schema, set(types)), depth=draw(st.sampled_from([0, 1, 2]))))
    return ast.Query(ast.Filter(ast.As(f, "x"), ast.AtomicFilter("x", pred)))


# ---------------------------------------------------------------------------------------
# Predicates between events (b.price > s.price, l.v < NEXT(l).v)
# ---------------------------------------------------------------------------------------
@st.composite
def event_predicates(draw, schema: Schema, formula: ast.Formula, n: int) -> list:
    """Up to ``n`` comparisons between attributes of bound variables (same kind on both
    sides), sometimes with arithmetic, a literal or NEXT(x). None names a variable an
    ABSENT(...) reads: such a predicate also says which absent events count, which the engine
    supports only as equalities tying every event to one key (tests/runtime/test_absence.py)."""
    read = absent_read(formula)
    binds = {x: types for x, types in bindable(formula).items() if x not in read}
    out: list = []
    for _ in range(n if binds else 0):
        x, y = draw(st.sampled_from(sorted(binds))), draw(st.sampled_from(sorted(binds)))
        ax, ay = _attrs_of(schema, binds[x]), _attrs_of(schema, binds[y])
        kind = {AttrType.INT: "n", AttrType.DOUBLE: "n", AttrType.STRING: "s",
                AttrType.BOOL: "b"}
        pairs = [(a, b) for a in sorted(ax) for b in sorted(ay) if kind[ax[a]] == kind[ay[b]]]
        if not pairs:
            continue
        a, b = draw(st.sampled_from(pairs))
        left: ast.Expr = ast.EventAttr(x, a)
        right: ast.Expr = ast.EventAttr(y, b, draw(st.booleans()) and x == y)
        numeric = kind[ax[a]] == "n"
        if numeric and draw(st.booleans()):
            # the kernel computes + - * between two terms or numbers itself: small numbers,
            # doubles (double arithmetic) and huge ones (int64 overflow: Python decides)
            number = st.one_of(st.integers(-2, 2), st.sampled_from([0.5, -1.5, 2**62, -2**63]))
            ops = st.sampled_from(["+", "-", "*", "+", "-", "*", "/", "%"])
            side = draw(st.sampled_from(["right", "right", "left", "both", "nested"]))
            other = ast.EventAttr(x, a) if side in ("both", "nested") \
                else ast.Literal(draw(number))
            if side == "left":
                left = ast.BinOp(draw(ops), ast.Literal(draw(number)), left)
            else:
                right = ast.BinOp(draw(ops), right, other)
            if side == "nested":  # (y.b - x.a) / x.a > 0.01, -(...)
                right = ast.BinOp(draw(ops), right, ast.Literal(draw(number)))
                if draw(st.booleans()):
                    right = ast.Neg(right)
        ops = ["<", "<=", ">", ">=", "==", "!="] if kind[ax[a]] in "ns" else ["==", "!="]
        out.append(ast.EventPredicate(ast.Compare(draw(st.sampled_from(ops)), left, right)))
    return out


@st.composite
def times_moved(draw, events: list) -> list:
    """``events``, or (one time in four) with one event's ``ts`` moved back or ahead, or
    missing: a stream out of time order for what cuts a table in time."""
    events = list(events)
    if events and draw(st.integers(0, 3)) == 0:
        i = draw(st.integers(0, len(events) - 1))
        typ, attrs = events[i]
        if "ts" in attrs:
            events[i] = (typ, {**attrs, "ts": draw(st.sampled_from([None, 0, attrs["ts"] - 2,
                                                                     attrs["ts"] + 6]))})
    return events


# patterns that bind events the way predicates between events are written over them: pairs,
# chains, iterations (every pair, NEXT), contiguity, negation, and events that different runs
# bind to different variables (the enumerator checks those paths whole at the bottom)
SHAPES = ("A AS x ; B AS y", "A AS x ; B+ AS y", "A+ AS x", "A:+ AS x", "A AS x ; B AS y ; A AS z",
          "(A OR B)+ AS x ; C AS y", "A AS x : B AS y", "A AS x ; NOT(C) ; B AS y",
          "(A AS x ; B AS y)+", "A+ AS x ; A+ AS y", "(A OR B) AS x ; (A OR B) AS y",
          "(A AS x OR B AS x) ; (A AS y OR C AS y)", "A AS x ; B{2} AS y", "A AS x ; B+ AS y ; C")


def shaped_formulas() -> st.SearchStrategy[ast.Formula]:
    """One of SHAPES (over stream S's types A, B, C), parsed."""
    from cercore.ceql import parser

    return st.sampled_from(SHAPES).map(
        lambda text: parser.parse_query(f"SELECT * FROM S WHERE {text}").formula)


@st.composite
def queries_between_events(draw, schema: Schema, shaped: bool = False,
                           **options) -> ast.Query:
    """A full query whose outermost FILTER also holds predicates between events (what they
    need: SELECT *, a window under NEXT/LAST/MAX); CONSUME BY as drawn: it consumes after an
    event that completes a complex event satisfying them. ``shaped``: the pattern is one of
    SHAPES (any stream), the rest of the query drawn as usual."""
    import dataclasses

    q = draw(queries(schema, full=True, **options))
    if shaped:
        q = dataclasses.replace(q, formula=draw(shaped_formulas()), streams=())
        # every type is visible now: a bracket that one of them has several attributes of
        # is an error (DESIGN.md "PARTITION BY"), so that partitioning is dropped
        if any(sum(et.has(a) for a in g) > 1 for g in q.partition_by
               for et in schema.event_types.values()):
            q = dataclasses.replace(q, partition_by=())
    preds = draw(event_predicates(schema, q.formula, draw(st.integers(1, 2))))
    formula = q.formula
    if preds:  # (none when the pattern binds no variable, e.g. NOT(A) alone)
        fe: ast.FilterExpr = preds[0]
        for p in preds[1:]:
            fe = ast.FilterAnd(fe, p)
        formula = ast.Filter(formula, fe)
    strategy = q.strategy
    if strategy in ("NEXT", "LAST", "MAX") and q.within is None:
        strategy = None
    return dataclasses.replace(q, formula=formula, projection="*", strategy=strategy)


# ---------------------------------------------------------------------------------------
# Absence with a span: a deadline at the end, a look back at the start
# ---------------------------------------------------------------------------------------
PLACES = ["end", "end", "start", "both"]


@st.composite
def deadline_queries(draw, schema, partitioned: bool | None = None,
                     windowed: bool | None = None) -> ast.Query:
    """``φ ; ABSENT(ψ) WITHIN T`` with φ a random full-CEQL formula (strategies, windows,
    PARTITION BY, FROM; no CONSUME BY or LIMIT, which a deadline refuses), ψ one event (an
    atom or an OR of two, maybe named and filtered through FILTER), T in 0..4 time units;
    also or instead a leading ``ABSENT(ψ) WITHIN T ; φ``."""
    q = draw(queries(schema, partitioned=partitioned, windowed=windowed, full=True,
                     max_depth=2))
    ordered = q.within.attribute if isinstance(q.within, ast.AttrWindow) \
        else schema.time_attribute
    visible = sorted({t for s in (q.streams or schema.streams)
                      for t in schema.streams[s].event_types})
    where = draw(st.sampled_from(PLACES))
    if where != "end" and isinstance(q.within, ast.EventsWindow):  # refused with a lead
        q = dataclasses.replace(q, within=ast.AttrWindow(q.within.count, "ts"))
        ordered = "ts"

    def absent() -> tuple[ast.Absent, str | None, dict]:
        psi: ast.Formula = ast.EventAtom(draw(st.sampled_from(visible)))
        if draw(st.booleans()):
            psi = ast.Or(psi, ast.EventAtom(draw(st.sampled_from(visible))))
        binds = bindable(psi)
        var = None
        if draw(st.booleans()):
            var = draw(st.sampled_from(VARIABLES))
            psi = ast.As(psi, var)
            binds = {var: set().union(*binds.values())}
        span = draw(st.sampled_from([0, 1, 2, 4]))
        return ast.Absent(psi, ast.AttrWindow(span, ordered)), var, binds

    formula: ast.Formula = q.formula
    named = []
    if where in ("start", "both"):
        lead, var, binds = absent()
        formula = ast.Seq(lead, formula)
        named += [binds] if var else []
    if where in ("end", "both"):
        trail, var, binds = absent()
        formula = ast.Seq(formula, trail)
        named += [binds] if var else []
    for binds in named:
        var = next(iter(binds))
        if draw(st.booleans()) and any(
                t.is_numeric for t in _attrs_of(schema, binds[var]).values()):
            formula = ast.Filter(formula, draw(_filter_expr(schema, binds, 1)))
    return ast.Query(formula, strategy=q.strategy, projection=q.projection, streams=q.streams,
                     partition_by=q.partition_by, within=q.within)
