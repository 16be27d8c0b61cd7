"""Atomic predicates, evaluated once per event and vectorised with numpy over a batch.

An *atomic* predicate is a leaf of a filter: a comparison, LIKE, IN or IN RANGE. Filters combine
leaves with AND/OR/NOT into *guards*. Semantics (DESIGN.md "Filters"):

- a leaf that reads a missing or null attribute is false, and so is one whose arithmetic is
  undefined (division or modulo by zero); ``NOT`` is plain boolean negation of the leaf;
- ``int / int`` and ``int % int`` truncate toward zero (C semantics); any double makes it double;
- integer arithmetic is exact: int64 where no result can leave int64, else Python integers
  (``volume * 9223372036854775807 > 0`` holds for every positive volume; literals beyond int64
  are exact too);
- strings compare exactly, ``LIKE`` is an unanchored regular-expression search in RE2's
  dialect and linear time (``cercore.ceql.regex``).

The same AST also compiles to Spark columns with this meaning (``cercore.spark.base.columns``, which
imports pyspark; this module does not).

String columns arrive dictionary-encoded (``StringColumn``): a comparison with a constant,
``LIKE`` and ``IN`` run once per distinct string and the events read the result by their code.
"""

from __future__ import annotations

import dataclasses
import math
import operator

import numpy as np

from cercore.ceql import ast
from cercore.ceql.regex import like_search
from cercore.input.columns import Columns, StringColumn
from cercore.types import INT64_MIN

# the comparison operators, one table for every evaluator of predicates (vector, scalar, the
# check of predicates between events, the Spark columns of ``cercore.spark.base.columns``; the
# Cython kernel numbers them in this order)
COMPARISONS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
               "==": operator.eq, "!=": operator.ne}
_CMP = COMPARISONS
# each operator's number in the compiled kernels (cercore_fast/between.pyx, trends.pyx)
COMPARISON_CODES = {op: code for code, op in enumerate(COMPARISONS)}
# the arithmetic that means the same on Python ints and on doubles ('/' and '%' do not)
_RING = {"+": operator.add, "-": operator.sub, "*": operator.mul}
# a comparison with its sides swapped: x op y == y MIRRORED[op] x
MIRRORED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def _plain(x):
    """A column in plain numpy form (a StringColumn decoded: the rare slow path)."""
    return x.decode() if isinstance(x, StringColumn) else x


def _expr(e: ast.Expr, cols: Columns) -> tuple[object, object]:
    """Evaluate an arithmetic expression: (values, valid) where either may be a scalar."""
    if isinstance(e, ast.Literal):
        return e.value, True
    if isinstance(e, ast.AttrRef):
        return cols.values[e.name], cols.valid[e.name]
    if isinstance(e, ast.Neg):
        v, ok = _expr(e.operand, cols)
        if np.isscalar(v):
            return -v, ok
        v = np.asarray(v)
        if v.dtype.kind in "iu":  # exactly, as 0 - v: -INT64_MIN leaves int64
            return _int_op("-", np.zeros_like(v), v), ok
        return -v, ok
    a, oka = _expr(e.left, cols)
    b, okb = _expr(e.right, cols)
    a, b = _plain(a), _plain(b)
    ok = np.logical_and(oka, okb)
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    if _integral(a_arr) and _integral(b_arr):
        if e.op in ("/", "%"):
            zero = b_arr == 0
            ok = np.logical_and(ok, np.logical_not(zero))
            b_arr = np.where(zero, 1, b_arr)
        return _int_op(e.op, a_arr, b_arr), ok
    if e.op == "+":
        return a_arr + b_arr, ok
    if e.op == "-":
        return a_arr - b_arr, ok
    if e.op == "*":
        return a_arr * b_arr, ok
    zero = b_arr == 0
    ok = np.logical_and(ok, np.logical_not(zero))
    safe_b = np.where(zero, 1, b_arr).astype(np.float64)
    a_f = a_arr.astype(np.float64)
    return (a_f / safe_b if e.op == "/" else np.fmod(a_f, safe_b)), ok




