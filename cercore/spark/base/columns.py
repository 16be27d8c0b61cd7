"""Predicates as Spark columns: the predicate AST (``cercore.ceql.ast``) compiled to a boolean
Spark ``Column`` that means what ``cercore.predicates`` means (DESIGN.md "Filters"), through
the same operator table (``cercore.predicates.COMPARISONS``) -- not what Spark SQL would make
of the same text:

- a leaf that reads a null attribute, or whose arithmetic is undefined (division or modulo by
  zero), is false, never NULL -- so ``NOT`` of such a leaf is true (SQL's ``NOT NULL`` is NULL);
- ``int / int`` and ``int % int`` truncate toward zero (Spark's ``/`` is a double division);
  integer arithmetic is exact, in ``DECIMAL(38, 0)`` (a result beyond 38 digits, which the
  local engine still computes, is undefined here); an int beside a double is a double;
- NaN compares as numpy compares it: false, ``!=`` true (Spark orders NaN above every number
  and equal to itself);
- ``LIKE`` is an unanchored regular-expression search (``rlike``: Java's dialect, which means
  what RE2 means for the patterns analysis accepts, but for ``$``, which Java also matches
  before a final line break).

A predicate's terms (``AttrRef``, or ``EventAttr`` for predicates between events) become
columns through the caller's ``term`` function, which also gives each one's attribute type.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal

from pyspark.sql import Column
from pyspark.sql import functions as F

from cercore.ceql import ast
from cercore.predicates import COMPARISONS
from cercore.types import INT64_MAX, INT64_MIN, AttrType

EXACT = "decimal(38,0)"  # integer arithmetic: exact (int64 operands cannot overflow it)

Term = Callable[[ast.AttrRef | ast.EventAttr], tuple[Column, AttrType]]
Typed = tuple[Column, AttrType]  # a value (NULL: null or undefined) and its type


def pred_column(p: ast.Pred, term: Term) -> Column:
    """The boolean column (never NULL) of predicate ``p``: leaves joined by AND / OR / NOT as a
    guard joins them; ``term`` gives each attribute's column and type."""
    if isinstance(p, ast.PredAnd):
        return pred_column(p.left, term) & pred_column(p.right, term)
    if isinstance(p, ast.PredOr):
        return pred_column(p.left, term) | pred_column(p.right, term)
    if isinstance(p, ast.PredNot):
        return ~pred_column(p.operand, term)
    if isinstance(p, ast.PredConst):
        return F.lit(bool(p.value))
    return F.coalesce(_leaf(p, term), F.lit(False))


def compare_column(op: str, left: Typed, right: Typed) -> Column:
    """``left op right`` (``op`` a key of ``COMPARISONS``), NULL when a side is: an int beside a
    double compares as a double, NaN as numpy compares it."""
    (a, ta), (b, tb) = left, right
    cmp = COMPARISONS[op]
    if AttrType.DOUBLE in (ta, tb):
        a, b = a.cast("double"), b.cast("double")
        return F.when(F.isnan(a) | F.isnan(b), F.lit(cmp(math.nan, math.nan))).otherwise(
            cmp(a, b))
    return cmp(a, b)  # Spark widens integers and decimals to one exact type


def _leaf(p: ast.Pred, term: Term) -> Column:
    """A leaf's column; NULL (then false) where it reads a null or undefined value."""
    if isinstance(p, ast.Compare):
        return compare_column(p.op, expr_column(p.left, term), expr_column(p.right, term))
    if isinstance(p, ast.Like):
        return expr_column(p.operand, term)[0].rlike(p.pattern)
    if isinstance(p, (ast.InSet, ast.InRange)):
        value = expr_column(p.operand, term)
        ranges = ([(p.lo, p.hi)] if isinstance(p, ast.InRange) else
                  [(i.lo, i.hi) for i in p.items if isinstance(i, ast.Range)])
        found, defined = F.lit(False), value[0].isNotNull()
        for item in p.items if isinstance(p, ast.InSet) else ():
            if not isinstance(item, ast.Range):
                found = found | compare_column("==", value, expr_column(item, term))
        for lo_expr, hi_expr in ranges:
            lo, hi = expr_column(lo_expr, term), expr_column(hi_expr, term)
            defined = defined & lo[0].isNotNull() & hi[0].isNotNull()  # a null bound: false
            found = found | (compare_column("<=", lo, value) & compare_column("<=", value, hi))
        return F.when(defined, ~found if p.negated else found)
    raise TypeError(f"not a leaf predicate: {p!r}")  # analysis never produces this


def expr_column(e: ast.Expr, term: Term) -> Typed:
    """An arithmetic expression's column and type; NULL where it is null or undefined."""
    if isinstance(e, ast.Literal):
        return _literal(e.value)
    if isinstance(e, (ast.AttrRef, ast.EventAttr)):
        return term(e)
    if isinstance(e, ast.Neg):
        v, t = expr_column(e.operand, term)
        if t is AttrType.INT:
            return F.try_subtract(F.lit(0).cast(EXACT), v.cast(EXACT)), t
        return -v, t
    (a, ta), (b, tb) = expr_column(e.left, term), expr_column(e.right, term)
    if ta is AttrType.INT and tb is AttrType.INT:
        a, b = a.cast(EXACT), b.cast(EXACT)
        if e.op == "/":  # truncated toward zero: the remainder has the dividend's sign
            return F.try_divide(F.try_subtract(a, F.try_mod(a, b)), b).cast(EXACT), ta
    else:
        a, b, ta = a.cast("double"), b.cast("double"), AttrType.DOUBLE
    if e.op == "+":
        return F.try_add(a, b), ta
    if e.op == "-":
        return F.try_subtract(a, b), ta
    if e.op == "*":
        return F.try_multiply(a, b), ta
    # by zero: NULL (undefined), never Spark's error or IEEE's infinity
    return (F.try_divide(a, b) if e.op == "/" else F.try_mod(a, b)), ta


def _literal(value) -> Typed:
    if isinstance(value, bool):
        return F.lit(value), AttrType.BOOL
    if isinstance(value, int):
        if INT64_MIN <= value <= INT64_MAX:
            return F.lit(value).cast("bigint"), AttrType.INT
        return F.lit(Decimal(value)).cast(EXACT), AttrType.INT
    if isinstance(value, float):
        return F.lit(value).cast("double"), AttrType.DOUBLE
    return F.lit(value), AttrType.STRING
