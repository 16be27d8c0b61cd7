"""Trend aggregation query text -> :mod:`cercore.trends.ast`.

The rules are the ``trend_query`` part of ``cercore/ceql/grammar.lark``, read by their own
LALR parser (so the CEQL parser is untouched) through the CEQL pipeline
(``cercore.ceql.parser.parse_text``): :class:`~cercore.errors.CEQLSyntaxError` with line,
column, caret snippet and the expected tokens, then the CEQL transformer extended with the
trend rules.
"""

from __future__ import annotations

import re

from lark import Lark, Token, v_args

from cercore.ceql import ast as ceql
from cercore.ceql import diagnostics, grammar, transform
from cercore.ceql.parser import parse_text
from cercore.trends import ast

__all__ = ["LEADING", "ToTrendAst", "TrendErrorReport", "is_trend_query", "parse_trend_query"]


def trend_parser() -> Lark:
    """The LALR parser for the grammar's ``trend_query`` start symbol (built once)."""
    return grammar.grammar_parser("trend_query")


LEADING = re.compile(r"(?:\s+|--[^\n]*|/\*.*?\*/)*", re.S)  # blanks and comments
_AGG_SELECT = re.compile(
    r"select\s+(?:(?:[A-Za-z_]\w*|`(?:[^`]|``)+`)\s*,\s*)*(?:count|sum|min|max|avg)\s*\(", re.I)


def is_trend_query(text: str) -> bool:
    """True when ``text`` is a trend aggregation query: it starts with RETURN, or with
    SELECT and aggregates (``SELECT COUNT(*) ...``, ``SELECT g, SUM(T.x) ...``)."""
    rest = text[LEADING.match(text).end():]
    return bool(re.match(r"return\b", rest, re.I) or _AGG_SELECT.match(rest))


def parse_trend_query(text: str) -> ast.TrendQuery:
    """Parse one trend aggregation query; raises CEQLSyntaxError on bad text."""
    return parse_text(text, "trend_query", parser=trend_parser(), report=TrendErrorReport,
                      transformer=ToTrendAst)


_SOURCE = {"DOT": ".", "TREND_SEMANTICS": "skip-till-any-match", "GROUP_BY": "GROUP BY",
           "RETURN": "RETURN", "PATTERN": "PATTERN", "SEMANTICS": "SEMANTICS",
           "WINDOW": "WINDOW", "SLIDE": "SLIDE", "COUNT": "COUNT", "SUM": "SUM", "MIN": "MIN",
           "AVG": "AVG"}


class TrendErrorReport(diagnostics.ErrorReport):
    """The CEQL error report, with the trend parser's expected tokens and trend hints."""

    def __init__(self, e, ip, tokens, text, start):
        super().__init__(e, ip, tokens, text, start)
        self.expected = sorted({_SOURCE.get(t) or diagnostics.source_form(t, self.end_text)
                                for t in self.acc})
        if "TREND_SEMANTICS" in self.acc:
            self.expected = sorted(set(self.expected) | {"skip-till-next-match", "contiguous"})

    def _accepts(self, ip, start):
        try:
            fresh = grammar.grammar_parser(start).parse_interactive("", start=start)
            for t in self.before:
                fresh.feed_token(t)
            return set(fresh.accepts())
        except Exception:  # pragma: no cover - defensive
            return set(ip.accepts())

    def empty_hint(self) -> str:
        return ("a trend query looks like: RETURN COUNT(*), SUM(B.v) PATTERN SEQ(A, B+) "
                "WITHIN 10 SLIDE 5")

    def token_hint(self):
        t = self.tok.type
        if t in ("COLON", "COLONPLUS"):
            return "write attributes as V.attr, e.g. L.cpu"
        if t == "LPAR" and self.prev_type() in ("AND", "OR", "NOT", "WHERE", "FILTER"):
            return None
        if "PATTERN" in self.acc:
            return "a COGRA query reads RETURN <aggregates> PATTERN <pattern> ..."
        if "SEMANTICS" in self.acc and t == "NAME":
            return ("the clauses after the pattern are SEMANTICS, WHERE (FILTER), "
                    "GROUP-BY and WITHIN ... SLIDE ..., in this order")
        if "TREND_SEMANTICS" in self.acc:
            return ("semantics are skip-till-any-match (any), skip-till-next-match (next) "
                    "and contiguous")
        return super().token_hint()


def _p(meta) -> dict:
    return transform.meta_pos(meta)


