"""Queries in PrePP's fragment (§3.2): an ordered tree of SEQ / AND / OR over event types (each
type used once), conjunctive pairwise predicates, single-type filters and a time window.

Semantics are the paper's, made operational for checking: the OR operators are pushed up into
*branches* (OR-free SEQ/AND trees); a set of events is a match iff, for one branch, it has one
event of each of the branch's types, every pair is in the order the pair's lowest common
ancestor demands (SEQ: child order; AND: any), every predicate over two of its types holds, and
its time span is at most the window (inclusive). Events are totally ordered by ``(t, uid)``.

A *partial match over X* is the restriction of a possible match to the types in X: a set whose
types are exactly ``T(b) ∩ X`` for a branch b and which satisfies b's order, the predicates and
the window among its own events. Restrictions of matches are partial matches, which is what
makes predicate-filtered pulling sound; for OR-free queries the partial matches over X are the
matches of the projection π(q, X).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from cercore.ceql import ast
from cercore.network.errors import NetworkError
from cercore.predicates import scalar_leaf

OPERATORS = ("SEQ", "AND", "OR")


@dataclass(frozen=True)
class Leaf:
    """A primitive operator: one event type."""

    type: str

    def __str__(self) -> str:
        return self.type


@dataclass(frozen=True)
class Op:
    """A composite operator: ``kind`` in SEQ / AND / OR over ordered ``children``."""

    kind: str
    children: tuple[Node, ...]

    def __str__(self) -> str:
        return f"{self.kind}({', '.join(map(str, self.children))})"


Node = Leaf | Op

COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")


@dataclass(frozen=True)
class NetEvent:
    """One event of a (local or global) trace. ``uid`` identifies it network-wide; ``t`` is its
    integer occurrence time; ``node`` is the node that generated it."""

    uid: int
    type: str
    t: int
    node: Any = None
    attrs: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> tuple[int, int]:
        """The position of the event in the global trace's total order."""
        return (self.t, self.uid)

    def value(self, name: str) -> Any:
        """Attribute ``name`` (None when the event lacks it; ``t`` is the time unless an
        attribute of that name exists)."""
        if name in self.attrs:
            return self.attrs[name]
        return self.t if name == "t" else None




@dataclass(frozen=True)
class Predicate:
    """``left.left_attr op right.right_attr`` over two distinct event types."""

    left: str
    left_attr: str
    op: str
    right: str
    right_attr: str

    def __post_init__(self) -> None:
        if self.op == "=":
            object.__setattr__(self, "op", "==")
        if self.op not in COMPARISONS:
            raise NetworkError(f"predicate operator {self.op!r}: use one of "
                               f"{', '.join(COMPARISONS)}")
        if self.left == self.right:
            raise NetworkError(f"predicate {self}: PrePP predicates relate two different types "
                               "(fold single-type conditions into the type's filter)")

    @property
    def pair(self) -> frozenset[str]:
        return frozenset((self.left, self.right))

    @property
    def compare(self) -> ast.Compare:
        """The predicate as CEQL's predicate between events, ``left.left_attr op
        right.right_attr`` (event types are CEQL variables)."""
        return ast.Compare(self.op, ast.EventAttr(self.left, self.left_attr),
                           ast.EventAttr(self.right, self.right_attr))

    def __str__(self) -> str:
        op = "=" if self.op == "==" else self.op
        return f"{self.left}.{self.left_attr} {op} {self.right}.{self.right_attr}"


_LEFT, _RIGHT = "\0left", "\0right"  # the two sides' values, as the scalar form reads them


def pair_test(predicates: Iterable[Predicate]) -> Callable[[NetEvent, NetEvent], bool]:
    """``(a, b) -> bool``: whether every predicate holds for events ``a`` and ``b`` (of the
    predicates' two types, in either order), by the predicate layer's scalar form
    (:func:`cercore.predicates.scalar_leaf`): the meaning the engine gives them -- a missing
    or null attribute makes a predicate false, an int beside a double compares as a double."""
    tests = [(p.left, p.left_attr, p.right_attr,
              scalar_leaf(ast.Compare(p.op, ast.AttrRef(_LEFT), ast.AttrRef(_RIGHT))))
             for p in predicates]

    def holds(a: NetEvent, b: NetEvent) -> bool:
        for left, left_attr, right_attr, test in tests:
            x, y = (a, b) if a.type == left else (b, a)
            if not test({_LEFT: x.value(left_attr), _RIGHT: y.value(right_attr)}):
                return False
        return True
    return holds