def _integral(x: np.ndarray) -> bool:
    """int64 values, or Python integers (an object array: exact results and big literals)."""
    if x.dtype.kind in "iu":
        return True
    return x.dtype == object and all(isinstance(v, int) and not isinstance(v, bool)
                                     for v in x.ravel().tolist())


def _int_op(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a op b`` over integers, exactly: in int64 when no operand or result leaves it, else in
    Python integers (an object array; slow, and only where int64 would have wrapped)."""
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        a, b = a.astype(np.int64, copy=False), b.astype(np.int64, copy=False)
        with np.errstate(over="ignore"):
            if op == "+":
                r = a + b
                if not (((a ^ r) & (b ^ r)) < 0).any():
                    return r
            elif op == "-":
                r = a - b
                if not (((a ^ b) & (a ^ r)) < 0).any():
                    return r
            elif op == "*":
                if not (np.abs(a.astype(np.float64) * b.astype(np.float64)) >= 2.0**62).any():
                    return a * b
            elif not ((a == INT64_MIN).any() or (b == INT64_MIN).any()):
                q = np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)
                return q if op == "/" else a - b * q
    shape = np.broadcast_shapes(a.shape, b.shape)
    pairs = zip(np.broadcast_to(a, shape).ravel().tolist(),
                np.broadcast_to(b, shape).ravel().tolist(), strict=True)
    out = np.empty(len(np.broadcast_to(a, shape).ravel()), dtype=object)
    out[:] = [_py_int_op(op, int(x), int(y)) for x, y in pairs]
    return out.reshape(shape)


def _py_int_op(op: str, x: int, y: int) -> int:
    if op in _RING:
        return _RING[op](x, y)
    q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)  # truncate toward zero
    return q if op == "/" else x - y * q


def _broadcast(x, n: int, dtype=None) -> np.ndarray:
    arr = np.asarray(x, dtype=dtype)
    return np.broadcast_to(arr, (n,)) if arr.ndim == 0 else arr


def _per_value(values, n: int, fn) -> np.ndarray:
    """Apply a Python predicate to each distinct value once (strings repeat a lot)."""
    if isinstance(values, StringColumn):
        return values.map(fn)
    arr = _broadcast(values, n)
    if arr.dtype == object:
        uniq: dict = {}
        return np.fromiter((uniq[v] if v in uniq else uniq.setdefault(v, fn(v)) for v in arr),
                           dtype=bool, count=n)
    return np.fromiter((fn(v) for v in arr), dtype=bool, count=n)


def attributes_read(node: object) -> set[str]:
    """The attribute names an AST node (an expression or a predicate) reads."""
    if isinstance(node, ast.AttrRef):
        return {node.name}
    out: set[str] = set()
    if dataclasses.is_dataclass(node):
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            for v in value if isinstance(value, tuple) else (value,):
                if dataclasses.is_dataclass(v):
                    out |= attributes_read(v)
    return out


def evaluate_pred(p: ast.Pred, cols: Columns) -> np.ndarray:
    """Boolean array: which events of the batch satisfy ``p``, leaves joined by AND / OR /
    NOT exactly as a guard joins them (``NOT`` negates a leaf that is false on null)."""
    if isinstance(p, ast.PredAnd):
        return np.logical_and(evaluate_pred(p.left, cols), evaluate_pred(p.right, cols))
    if isinstance(p, ast.PredOr):
        return np.logical_or(evaluate_pred(p.left, cols), evaluate_pred(p.right, cols))
    if isinstance(p, ast.PredNot):
        return np.logical_not(evaluate_pred(p.operand, cols))
    if isinstance(p, ast.PredConst):
        return np.full(cols.n, bool(p.value))
    return np.asarray(evaluate_leaf(p, cols), dtype=bool)


def evaluate_leaf(p: ast.Pred, cols: Columns) -> np.ndarray:
    """Boolean array: which events of the batch satisfy leaf predicate ``p``."""
    n = cols.n
    if isinstance(p, ast.Compare):
        a, oka = _expr(p.left, cols)
        b, okb = _expr(p.right, cols)
        cmp = _CMP[p.op]
        if isinstance(a, StringColumn) and isinstance(b, str):
            res = np.asarray(cmp(a.dictionary, b), dtype=bool)[a.codes]
        elif isinstance(b, StringColumn) and isinstance(a, str):
            res = np.asarray(cmp(a, b.dictionary), dtype=bool)[b.codes]
        else:
            res = np.asarray(cmp(_broadcast(_plain(a), n), _broadcast(_plain(b), n)),
                             dtype=bool)
        return np.logical_and(np.logical_and(res, oka), okb)
    if isinstance(p, ast.Like):
        v, ok = _expr(p.operand, cols)
        search = like_search(p.pattern)
        res = _per_value(v, n, lambda s: isinstance(s, str) and search(s))
        return np.logical_and(res, ok)
    if isinstance(p, ast.InSet):
        v, ok = _expr(p.operand, cols)
        if isinstance(v, StringColumn) and not any(isinstance(i, ast.Range) for i in p.items):
            items = {i.value for i in p.items}
            res = v.map(items.__contains__)
            return np.logical_and(~res if p.negated else res, ok)
        varr = _broadcast(_plain(v), n)
        res = np.zeros(n, dtype=bool)
        for item in p.items:
            if isinstance(item, ast.Range):
                lo, oklo = _expr(item.lo, cols)
                hi, okhi = _expr(item.hi, cols)
                res |= (varr >= lo) & (varr <= hi)
                ok = np.logical_and(ok, np.logical_and(oklo, okhi))  # null bound: false
            else:
                res |= varr == item.value
        if p.negated:
            res = ~res
        return np.logical_and(res, ok)
    if isinstance(p, ast.InRange):
        v, ok = _expr(p.operand, cols)
        v = _plain(v)
        lo, oklo = _expr(p.lo, cols)
        hi, okhi = _expr(p.hi, cols)
        varr = _broadcast(v, n)
        res = (varr >= lo) & (varr <= hi)
        if p.negated:
            res = ~res
        return np.logical_and(np.logical_and(res, ok), np.logical_and(oklo, okhi))
    raise TypeError(f"not a leaf predicate: {p!r}")  # analysis never produces this


# ---- the scalar form: one event at a time -------------------------------------------------------
# The record path (``Engine.push``, live iterators) evaluates each leaf on one event's validated
# attribute dict. These closures follow ``evaluate_leaf`` rule for rule -- null and undefined
# arithmetic are false, integer arithmetic is exact and truncates toward zero, a double
# operand makes the operation (and a comparison) double -- and the differential tests feed
# the same events through both forms.
#
# A predicate between two adjacent events (trend aggregation's ``L.cpu < NEXT(L).cpu``) reads
# ``EventAttr`` terms: its row is the pair (the event's attributes, its successor's), and
# ``x.attr`` reads the first, ``NEXT(x).attr`` the second.

def _scalar_expr(e: ast.Expr):
    """``row -> value`` (None: null or undefined) of an arithmetic expression."""
    if isinstance(e, ast.Literal):
        value = e.value
        return lambda row: value
    if isinstance(e, ast.AttrRef):
        name = e.name
        return lambda row: row.get(name)
    if isinstance(e, ast.EventAttr):
        side, name = int(e.next), e.attr
        return lambda pair: pair[side].get(name)
    if isinstance(e, ast.Neg):
        operand = _scalar_expr(e.operand)

        def neg(row):
            v = operand(row)
            return None if v is None else -v
        return neg
    left, right, op = _scalar_expr(e.left), _scalar_expr(e.right), e.op
    ring = _RING.get(op)

    def binop(row):
        a = left(row)
        if a is None:
            return None
        b = right(row)
        if b is None:
            return None
        if type(a) is int and type(b) is int:
            if op in ("/", "%"):
                if b == 0:
                    return None
            return _py_int_op(op, a, b)
        a, b = float(a), float(b)
        if ring is not None:
            return ring(a, b)
        if b == 0:
            return None
        return a / b if op == "/" else _fmod(a, b)
    return binop


def _fmod(a: float, b: float) -> float:
    """``np.fmod`` on two doubles (``b`` not zero): nan for an infinite ``a``, where
    ``math.fmod`` raises; Python's other double operations already give numpy's inf and nan."""
    return math.nan if math.isinf(a) else math.fmod(a, b)


def _numeric_pair(a, b):
    """Operands as numpy compares them: an int beside a double is read as a double."""
    if type(a) is float and type(b) is int:
        return a, float(b)
    if type(b) is float and type(a) is int:
        return float(a), b
    return a, b


def _le(a, b) -> bool:
    a, b = _numeric_pair(a, b)
    return a <= b


def _eq(a, b) -> bool:
    a, b = _numeric_pair(a, b)
    return a == b


def scalar_leaf(p: ast.Pred):
    """``row -> bool``: leaf ``p`` on one event (``row``: attribute -> value, None or absent for
    null), with exactly ``evaluate_leaf``'s semantics."""
    if isinstance(p, ast.Compare):
        left, right, cmp = _scalar_expr(p.left), _scalar_expr(p.right), _CMP[p.op]

        def compare(row) -> bool:
            a = left(row)
            if a is None:
                return False
            b = right(row)
            if b is None:
                return False
            return bool(cmp(*_numeric_pair(a, b)))
        return compare
    if isinstance(p, ast.Like):
        operand, search = _scalar_expr(p.operand), like_search(p.pattern)

        def like(row) -> bool:
            v = operand(row)
            return type(v) is str and search(v)
        return like
    if isinstance(p, ast.InSet):
        operand, negated = _scalar_expr(p.operand), p.negated
        ranges = [(_scalar_expr(i.lo), _scalar_expr(i.hi)) for i in p.items
                  if isinstance(i, ast.Range)]
        values = [i.value for i in p.items if not isinstance(i, ast.Range)]
        # a set lookup where it means what ``==`` means: not for doubles (numpy compares an
        # int with a double as doubles; a set compares them exactly, and NaN by identity)
        members = frozenset(values) if not any(type(x) is float for x in values) else None

        def in_set(row) -> bool:
            v = operand(row)
            if v is None:
                return False
            bounds = []
            for lo_of, hi_of in ranges:
                lo, hi = lo_of(row), hi_of(row)
                if lo is None or hi is None:
                    return False  # a null bound: the leaf is false
                bounds.append((lo, hi))
            if members is not None and type(v) is not float:
                found = v in members
            else:
                found = any(_eq(v, x) for x in values)
            if not found:
                found = any(_le(lo, v) and _le(v, hi) for lo, hi in bounds)
            return not found if negated else found
        return in_set
    if isinstance(p, ast.InRange):
        operand, lo_of, hi_of = _scalar_expr(p.operand), _scalar_expr(p.lo), _scalar_expr(p.hi)
        negated = p.negated

        def in_range(row) -> bool:
            v, lo, hi = operand(row), lo_of(row), hi_of(row)
            if v is None or lo is None or hi is None:
                return False
            inside = _le(lo, v) and _le(v, hi)
            return not inside if negated else inside
        return in_range
    raise TypeError(f"not a leaf predicate: {p!r}")


def scalar_pred(p: ast.Pred):
    """``row -> bool``: a whole predicate (leaves joined by AND / OR / NOT) on one event, or on
    one pair of adjacent events when it reads ``EventAttr`` terms (see above)."""
    if isinstance(p, ast.PredAnd):
        left, right = scalar_pred(p.left), scalar_pred(p.right)
        return lambda row: left(row) and right(row)
    if isinstance(p, ast.PredOr):
        left, right = scalar_pred(p.left), scalar_pred(p.right)
        return lambda row: left(row) or right(row)
    if isinstance(p, ast.PredNot):
        operand = scalar_pred(p.operand)
        return lambda row: not operand(row)
    if isinstance(p, ast.PredConst):
        value = p.value
        return lambda row: value
    return scalar_leaf(p)
