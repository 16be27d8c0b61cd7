"""CEQL text from AST nodes.

``parse_query(format_query(q)) == q`` for every well-formed query AST (positions aside):
the printer puts parentheses wherever the grammar's precedence would otherwise regroup an
operand, and adds a few more for readability (``NOT (...)``, ``(A AS x)+``).

Numbers: a negative numeric ``Literal(-5)`` prints as ``-5`` (the parser folds a minus
sign written directly before a number into the literal), while ``Neg(Literal(5))`` prints
as ``-(5)``.  Identifiers that are not plain words, or that are keywords, are quoted with
backticks.
"""

from __future__ import annotations

import math
import re

from cercore.ceql import ast
from cercore.ceql.grammar import KEYWORDS

__all__ = ["format_query", "format_formula", "format_filter", "format_pred", "format_expr",
           "format_name", "format_literal", "KEYWORDS"]

_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# Formula precedence levels (higher binds tighter).
_F_FILTER, _F_OR, _F_CONTIG, _F_SEQ, _F_POSTFIX, _F_PRIMARY = range(6)
# Filter-expression levels.
_X_OR, _X_AND, _X_ATOM = range(3)
# Predicate levels.
_P_OR, _P_AND, _P_NOT, _P_ATOM = range(4)
# Arithmetic levels.
_E_SUM, _E_TERM, _E_FACTOR = range(3)


def _operand(text: str, own: int, level: int) -> str:
    """An operand's ``text``, in parentheses when its own level binds looser than the
    ``level`` its place needs."""
    return f"({text})" if own < level else text


def format_name(name: str) -> str:
    """An identifier as CEQL text: bare if it is a plain non-keyword word, else `quoted`."""
    if _PLAIN_NAME.match(name) and name.upper() not in KEYWORDS:
        return name
    return "`" + name.replace("`", "``") + "`"


def format_var(var: str) -> str:
    """A variable as CEQL text: ``S>R`` (stream-qualified event type) or a name."""
    stream, sep, event_type = var.partition(">")
    if sep and stream and event_type:  # (a name such as ">" is not qualified: quoted whole)
        return f"{format_name(stream)}>{format_name(event_type)}"
    return format_name(var)


def _format_number(v: int | float) -> str:
    if isinstance(v, float):
        if math.isinf(v):
            return "1e999" if v > 0 else "-1e999"
        if math.isnan(v):
            raise ValueError("NaN has no CEQL literal")
        return repr(v)
    return str(v)