@dataclass(frozen=True)
class Branch:
    """An OR-free alternative of a query: its types and the required order of type pairs."""

    types: frozenset[str]
    before: frozenset[tuple[str, str]]  # (u, v): the u event precedes the v event

    def order_ok(self, events: Sequence[NetEvent]) -> bool:
        for a, b in itertools.permutations(events, 2):
            if (a.type, b.type) in self.before and not a.key < b.key:
                return False
        return True

    def linear_extensions(self, types: Iterable[str]) -> list[tuple[str, ...]]:
        """Every total order of ``types`` that respects this branch's order."""
        todo = sorted(types)
        out: list[tuple[str, ...]] = []

        def extend(prefix: list[str], rest: list[str]) -> None:
            if not rest:
                out.append(tuple(prefix))
                return
            for i, t in enumerate(rest):
                if not any((u, t) in self.before for u in rest if u != t):
                    extend(prefix + [t], rest[:i] + rest[i + 1:])

        extend([], todo)
        return out


@dataclass(frozen=True)
class NetQuery:
    """A PrePP query. ``window`` is in the time unit of the events' ``t`` (and of the rates);
    ``filters`` maps a type to a CEQL predicate over its own attributes (e.g. ``"price > 10"``),
    folded into the type as §3.2 prescribes; ``time_attribute`` names ``t`` in CEQL."""

    root: Node
    window: float
    predicates: tuple[Predicate, ...] = ()
    filters: tuple[tuple[str, str], ...] = ()
    time_attribute: str = "t"

    def __post_init__(self) -> None:
        object.__setattr__(self, "predicates", tuple(self.predicates))
        filters = self.filters.items() if isinstance(self.filters, dict) else self.filters
        object.__setattr__(self, "filters", tuple(sorted(filters)))
        if not (isinstance(self.window, int | float) and math.isfinite(self.window)
                and self.window >= 0):
            raise NetworkError(f"the window must be a finite number >= 0, not {self.window!r}")
        seen: list[str] = []
        _check_tree(self.root, seen)
        dup = sorted({t for t in seen if seen.count(t) > 1})
        if dup:
            raise NetworkError(f"event type {dup[0]} is used twice; PrePP queries reference "
                               "each type at most once")
        known = set(seen)
        for p in self.predicates:
            for t in (p.left, p.right):
                if t not in known:
                    raise NetworkError(f"predicate {p} names {t}, which the pattern does not use")
        for t, _ in self.filters:
            if t not in known:
                raise NetworkError(f"filter on {t}, which the pattern does not use")

    # ---- structure --------------------------------------------------------------------
    @cached_property
    def types(self) -> tuple[str, ...]:
        """The leaf types, left to right."""
        out: list[str] = []
        _check_tree(self.root, out)
        return tuple(out)

    @cached_property
    def branches(self) -> tuple[Branch, ...]:
        return tuple(Branch(frozenset(ts), frozenset(before))
                     for ts, before in _branches(self.root))

    @property
    def filter_map(self) -> dict[str, str]:
        """Each filtered type's filter, as text."""
        return dict(self.filters)

    @cached_property
    def filter_predicates(self) -> dict[str, ast.Pred]:
        """Each filtered type's filter as a CEQL predicate (parsed once, on first use)."""
        from cercore.ceql.parser import parse_predicate

        return {t: parse_predicate(f) for t, f in self.filters}

    def predicates_over(self, types: Iterable[str]) -> tuple[Predicate, ...]:
        ts = set(types)
        return tuple(p for p in self.predicates if p.left in ts and p.right in ts)

    def project(self, types: Iterable[str]) -> NetQuery:
        """π(q, X): the leaves outside X deleted, empty composites deleted, single-child
        composites replaced by their child; the predicates over X and the window kept."""
        xs = frozenset(types)
        root = _project(self.root, xs)
        if root is None:
            raise NetworkError("a projection needs at least one type of the query")
        return NetQuery(root, self.window, self.predicates_over(xs),
                        tuple((t, f) for t, f in self.filters if t in xs), self.time_attribute)

    # ---- matching ---------------------------------------------------------------------
    def partial_shapes(self, types: Iterable[str]) -> dict[frozenset[str], tuple[Branch, ...]]:
        """For the partial matches over X: each possible set of types ``T(b) ∩ X`` (non-empty)
        with the branches that produce it."""
        xs = frozenset(types)
        out: dict[frozenset[str], list[Branch]] = {}
        for b in self.branches:
            k = b.types & xs
            if k:
                out.setdefault(k, []).append(b)
        return {k: tuple(v) for k, v in out.items()}

    def is_partial_match(self, events: Sequence[NetEvent], types: Iterable[str] | None = None,
                         *, use_predicates: bool = True) -> bool:
        """Whether ``events`` is a partial match over ``types`` (a match when ``types`` is
        None): distinct types forming some branch's ``T(b) ∩ X``, in its order, within the
        window and, with ``use_predicates``, satisfying the predicates among them."""
        xs = frozenset(self.types if types is None else types)
        ts = [e.type for e in events]
        if not ts or len(set(ts)) != len(ts) or not set(ts) <= xs:
            return False
        if max(e.t for e in events) - min(e.t for e in events) > self.window:
            return False
        if use_predicates and not self.predicates_hold(events):
            return False
        shape = frozenset(ts)
        return any(b.types & xs == shape and b.order_ok(events) for b in self.branches)

    def predicates_hold(self, events: Sequence[NetEvent]) -> bool:
        """Whether every predicate over two types of ``events`` holds (see :func:`pair_test`)."""
        by_type = {e.type: e for e in events}
        return all(pair_test((p,))(by_type[p.left], by_type[p.right]) for p in self.predicates
                   if p.left in by_type and p.right in by_type)

    # ---- rates (§3.2) -----------------------------------------------------------------
    def match_rate(self, rate: dict[str, float], pair_sigma, *, literal: bool = False) -> float:
        """R(q) by the paper's inductive formulas. ``pair_sigma(a, b)`` gives σ_{a,b}.
        ``literal=True`` applies σ(o_c) over every pair under each operator (re-applying the
        inner pairs, as printed); the default applies each pair once, at the lowest operator
        that joins it (the printed formulas count inner pairs again; docs/network.md)."""
        return _rate(self.root, rate, pair_sigma, literal)[0]

    def __str__(self) -> str:
        parts = [f"PATTERN {self.root}"]
        conds = [f"{t}[{f}]" for t, f in self.filters] + [str(p) for p in self.predicates]
        if conds:
            parts.append("WHERE " + " AND ".join(conds))
        parts.append(f"WITHIN {self.window:g}")
        return " ".join(parts)


