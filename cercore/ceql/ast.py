"""The abstract syntax of CEQL queries and stream declarations.

Every node records where it starts in the source (``line``/``column``, 1-based; ``None`` for
nodes built by hand). Positions are excluded from equality, so two queries that differ only
in layout compare equal.

Formula grammar (CORE §2.2 plus CORE's C++ extensions)::

    φ ::= R | S>R | φ AS X | φ FILTER F | φ OR φ | φ ; φ | φ : φ | φ+ | φ:+ | NOT(φ) | (φ)
        | φ ; ABSENT(φ) ; φ | φ{n} | φ{n,m} | φ{n,} | φ:{n} | φ:{n,m} | φ:{n,}
    F ::= X[P] | E | F AND F | F OR F        -- atomic filters on variables, E between events
    P ::= predicate over one event's attributes (comparisons, LIKE, IN, AND/OR/NOT)
"""

from __future__ import annotations

from dataclasses import dataclass, field


def _pos():
    return field(default=None, compare=False, repr=False, kw_only=True)


@dataclass(frozen=True)
class Node:
    """Base of every node: where it starts in the source (keyword-only, outside equality)."""

    line: int | None = _pos()
    column: int | None = _pos()


# ---------------------------------------------------------------------------------------
# Value expressions and predicates (inside X[...])
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Literal(Node):
    """A constant: int, float, str or bool."""

    value: int | float | str | bool


@dataclass(frozen=True)
class AttrRef(Node):
    """An attribute of the event being tested, e.g. ``price``."""

    name: str


@dataclass(frozen=True)
class BinOp(Node):
    """Arithmetic: op in ``+ - * / %``."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Neg(Node):
    """Unary minus."""

    operand: Expr


@dataclass(frozen=True)
class EventAttr(Node):
    """``x.attr`` in a predicate between events: the attribute of an event bound to x;
    ``NEXT(x).attr`` (``next=True``): of the event bound to x right after it."""

    var: str
    attr: str
    next: bool = False


Expr = Literal | AttrRef | BinOp | Neg | EventAttr


@dataclass(frozen=True)
class Compare(Node):
    """``left op right`` with op in ``< <= > >= == !=``.

    The parser reads ``=`` as ``==`` and ``<>`` as ``!=``.
    """

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Like(Node):
    """``expr LIKE 'regex'``: unanchored regular-expression search."""

    operand: Expr
    pattern: str


@dataclass(frozen=True)
class InSet(Node):
    """``expr [NOT] IN {v1, v2, a..b}``. ``items`` holds Literals and Ranges."""

    operand: Expr
    items: tuple[Literal | Range, ...]
    negated: bool = False


@dataclass(frozen=True)
class Range(Node):
    """Inclusive range ``lo..hi`` (inside IN) or ``IN RANGE(lo, hi)``."""

    lo: Expr
    hi: Expr


@dataclass(frozen=True)
class InRange(Node):
    """``expr [NOT] IN RANGE(lo, hi)``, inclusive."""

    operand: Expr
    lo: Expr
    hi: Expr
    negated: bool = False


@dataclass(frozen=True)
class PredAnd(Node):
    left: Pred
    right: Pred


@dataclass(frozen=True)
class PredOr(Node):
    left: Pred
    right: Pred


@dataclass(frozen=True)
class PredNot(Node):
    operand: Pred


@dataclass(frozen=True)
class PredConst(Node):
    """TRUE / FALSE (appears after rewriting, and as literals ``true``/``false``)."""

    value: bool


Pred = Compare | Like | InSet | InRange | PredAnd | PredOr | PredNot | PredConst


# ---------------------------------------------------------------------------------------
# Filters: X[P] joined by AND / OR
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AtomicFilter(Node):
    """``X[P]``: every event bound to variable X satisfies P."""

    var: str
    pred: Pred


@dataclass(frozen=True)
class FilterAnd(Node):
    left: FilterExpr
    right: FilterExpr


@dataclass(frozen=True)
class FilterOr(Node):
    left: FilterExpr
    right: FilterExpr


@dataclass(frozen=True)
class EventPredicate(Node):
    """A predicate between events, ``b.price > s.price`` (Foundations §3): a comparison over
    ``EventAttr`` terms. A complex event satisfies it iff some valuation producing it makes it
    hold for every combination of events bound to the variables it names (``NEXT(l)``: for
    every two consecutive events bound to l)."""

    pred: Compare


FilterExpr = AtomicFilter | FilterAnd | FilterOr | EventPredicate


# ---------------------------------------------------------------------------------------
# CEL formulas
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EventAtom(Node):
    """An event type, optionally qualified by its stream (``S>R``)."""

    event_type: str
    stream: str | None = None


def qualified_name(stream: str, event_type: str) -> str:
    """The variable ``S>R``: the events of type R read from stream S. The AST spells a
    stream-qualified variable this way wherever a variable is named (AtomicFilter.var,
    ProjectionItem.var); AS names cannot contain '>'."""
    return f"{stream}>{event_type}"


@dataclass(frozen=True)
class As(Node):
    """``φ AS X``: X collects every position of φ."""

    formula: Formula
    var: str


@dataclass(frozen=True)
class Filter(Node):
    """``φ FILTER F``."""

    formula: Formula
    filter: FilterExpr


@dataclass(frozen=True)
class Or(Node):
    left: Formula
    right: Formula


@dataclass(frozen=True)
class Seq(Node):
    """``φ1 ; φ2`` (skip-till-any-match sequencing)."""

    left: Formula
    right: Formula


@dataclass(frozen=True)
class Contig(Node):
    """``φ1 : φ2`` (φ2 starts at the position right after φ1 ends)."""

    left: Formula
    right: Formula


@dataclass(frozen=True)
class Iter(Node):
    """``φ+`` (``contiguous=False``) or ``φ:+`` (``contiguous=True``)."""

    formula: Formula
    contiguous: bool = False


@dataclass(frozen=True)
class Not(Node):
    """``NOT(φ)``: one event that does not match φ (an atom, possibly filtered)."""

    formula: Formula


@dataclass(frozen=True)
class Repeat(Node):
    """``φ{n}``, ``φ{n,m}``, ``φ{n,}`` (``hi`` None): n to m matches of φ in sequence, gaps
    allowed as in ``;``; ``φ:{n}`` ... (``contiguous``): each match right after the last, as
    in ``:``."""

    formula: Formula
    lo: int
    hi: int | None
    contiguous: bool = False


@dataclass(frozen=True)
class Absent(Node):
    """``ABSENT(φ)`` as an element of a ``;`` sequence: no event matching φ (one event: an
    atom, possibly with AS, or an OR of such) occurs between the elements around it. Its
    variables bind nothing; filters on them say which events count. ``deadline``
    (``ABSENT(φ) WITHIN 5 MINUTES`` at the end of a pattern): no such event within that span
    after the pattern's last event, reported once event time has passed it."""

    formula: Formula
    deadline: TimeWindow | AttrWindow | None = None