def format_literal(value: int | float | str | bool) -> str:
    """A constant as CEQL text: ``12``, ``1.5``, ``'it''s'``, ``true``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _format_number(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise TypeError(f"not a CEQL literal: {value!r}")


# ---------------------------------------------------------------------------------------
# Arithmetic
# ---------------------------------------------------------------------------------------
def _expr_level(e: ast.Expr) -> int:
    if isinstance(e, ast.BinOp):
        return _E_SUM if e.op in "+-" else _E_TERM
    return _E_FACTOR


def _expr(e: ast.Expr, level: int) -> str:
    return _operand(format_expr(e), _expr_level(e), level)


def format_expr(e: ast.Expr) -> str:
    """An arithmetic expression as CEQL text."""
    if isinstance(e, ast.Literal):
        return format_literal(e.value)
    if isinstance(e, ast.AttrRef):
        return format_name(e.name)
    if isinstance(e, ast.EventAttr):
        var = f"NEXT({format_name(e.var)})" if e.next else format_name(e.var)
        return f"{var}.{format_name(e.attr)}"
    if isinstance(e, ast.Neg):
        # "-price" is safe; anything else gets parentheses so that "-(5)" stays a Neg and
        # two minus signs never touch ("--" starts a comment).
        if isinstance(e.operand, ast.AttrRef):
            return "-" + format_name(e.operand.name)
        return f"-({format_expr(e.operand)})"
    if isinstance(e, ast.BinOp):
        if e.op in ("+", "-"):
            return f"{_expr(e.left, _E_SUM)} {e.op} {_expr(e.right, _E_TERM)}"
        if e.op in ("*", "/", "%"):
            return f"{_expr(e.left, _E_TERM)} {e.op} {_expr(e.right, _E_FACTOR)}"
        raise ValueError(f"unknown arithmetic operator {e.op!r}")
    raise TypeError(f"not an expression: {e!r}")


# ---------------------------------------------------------------------------------------
# Predicates
# ---------------------------------------------------------------------------------------
_PRED_LEVELS = {ast.PredOr: _P_OR, ast.PredAnd: _P_AND, ast.PredNot: _P_NOT}  # else _P_ATOM


def _pred(p: ast.Pred, level: int) -> str:
    return _operand(format_pred(p), _PRED_LEVELS.get(type(p), _P_ATOM), level)


def _set_item(item: ast.Literal | ast.Range) -> str:
    if isinstance(item, ast.Range):
        return f"{format_expr(item.lo)}..{format_expr(item.hi)}"
    return format_expr(item)


def format_pred(p: ast.Pred) -> str:
    """A predicate (the ``P`` of ``X[P]``) as CEQL text."""
    if isinstance(p, ast.PredOr):
        return f"{_pred(p.left, _P_OR)} OR {_pred(p.right, _P_AND)}"
    if isinstance(p, ast.PredAnd):
        return f"{_pred(p.left, _P_AND)} AND {_pred(p.right, _P_NOT)}"
    if isinstance(p, ast.PredNot):
        if isinstance(p.operand, ast.PredConst):
            return f"NOT {format_pred(p.operand)}"
        return f"NOT ({format_pred(p.operand)})"
    if isinstance(p, ast.PredConst):
        return "true" if p.value else "false"
    if isinstance(p, ast.Compare):
        return f"{format_expr(p.left)} {p.op} {format_expr(p.right)}"
    if isinstance(p, ast.Like):
        return f"{format_expr(p.operand)} LIKE {format_literal(p.pattern)}"
    if isinstance(p, ast.InSet):
        items = ", ".join(_set_item(i) for i in p.items)
        neg = "NOT " if p.negated else ""
        return f"{format_expr(p.operand)} {neg}IN {{{items}}}"
    if isinstance(p, ast.InRange):
        neg = "NOT " if p.negated else ""
        return (f"{format_expr(p.operand)} {neg}IN RANGE({format_expr(p.lo)}, "
                f"{format_expr(p.hi)})")
    raise TypeError(f"not a predicate: {p!r}")


# ---------------------------------------------------------------------------------------
# Filters
# ---------------------------------------------------------------------------------------
_FILTER_LEVELS = {ast.FilterOr: _X_OR, ast.FilterAnd: _X_AND}  # else _X_ATOM


def _filter(f: ast.FilterExpr, level: int) -> str:
    return _operand(format_filter(f), _FILTER_LEVELS.get(type(f), _X_ATOM), level)


def format_filter(f: ast.FilterExpr) -> str:
    """A filter expression (what follows ``FILTER``) as CEQL text."""
    if isinstance(f, ast.AtomicFilter):
        return f"{format_var(f.var)}[{format_pred(f.pred)}]"
    if isinstance(f, ast.FilterAnd):
        return f"{_filter(f.left, _X_AND)} AND {_filter(f.right, _X_ATOM)}"
    if isinstance(f, ast.FilterOr):
        return f"{_filter(f.left, _X_OR)} OR {_filter(f.right, _X_AND)}"
    if isinstance(f, ast.EventPredicate):
        return format_pred(f.pred)
    raise TypeError(f"not a filter: {f!r}")


# ---------------------------------------------------------------------------------------
# Formulas
# ---------------------------------------------------------------------------------------
_FORMULA_LEVELS = {ast.Filter: _F_FILTER, ast.Or: _F_OR, ast.Contig: _F_CONTIG,
                   ast.Seq: _F_SEQ, ast.As: _F_POSTFIX, ast.Iter: _F_POSTFIX,
                   ast.Repeat: _F_POSTFIX}  # else _F_PRIMARY


def _formula(f: ast.Formula, level: int) -> str:
    return _operand(format_formula(f), _FORMULA_LEVELS.get(type(f), _F_PRIMARY), level)


def _repeated(inner: ast.Formula) -> str:
    """The operand of ``+`` or ``{n,m}``: (A AS x)+ rather than the equivalent but surprising
    "A AS x+"."""
    if isinstance(inner, ast.As):
        return f"({format_formula(inner)})"
    return _formula(inner, _F_POSTFIX)


def format_formula(f: ast.Formula) -> str:
    """A CEL formula (what follows ``WHERE``) as CEQL text."""
    if isinstance(f, ast.EventAtom):
        if f.stream is not None:
            return f"{format_name(f.stream)}>{format_name(f.event_type)}"
        return format_name(f.event_type)
    if isinstance(f, ast.As):
        return f"{_formula(f.formula, _F_POSTFIX)} AS {format_name(f.var)}"
    if isinstance(f, ast.Iter):
        return _repeated(f.formula) + (":+" if f.contiguous else "+")
    if isinstance(f, ast.Repeat):
        count = str(f.lo) if f.hi == f.lo else f"{f.lo},{'' if f.hi is None else f.hi}"
        return _repeated(f.formula) + (":{" if f.contiguous else "{") + count + "}"
    if isinstance(f, ast.Seq):
        return f"{_formula(f.left, _F_SEQ)} ; {_formula(f.right, _F_POSTFIX)}"
    if isinstance(f, ast.Contig):
        return f"{_formula(f.left, _F_CONTIG)} : {_formula(f.right, _F_SEQ)}"
    if isinstance(f, ast.Or):
        return f"{_formula(f.left, _F_OR)} OR {_formula(f.right, _F_CONTIG)}"
    if isinstance(f, ast.Filter):
        return f"{_formula(f.formula, _F_FILTER)} FILTER {format_filter(f.filter)}"
    if isinstance(f, ast.Not):
        return f"NOT({format_formula(f.formula)})"
    if isinstance(f, ast.Absent):
        deadline = "" if f.deadline is None else f" WITHIN {format_window(f.deadline)}"
        return f"ABSENT({format_formula(f.formula)}){deadline}"
    raise TypeError(f"not a formula: {f!r}")


# ---------------------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------------------
_UNITS = (("HOUR", 3600), ("MINUTE", 60), ("SECOND", 1))


def _format_seconds(seconds: float) -> str:
    if isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds > 0 \
            and float(seconds).is_integer():
        rest = int(seconds)
        parts = []
        for unit, size in _UNITS:
            n, rest = divmod(rest, size)
            if n:
                parts.append(f"{n} {unit}" + ("" if n == 1 else "S"))
        return " ".join(parts)
    return f"{_format_number(seconds)} SECONDS"


def format_window(w: ast.Window) -> str:
    """The text after ``WITHIN``."""
    if isinstance(w, ast.EventsWindow):
        return f"{w.count} EVENTS"
    if isinstance(w, ast.TimeWindow):
        return _format_seconds(w.seconds)
    if isinstance(w, ast.AttrWindow):
        return f"{_format_number(w.amount)} [{format_name(w.attribute)}]"
    raise TypeError(f"not a window: {w!r}")


def _format_projection(p: str | tuple[ast.ProjectionItem, ...]) -> str:
    if p == "*":
        return "*"
    if p == "NONE":
        return "NONE"
    items = []
    for item in p:
        if item.attributes is None:
            items.append(format_var(item.var))
        else:
            attrs = ", ".join(format_name(a) for a in item.attributes)
            items.append(f"{format_var(item.var)}[{attrs}]")
    return ", ".join(items)


def format_query(q: ast.Query) -> str:
    """A whole query as CEQL text, one clause per line."""
    select = "SELECT " + (f"{q.strategy} " if q.strategy else "") + _format_projection(
        q.projection)
    lines = [select]
    if q.streams:
        lines.append("FROM " + ", ".join(format_name(s) for s in q.streams))
    lines.append("WHERE " + format_formula(q.formula))
    if q.partition_by:
        groups = ", ".join("[" + ", ".join(format_name(a) for a in g) + "]"
                           for g in q.partition_by)
        lines.append("PARTITION BY " + groups)
    if q.within is not None:
        lines.append("WITHIN " + format_window(q.within))
    if q.consume is not None:
        lines.append(f"CONSUME BY {q.consume}")
    if q.limit is not None:
        lines.append(f"LIMIT {q.limit}")
    return "\n".join(lines)