def _check_tree(node: Node, out: list[str]) -> None:
    if isinstance(node, Leaf):
        if not isinstance(node.type, str) or not node.type:
            raise NetworkError(f"bad event type name {node.type!r}")
        out.append(node.type)
        return
    if not isinstance(node, Op) or node.kind not in OPERATORS:
        raise NetworkError(f"unknown operator {node!r}; PrePP queries use SEQ, AND and OR")
    if len(node.children) < 2:
        raise NetworkError(f"{node.kind} needs at least two operands")
    for c in node.children:
        _check_tree(c, out)


def _leaves(node: Node) -> list[str]:
    out: list[str] = []
    _check_tree(node, out) if isinstance(node, Op) else out.append(node.type)
    return out


def _branches(node: Node) -> list[tuple[set[str], set[tuple[str, str]]]]:
    if isinstance(node, Leaf):
        return [({node.type}, set())]
    alts = [_branches(c) for c in node.children]
    if node.kind == "OR":
        return [b for a in alts for b in a]
    out = []
    for combo in itertools.product(*alts):
        types = set().union(*(ts for ts, _ in combo))
        before = set().union(*(bf for _, bf in combo))
        if node.kind == "SEQ":
            for i, j in itertools.combinations(range(len(combo)), 2):
                before |= {(u, v) for u in combo[i][0] for v in combo[j][0]}
        out.append((types, before))
    return out


def _project(node: Node, xs: frozenset[str]) -> Node | None:
    if isinstance(node, Leaf):
        return node if node.type in xs else None
    kept = [c for c in (_project(c, xs) for c in node.children) if c is not None]
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else Op(node.kind, tuple(kept))


def _rate(node: Node, rate, pair_sigma, literal: bool) -> tuple[float, list[str]]:
    if isinstance(node, Leaf):
        return rate[node.type], [node.type]
    parts = [_rate(c, rate, pair_sigma, literal) for c in node.children]
    leaves = [t for _, ls in parts for t in ls]
    if literal:
        pairs = itertools.combinations(leaves, 2)
    else:  # only the pairs this operator joins: one leaf from each of two children
        pairs = ((a, b) for (_, la), (_, lb) in itertools.combinations(parts, 2)
                 for a in la for b in lb)
    sigma = math.prod(pair_sigma(a, b) for a, b in pairs)
    rates = [r for r, _ in parts]
    if node.kind == "AND":
        return sigma * len(parts) * math.prod(rates), leaves
    if node.kind == "SEQ":
        return sigma * math.prod(rates), leaves
    return sigma * sum(rates), leaves


def seq(*children: Node | str) -> Op:
    """``SEQ(...)``; strings are event types."""
    return Op("SEQ", tuple(_node(c) for c in children))


def and_(*children: Node | str) -> Op:
    return Op("AND", tuple(_node(c) for c in children))


def or_(*children: Node | str) -> Op:
    return Op("OR", tuple(_node(c) for c in children))


def _node(c: Node | str) -> Node:
    return Leaf(c) if isinstance(c, str) else c
