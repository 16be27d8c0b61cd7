"""Syntax tree of trend aggregation queries (both the COGRA and the CEQL-style form).

Every node carries the 1-based ``line``/``column`` where it starts, for error messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from cercore.ceql import ast as ceql


@dataclass(frozen=True)
class Node:
    line: int | None = field(default=None, kw_only=True, compare=False)
    column: int | None = field(default=None, kw_only=True, compare=False)


# ---- patterns ------------------------------------------------------------------------------
@dataclass(frozen=True)
class PAtom(Node):
    """One event type, optionally bound to a variable (``Load L`` / ``Load AS L``)."""

    type: str
    var: str | None = None


@dataclass(frozen=True)
class PSeq(Node):
    parts: tuple


@dataclass(frozen=True)
class PPlus(Node):
    body: Any


# ---- conditions ----------------------------------------------------------------------------
# Conditions are CEQL predicates (``cercore.ceql.ast``: Compare, Like, InSet, InRange, BinOp, Neg,
# Literal, and EventAttr for ``V.attr`` / ``NEXT(V).attr``, joined by PredAnd / PredOr / PredNot),
# evaluated by
# the one predicate layer (``cercore.predicates``). Only the syntax that is the trend
# language's own has a node here: bare identifiers and ``[attr, ...]``.
@dataclass(frozen=True)
class Symbol(ceql.Literal):
    """A bare identifier read as a string constant (COGRA: ``A.type = passive``)."""

    symbol: ClassVar[bool] = True


@dataclass(frozen=True)
class Equiv(Node):
    """``[a, b]``: every event of a trend has the same ``a`` and the same ``b``."""

    attrs: tuple[str, ...]

    def __str__(self) -> str:
        return "[" + ", ".join(self.attrs) + "]"


def condition_text(node: Any) -> str:
    """A condition (or one of its expressions) as query text, for ``explain`` and errors."""
    from cercore.ceql.printer import format_expr, format_pred

    if isinstance(node, Equiv):
        return str(node)
    if isinstance(node, Symbol):
        return node.value
    if isinstance(node, (ceql.PredAnd, ceql.PredOr, ceql.PredNot, ceql.PredConst, ceql.Compare,
                         ceql.Like, ceql.InSet, ceql.InRange)):
        return format_pred(node)
    return format_expr(node)



# ---- the query -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Aggregate(Node):
    """``COUNT(*)`` (``target=None``), ``COUNT(X)``, ``SUM/MIN/MAX/AVG(X.attr)``; X is a
    variable or an event type."""

    func: str
    target: str | None = None
    attr: str | None = None

    def __str__(self) -> str:
        if self.target is None:
            return f"{self.func}(*)"
        if self.attr is None:
            return f"{self.func}({self.target})"
        return f"{self.func}({self.target}.{self.attr})"


@dataclass(frozen=True)
class GroupAttr(Node):
    name: str


@dataclass(frozen=True)
class Window(Node):
    """``WITHIN size SLIDE slide``; sizes in seconds (``unit="s"``) or in raw time units."""

    size: float
    slide: float | None
    unit: str  # "s" (written with a time unit) or "raw" (a bare number)
    slide_unit: str = "raw"


@dataclass(frozen=True)
class TrendQuery(Node):
    form: str  # "cogra" | "ceql"
    items: tuple  # GroupAttr | Aggregate, in the order written
    pattern: Any
    semantics: str = "any"  # "any" | "next" | "contiguous"
    condition: Any = None
    partition_by: tuple[tuple[str, ...], ...] = ()  # bracketed groups, as in CEQL
    group_by: tuple[str, ...] = ()
    window: Window | None = None
    streams: tuple[str, ...] = ()
