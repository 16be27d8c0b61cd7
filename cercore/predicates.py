"""Atomic predicates, evaluated once per event and vectorised with numpy over a batch.

An *atomic* predicate is a leaf of a filter: a comparison, LIKE, IN or IN RANGE. Filters combine
leaves with AND/OR/NOT into *guards*. Semantics (DESIGN.md "Filters"):

- a leaf that reads a missing or null attribute is false, and so is one whose arithmetic is
  undefined (division or modulo by zero); ``NOT`` is plain boolean negation of the leaf;
- ``int / int`` and ``int % int`` truncate toward zero (C semantics); any double makes it double;
- integer arithmetic is exact: int64 where no result can leave int64, else Python integers
  (``volume * 9223372036854775807 > 0`` holds for every positive volume; literals beyond int64
  are exact too);
- strings compare exactly, ``LIKE`` is an unanchored regular-expression search.

String columns arrive dictionary-encoded (``StringColumn``): a comparison with a constant,
``LIKE`` and ``IN`` run once per distinct string and the events read the result by their code.
"""

from __future__ import annotations

import operator
import re

import numpy as np

from cercore.ceql import ast
from cercore.input.columns import Columns, StringColumn

# Guard expressions: small tuples over leaf indices, cheap to evaluate on an int bit vector.
#   ("leaf", k) | ("and", g1, g2) | ("or", g1, g2) | ("not", g) | ("const", bool)
Guard = tuple
TRUE_GUARD: Guard = ("const", True)


def guard_and(guards: list[Guard]) -> Guard:
    out: Guard = TRUE_GUARD
    for g in guards:
        if g == TRUE_GUARD:
            continue
        out = g if out == TRUE_GUARD else ("and", out, g)
    return out


def eval_guard(g: Guard, bits: int) -> bool:
    """Evaluate a guard on the bit vector of leaf results (bit k = leaf k holds)."""
    tag = g[0]
    if tag == "leaf":
        return bool((bits >> g[1]) & 1)
    if tag == "and":
        return eval_guard(g[1], bits) and eval_guard(g[2], bits)
    if tag == "or":
        return eval_guard(g[1], bits) or eval_guard(g[2], bits)
    if tag == "not":
        return not eval_guard(g[1], bits)
    return bool(g[1])


def format_guard(g: Guard, leaves: list[ast.Pred]) -> str:
    """Readable text of a guard, for ``explain``."""
    from cercore.ceql.printer import format_pred

    tag = g[0]
    if tag == "leaf":
        return format_pred(leaves[g[1]])
    if tag in ("and", "or"):
        return f"({format_guard(g[1], leaves)} {tag.upper()} {format_guard(g[2], leaves)})"
    if tag == "not":
        return f"NOT {format_guard(g[1], leaves)}"
    return "TRUE" if g[1] else "FALSE"


_CMP = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
        "==": operator.eq, "!=": operator.ne}


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
        return -np.asarray(v) if not np.isscalar(v) else -v, ok
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


_INT64_MIN = np.iinfo(np.int64).min


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
            elif not ((a == _INT64_MIN).any() or (b == _INT64_MIN).any()):
                q = np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)
                return q if op == "/" else a - b * q
    shape = np.broadcast_shapes(a.shape, b.shape)
    pairs = zip(np.broadcast_to(a, shape).ravel().tolist(),
                np.broadcast_to(b, shape).ravel().tolist(), strict=True)
    out = np.empty(len(np.broadcast_to(a, shape).ravel()), dtype=object)
    out[:] = [_py_int_op(op, int(x), int(y)) for x, y in pairs]
    return out.reshape(shape)


def _py_int_op(op: str, x: int, y: int) -> int:
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
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
        rx = re.compile(p.pattern)
        res = _per_value(v, n, lambda s: isinstance(s, str) and rx.search(s) is not None)
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
