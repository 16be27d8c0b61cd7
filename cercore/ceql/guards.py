"""Guards: a filter's AND/OR/NOT structure over its atomic predicates (leaves), so each leaf is
evaluated once per event (``cercore.predicates``) and a guard reads the leaves' bits."""

from __future__ import annotations

from cercore.ceql import ast
from cercore.ceql.printer import format_pred

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


def guard_of(p: ast.Pred, leaves: list[ast.Pred], index: dict[ast.Pred, int]) -> Guard:
    """The guard of predicate ``p``: its AND/OR/NOT structure over leaf indices. A leaf not in
    ``index`` is appended to ``leaves`` (equal leaves share one index, so one bit)."""
    if isinstance(p, ast.PredAnd):
        return ("and", guard_of(p.left, leaves, index), guard_of(p.right, leaves, index))
    if isinstance(p, ast.PredOr):
        return ("or", guard_of(p.left, leaves, index), guard_of(p.right, leaves, index))
    if isinstance(p, ast.PredNot):
        return ("not", guard_of(p.operand, leaves, index))
    if isinstance(p, ast.PredConst):
        return ("const", p.value)
    if p not in index:
        index[p] = len(leaves)
        leaves.append(p)
    return ("leaf", index[p])


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
    tag = g[0]
    if tag == "leaf":
        return format_pred(leaves[g[1]])
    if tag in ("and", "or"):
        return f"({format_guard(g[1], leaves)} {tag.upper()} {format_guard(g[2], leaves)})"
    if tag == "not":
        return f"NOT {format_guard(g[1], leaves)}"
    return "TRUE" if g[1] else "FALSE"