Formula = EventAtom | As | Filter | Or | Seq | Contig | Iter | Not | Absent | Repeat


# ---------------------------------------------------------------------------------------
# Query clauses
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProjectionItem(Node):
    """``x`` or ``x[a, b]`` in the SELECT list."""

    var: str
    attributes: tuple[str, ...] | None = None


@dataclass(frozen=True)
class EventsWindow(Node):
    """``WITHIN n EVENTS``."""

    count: int


@dataclass(frozen=True)
class TimeWindow(Node):
    """``WITHIN 1 HOURS 30 MINUTES ...``; ``seconds`` is the total: an int when whole (exact,
    however large), else a float."""

    seconds: int | float


@dataclass(frozen=True)
class AttrWindow(Node):
    """``WITHIN n [attr]``: difference of ``attr`` between the last and first event ≤ n."""

    amount: int | float
    attribute: str


Window = EventsWindow | TimeWindow | AttrWindow

STRATEGIES = ("ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT")
CONSUME_POLICIES = ("ANY", "PARTITION", "NONE")


@dataclass(frozen=True)
class Query(Node):
    """A whole CEQL query.

    ``projection`` is ``"*"``, ``"NONE"`` or a tuple of ProjectionItem.
    ``partition_by`` is a tuple of groups; each group lists alternative attributes
    (``[a, b], [c]`` -> ``(("a", "b"), ("c",))``).
    ``strategy`` is None when the SELECT names none; ``consume`` is None when absent.
    """

    formula: Formula
    strategy: str | None = None
    projection: str | tuple[ProjectionItem, ...] = "*"
    streams: tuple[str, ...] = ()
    partition_by: tuple[tuple[str, ...], ...] = ()
    within: Window | None = None
    consume: str | None = None
    limit: int | None = None


# ---------------------------------------------------------------------------------------
# Declarations
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AttrDecl(Node):
    """``name:type``; type is ``int|double|string|bool|primary_time`` (lower case);
    ``unit``: the time unit of ``primary_time(ms)`` (``s``, ``ms``, ``us``, ``ns``), or None."""

    name: str
    type: str
    unit: str | None = None


@dataclass(frozen=True)
class EventDecl(Node):
    name: str
    attributes: tuple[AttrDecl, ...]


@dataclass(frozen=True)
class StreamDecl(Node):
    name: str
    events: tuple[EventDecl, ...]
