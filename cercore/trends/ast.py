"""Syntax tree of trend aggregation queries (both the COGRA and the CEQL-style form).

Every node carries the 1-based ``line``/``column`` where it starts, for error messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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


# ---- expressions and conditions ------------------------------------------------------------
@dataclass(frozen=True)
class Ref(Node):
    """``var.attr``, or ``NEXT(var).attr`` (``next=True``): the attribute of the successor
    event of a trend, when that successor is bound to ``var``."""

    var: str
    attr: str
    next: bool = False

    def __str__(self) -> str:
        return f"NEXT({self.var}).{self.attr}" if self.next else f"{self.var}.{self.attr}"


@dataclass(frozen=True)
class Const(Node):
    value: Any
    symbol: bool = False  # a bare identifier read as a string constant (COGRA: A.type = passive)

    def __str__(self) -> str:
        if isinstance(self.value, str):
            return self.value if self.symbol else "'" + self.value.replace("'", "''") + "'"
        if isinstance(self.value, bool):
            return "true" if self.value else "false"
        return repr(self.value)


@dataclass(frozen=True)
class Arith(Node):
    op: str  # + - * / %
    left: Any
    right: Any

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


@dataclass(frozen=True)
class Negate(Node):
    operand: Any

    def __str__(self) -> str:
        return f"-{self.operand}"


@dataclass(frozen=True)
class Compare(Node):
    op: str  # < <= > >= == !=
    left: Any
    right: Any

    def __str__(self) -> str:
        op = "=" if self.op == "==" else self.op
        return f"{self.left} {op} {self.right}"


@dataclass(frozen=True)
class Equiv(Node):
    """``[a, b]``: every event of a trend has the same ``a`` and the same ``b``."""

    attrs: tuple[str, ...]

    def __str__(self) -> str:
        return "[" + ", ".join(self.attrs) + "]"


@dataclass(frozen=True)
class And(Node):
    left: Any
    right: Any

    def __str__(self) -> str:
        return f"{self.left} AND {self.right}"


@dataclass(frozen=True)
class Or(Node):
    left: Any
    right: Any

    def __str__(self) -> str:
        return f"({self.left} OR {self.right})"


@dataclass(frozen=True)
class Not(Node):
    operand: Any

    def __str__(self) -> str:
        return f"NOT ({self.operand})"


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
    partition_by: tuple[str, ...] = ()
    group_by: tuple[str, ...] = ()
    window: Window | None = None
    streams: tuple[str, ...] = ()
