"""Walks over the query AST that every stage of the analysis reads: the elements of a
sequence, the variables a formula binds, the leaves of a FILTER, the ABSENT(...) spans."""

from __future__ import annotations

from cercore.ceql import ast


def _children(f: ast.Formula) -> list[ast.Formula]:
    if isinstance(f, (ast.As, ast.Filter, ast.Iter, ast.Not, ast.Absent, ast.Repeat)):
        return [f.formula]
    if isinstance(f, (ast.Or, ast.Seq, ast.Contig)):
        return [f.left, f.right]
    return []


def _subformulas(f: ast.Formula) -> list[ast.Formula]:
    """``f`` and every formula under it (iteratively)."""
    out, stack = [], [f]
    while stack:
        g = stack.pop()
        out.append(g)
        stack.extend(_children(g))
    return out


def _sequence(f: ast.Formula) -> list[ast.Formula]:
    """The elements of a chain of ``;`` (associative: ``(A ; B) ; C`` and ``A ; (B ; C)`` are
    both [A, B, C])."""
    if isinstance(f, ast.Seq):
        return _sequence(f.left) + _sequence(f.right)
    return [f]


def _leading_absence(f: ast.Formula) -> ast.Absent | None:
    """The ``ABSENT(ψ) WITHIN T`` that starts the whole pattern (under its FILTERs), if any."""
    while isinstance(f, ast.Filter):
        f = f.formula
    first = _sequence(f)[0]
    return first if isinstance(first, ast.Absent) and first.deadline is not None else None


def _trailing_absence(f: ast.Formula) -> ast.Absent | None:
    """The ``ABSENT(ψ) WITHIN T`` that ends the whole pattern (under its FILTERs), if any."""
    while isinstance(f, ast.Filter):
        f = f.formula
    last = _sequence(f)[-1]
    return last if isinstance(last, ast.Absent) and last.deadline is not None else None


def _has_looser_operator(f) -> bool:
    """Whether the formula has a ':' or OR, which bind looser than ';' (so a span written
    after them may sit inside one of their operands)."""
    if isinstance(f, (ast.Contig, ast.Or)):
        return True
    return any(_has_looser_operator(c) for c in _children(f))


def _single_event(f: ast.Formula) -> bool:
    """Does every match of ``f`` consist of exactly one event (what NOT accepts)?"""
    if isinstance(f, ast.EventAtom):
        return True
    if isinstance(f, (ast.As, ast.Filter)):
        return _single_event(f.formula)
    if isinstance(f, ast.Or):
        return _single_event(f.left) and _single_event(f.right)
    return False


def atom_variables(a: ast.EventAtom) -> tuple[str, ...]:
    """The variables an atom binds by itself: its event type R, and S>R when it reads R from
    stream S (``WHERE S>R`` binds R and S>R; ``WHERE R`` binds R only)."""
    if a.stream is None:
        return (a.event_type,)
    return (a.event_type, ast.qualified_name(a.stream, a.event_type))


def _bindable(f: ast.Formula, absent: bool = True) -> dict[str, set[str]]:
    """Variable -> event types whose positions it can collect inside ``f`` (NOT binds none).
    The variables of ABSENT(...) bind nothing either, but filters name them (``absent``:
    counted, without collecting anything into an enclosing AS)."""
    out: dict[str, set[str]] = {}

    def walk(g: ast.Formula) -> set[str]:
        if isinstance(g, ast.Not):
            return set()
        if isinstance(g, ast.Absent):
            if absent:
                walk(g.formula)
            return set()
        if isinstance(g, ast.EventAtom):
            for var in atom_variables(g):
                out.setdefault(var, set()).add(g.event_type)
            return {g.event_type}
        types: set[str] = set()
        for child in _children(g):
            types |= walk(child)
        if isinstance(g, ast.As):
            out.setdefault(g.var, set()).update(types)
        return types

    walk(f)
    return out


def _absent_read(f: ast.Formula) -> set[str]:
    """The variables ABSENT(...) elements read: ψ's own, and the names ψ shares with the
    present elements (``B ; ABSENT(B) ; C`` reads B in both). Filters on them say which
    absent events count."""
    inside: set[str] = set()
    for g in _subformulas(f):
        if isinstance(g, ast.Absent):
            inside |= set(_bindable(g.formula))
    return inside


def _absent_only(f: ast.Formula) -> set[str]:
    """The variables that only ABSENT(...) elements read (they bind no event)."""
    return _absent_read(f) - set(_bindable(f, absent=False))


def _unbound_hint(var: str) -> str | None:
    """For S>R that the WHERE clause does not read: say how it would."""
    stream, sep, event_type = var.partition(">")
    if not sep:
        return None
    return (f"{var} names the {event_type} events read from stream {stream}; write {var} in "
            f"the WHERE clause to read them (a plain {event_type} reads {event_type} from "
            f"every stream, and is filtered as {event_type}[...])")


def _ties(c: ast.Compare) -> bool:
    """Is ``c`` an equality ``x.a = y.b`` between two variables (no NEXT): one that can tie
    their events to one key?"""
    sides = (c.left, c.right)
    return c.op == "==" and all(isinstance(e, ast.EventAttr) and not e.next for e in sides) \
        and c.left.var != c.right.var


def _filter_leaves(fe: ast.FilterExpr, kind: type) -> list:
    """The leaves of a filter expression of one kind (AtomicFilter or EventPredicate), in
    order."""
    return [node for node in _filter_nodes(fe) if isinstance(node, kind)]


def _filter_nodes(fe: ast.FilterExpr) -> list:
    """Every node of a filter expression."""
    out, stack = [], [fe]
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, ast.FilterAnd | ast.FilterOr):
            stack += [node.right, node.left]
    return out


def _atomic_filters(fe: ast.FilterExpr) -> list[ast.AtomicFilter]:
    return _filter_leaves(fe, ast.AtomicFilter)


def _event_predicates(fe: ast.FilterExpr) -> list[ast.EventPredicate]:
    return _filter_leaves(fe, ast.EventPredicate)