@v_args(meta=True)
class ToTrendAst(transform.ToAst):
    """Trend rules -> cercore.trends.ast; names, comparison operators, FROM, PARTITION BY
    groups and time spans are read by the CEQL transformer it extends."""

    def trend_query(self, meta, ch):
        return ch[0]

    def _expr(self, x, context: str = "arithmetic"):
        """A value in a condition may also read an event (``V.attr``, ``NEXT(V).attr``):
        the operands of LIKE, IN and IN RANGE."""
        return x if isinstance(x, ceql.EventAttr) else super()._expr(x, context)

    def _query(self, form, meta, ch):
        kw: dict = {}
        pattern = None
        for c in ch:
            if isinstance(c, tuple) and c and isinstance(c[0], str) and c[0].startswith("@"):
                if c[0] == "@streams":
                    kw["streams"] = c[1]
                else:
                    kw[c[0][1:]] = c[1]
            elif isinstance(c, (ast.PAtom, ast.PSeq, ast.PPlus)):
                pattern = c
        return ast.TrendQuery(form, kw.pop("items"), pattern, **kw, **_p(meta))

    def cogra_query(self, meta, ch):
        return self._query("cogra", meta, ch)

    def ceql_trend_query(self, meta, ch):
        return self._query("ceql", meta, ch)

    def trend_items(self, meta, ch):
        return ("@items", tuple(ch))

    def trend_group_item(self, meta, ch):
        return ast.GroupAttr(ch[0].value, **_p(meta))

    def agg_count_star(self, meta, ch):
        return ast.Aggregate("COUNT", **_p(meta))

    def agg_count(self, meta, ch):
        return ast.Aggregate("COUNT", transform.name_tokens(ch)[0].value, **_p(meta))

    def agg_attr(self, meta, ch):
        var, attr = transform.name_tokens(ch)
        return ast.Aggregate(ch[0].value.upper(), var.value, attr.value, **_p(meta))

    # -- patterns ----------------------------------------------------------------------------
    def tp_atom(self, meta, ch):
        names = transform.name_tokens(ch)
        return ast.PAtom(names[0].value, names[1].value if len(names) > 1 else None,
                         **_p(meta))

    def tp_call(self, meta, ch):
        op = ch[0]
        if op.value.upper() != "SEQ":
            raise self._error(f"unknown pattern operator '{op.value}'", op,
                              hint="patterns are E, P+ and SEQ(P1, P2, ...)")
        return ast.PSeq(tuple(c for c in ch[1:] if not isinstance(c, Token)), **_p(meta))

    def tp_seq(self, meta, ch):
        left, right = ch[0], ch[-1]  # ';' is associative: A ; B ; C is one SEQ
        parts = left.parts if isinstance(left, ast.PSeq) else (left,)
        return ast.PSeq(parts + (right,), line=left.line, column=left.column)

    def tp_unsupported(self, meta, ch):
        from cercore.errors import CEQLSemanticError

        op = next(c for c in ch if isinstance(c, Token) and c.type in ("NOT", "STAR", "OR"))
        what = {"NOT": "negation", "STAR": "Kleene star", "OR": "disjunction"}[op.type]
        hint = {"NOT": "trend aggregation supports E, P+ and SEQ(...) (the negation of "
                       "COGRA's Appendix C is not implemented)",
                "STAR": "write P+ instead; SEQ(P*, Q) is SEQ(P+, Q) plus Q alone, so run both "
                        "queries and add the counts",
                "OR": "run one query per alternative and add the counts"}[op.type]
        raise CEQLSemanticError(f"{what} is not supported in trend patterns", line=op.line,
                                column=op.column, text=self.text, hint=hint)

    def tp_plus(self, meta, ch):
        return ast.PPlus(ch[0], **_p(meta))

    def tp_as(self, meta, ch):
        body, name = ch[0], ch[-1]
        if isinstance(body, ast.PPlus) and isinstance(body.body, ast.PAtom):
            # Trip+ AS T names the type's events: (Trip AS T)+
            return ast.PPlus(self.tp_as(meta, [body.body, name]), line=body.line,
                             column=body.column)
        if not isinstance(body, ast.PAtom) or body.var is not None:
            raise self._error("AS names one event type", name,
                              hint="write Type AS v for each event type, e.g. Trip+ AS T "
                                   "or (Trip AS T)+")
        return ast.PAtom(body.type, name.value, line=body.line, column=body.column)

    # -- clauses -----------------------------------------------------------------------------
    def trend_semantics(self, meta, ch):
        word = ch[-1].value.lower().replace("_", "-")
        kind = {"any": "any", "next": "next", "contiguous": "contiguous",
                "skip-till-any-match": "any", "skip-till-next-match": "next"}[word]
        return ("@semantics", kind)

    def cogra_where(self, meta, ch):
        return ("@condition", ch[-1])

    trend_filter = cogra_where

    def trend_partition(self, meta, ch):
        # as in CEQL: [a], [b] is the composite key; [a, b] one key named a or b by each
        # event type (cercore.runtime.partitions.key_attributes)
        groups = [tuple(dict.fromkeys(c)) for c in ch if isinstance(c, tuple)]
        return ("@partition_by", tuple(dict.fromkeys(groups)))

    def trend_group(self, meta, ch):
        attrs: list[str] = []
        for c in ch[1:]:
            if isinstance(c, Token):
                attrs.append(c.value)
        return ("@group_by", tuple(dict.fromkeys(attrs)))

    def trend_group_attr(self, meta, ch):  # pragma: no cover - inlined by '?'
        return ch

    def trend_span_units(self, meta, ch):
        return (transform.number_value(ch[0]), "raw")

    def trend_span(self, meta, ch):
        return (sum(amount * transform.UNIT_SECONDS[unit] for amount, unit, _ in ch), "s")

    def trend_window(self, meta, ch):
        size, unit = next(c for c in ch if isinstance(c, tuple))
        return ("@window", ast.Window(size, None, unit, **_p(meta)))

    def trend_window_slide(self, meta, ch):
        (size, unit), (slide, slide_unit) = [c for c in ch if isinstance(c, tuple)]
        return ("@window", ast.Window(size, slide, unit, slide_unit, **_p(meta)))

    # -- conditions: CEQL predicates (the CEQL transformer reads their leaves, t_*) -----------
    def tc_or(self, meta, ch):
        return ceql.PredOr(ch[0], ch[-1], **_p(meta))

    def tc_and(self, meta, ch):
        return ceql.PredAnd(ch[0], ch[-1], **_p(meta))

    def tc_not(self, meta, ch):
        return ceql.PredNot(ch[-1], **_p(meta))

    def tc_compare(self, meta, ch):
        left, op, right = ch
        return ceql.Compare(op, left, right, **_p(meta))

    def tc_equiv(self, meta, ch):
        return ast.Equiv(tuple(n.value for n in transform.name_tokens(ch)), **_p(meta))

    def t_symbol(self, meta, ch):
        return ast.Symbol(ch[0].value, **transform.token_pos(ch[0]))
