"""PrePP's own query notation, as the paper prints it::

    PATTERN SEQ(C c, B b, AND(A a, D)) WHERE a.id = b.id AND b.v < c.v AND c.price > 10
    WITHIN 30

Operators SEQ / AND / OR nest; a leaf is an event type with an optional alias. Conditions are
joined by AND (or ∧): ``x.attr op y.attr`` over two types is a pairwise predicate,
``x.attr op literal`` a single-type filter. The window is a number in the time unit of the
events' ``t``. The rules are the ``pattern_query`` part of ``cercore/ceql/grammar.lark``
(shared with trend queries: the same patterns, ``V.attr`` references and conditions), read
through the CEQL pipeline (``cercore.ceql.parser.parse_text``). Mistakes raise
:class:`cercore.CEQLSyntaxError` (with a caret) or :class:`cercore.CEQLSemanticError`.
"""

from __future__ import annotations

from lark import Token, v_args

from cercore.ceql import ast as ceql
from cercore.ceql import grammar
from cercore.ceql.parser import parse_text
from cercore.ceql.printer import format_literal, format_name
from cercore.errors import CEQLSemanticError
from cercore.network.errors import NetworkError
from cercore.network.query import Leaf, NetQuery, Node, Op, Predicate
from cercore.predicates import MIRRORED
from cercore.trends.parse import LEADING, ToTrendAst, TrendErrorReport

FORM = "PATTERN SEQ(A a, AND(B b, C)) WHERE a.x = b.x WITHIN 30"
_OPERATORS = ("SEQ", "AND", "OR")


def parse_pattern(text: str, time_attribute: str = "t") -> NetQuery:
    """Parse PrePP notation into a :class:`NetQuery`."""
    query = parse_text(text, "pattern_query", parser=grammar.grammar_parser("pattern_query"),
                       report=_PatternErrorReport, transformer=_ToPattern, what="pattern")
    return _Builder(text, time_attribute).build(*query)


def net_query(query: NetQuery | str, schema=None) -> NetQuery:
    """``query`` as a :class:`NetQuery`: as it is, parsed from PrePP notation
    (``PATTERN ...``), or mapped from CEQL text checked against ``schema`` (a Schema or
    declaration text; see :mod:`cercore.network.from_ceql`)."""
    if isinstance(query, NetQuery):
        return query
    text = query.strip()
    if text[:7].upper() == "PATTERN" or (schema is None and _blank(text)):
        return parse_pattern(text)  # (a blank text: "empty pattern", located)
    if schema is None:
        raise NetworkError("a CEQL query needs --schema (schema= in Python), or write it in "
                           "PrePP notation: PATTERN ...")
    from cercore.network.from_ceql import query_from_ceql
    return query_from_ceql(text, schema)


def _blank(text: str) -> bool:
    """Only whitespace and comments."""
    return LEADING.match(text).end() == len(text)


class _PatternErrorReport(TrendErrorReport):
    """Syntax errors in PATTERN text: the trend report (expected tokens in source form),
    with the notation's form as the hint."""

    def empty_hint(self) -> str:
        return f"form: {FORM}"

    def token_hint(self):
        hint = super().token_hint()
        return hint if hint and "V.attr" in hint else f"form: {FORM}"


@v_args(meta=True)
class _ToPattern(ToTrendAst):
    """The pattern and condition rules -> (pattern, condition, window): patterns as network
    operators, conditions as trend conditions (``cercore.trends.ast``)."""

    def pattern_query(self, meta, ch):
        pattern = next(c for c in ch[1:] if isinstance(c, (Op, tuple)) and not (
            isinstance(c, tuple) and c and c[0] == "@condition"))
        condition = next((c[1] for c in ch if isinstance(c, tuple) and c[:1] == ("@condition",)),
                         None)
        window = ch[-1]
        return pattern, condition, window

    def tp_atom(self, meta, ch):
        names = [t for t in ch if isinstance(t, Token)]
        return (names[0], names[1] if len(names) > 1 else None)

    def tp_call(self, meta, ch):
        op, *parts = ch
        kids = [c for c in parts if not isinstance(c, Token)]
        if op.value.upper() not in _OPERATORS:
            raise self._error(f"unexpected operator '{op.value}'", op,
                              hint="PrePP patterns nest SEQ(...), AND(...) and OR(...) over "
                                   "event types")
        if len(kids) < 2:
            raise self._error(f"unexpected ')': {op.value.upper()}(...) needs two or more "
                              "operands", op, hint=f"form: {FORM}")
        return Op(op.value.upper(), tuple(kids))

    def tp_plus(self, meta, ch):
        raise self._error("PrePP patterns have no iteration", meta, hint=f"form: {FORM}")

    def tp_unsupported(self, meta, ch):
        op = next(c for c in ch if isinstance(c, Token) and c.type in ("NOT", "STAR", "OR"))
        raise self._error(f"unexpected {op.value!r} in a PrePP pattern", op,
                          hint=f"form: {FORM}")


class _Builder:
    """(pattern, condition, window) -> NetQuery: aliases resolved, conditions split into
    pairwise predicates and per-type filters."""

    def __init__(self, text: str, time_attribute: str) -> None:
        self.text = text
        self.time_attribute = time_attribute
        self.alias: dict[str, str] = {}
        self.types: list[str] = []

    def error(self, message: str, where) -> CEQLSemanticError:
        return CEQLSemanticError(message, line=getattr(where, "line", None),
                                 column=getattr(where, "column", None), text=self.text)

    def build(self, pattern, condition, window_tok: Token) -> NetQuery:
        root = self.node(pattern)
        preds: list[Predicate] = []
        filters: dict[str, list[str]] = {}
        for c in self.conjuncts(condition):
            left, right = c.left, c.right
            if isinstance(left, ceql.Literal) and isinstance(right, ceql.EventAttr):
                left, right, op = right, left, MIRRORED[c.op]
            else:
                op = c.op
            if not isinstance(left, ceql.EventAttr) or left.next or not isinstance(
                    right, ceql.EventAttr | ceql.Literal) or getattr(right, "next", False) \
                    or getattr(right, "symbol", False):
                raise self.error("PrePP conditions compare V.attr with V.attr or a literal",
                                 c)
            lt, la = self.ref(left)
            if isinstance(right, ceql.EventAttr):
                rt, ra = self.ref(right)
                if lt == rt:
                    filters.setdefault(lt, []).append(
                        f"{format_name(la)} {op} {format_name(ra)}")
                else:
                    preds.append(Predicate(lt, la, op, rt, ra))
            else:
                filters.setdefault(lt, []).append(
                    f"{format_name(la)} {op} {format_literal(right.value)}")
        window = float(window_tok.value)
        try:
            return NetQuery(root, window, tuple(preds),
                            {t: " AND ".join(f"({f})" if len(fs) > 1 else f for f in fs)
                             for t, fs in filters.items()}, self.time_attribute)
        except NetworkError as exc:
            raise CEQLSemanticError(str(exc), text=self.text) from None

    def conjuncts(self, condition) -> list:
        out, stack = [], [condition] if condition is not None else []
        while stack:
            c = stack.pop()
            if isinstance(c, ceql.PredAnd):
                stack += [c.right, c.left]
            elif isinstance(c, ceql.Compare):
                out.append(c)
            else:
                raise self.error("PrePP conditions are comparisons joined by AND", c)
        return out

    def node(self, t) -> Node:
        if isinstance(t, Op):
            return Op(t.kind, tuple(self.node(k) for k in t.children))
        name, alias = t
        if name in self.types:
            raise self.error(f"event type {name} is used twice; PrePP queries reference each "
                             "type at most once", name)
        self.types.append(str(name))
        for key, tok in ((str(name), name), (str(alias) if alias is not None else None, alias)):
            if key is None:
                continue
            if key in self.alias and self.alias[key] != str(name):
                raise self.error(f"name {key} is used for two types", tok)
            self.alias[key] = str(name)
        return Leaf(str(name))

    def ref(self, r: ceql.EventAttr) -> tuple[str, str]:
        if r.var not in self.alias:
            raise self.error(f"unknown event or alias {r.var}; known: "
                             f"{', '.join(sorted(self.alias))}", r)
        return self.alias[r.var], r.attr
