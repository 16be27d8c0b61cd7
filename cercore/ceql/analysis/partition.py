"""The PARTITION BY group that equalities between events imply, and the equalities a
partition already guarantees (the engine need not check them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cercore.ceql import ast
from cercore.ceql.analysis.formulas import (
    _absent_only,
    _absent_read,
    _bindable,
    _children,
    _filter_nodes,
    _ties,
    atom_variables,
)
from cercore.types import AttrType

if TYPE_CHECKING:  # (annotations only: the schema layer sits above this one)
    from cercore.schema import Schema


def implied_partition(query: ast.Query, schema: Schema, predicates: tuple[ast.Compare, ...]
                      ) -> tuple[str, ...] | None:
    """A PARTITION BY group implied by equality predicates between events, so that their
    check costs nothing per event: when ``x.a = y.b`` equalities connect the variables of
    every atom, each type has one key attribute, and the pattern has no OR, NOT, ':' or
    STRICT (every variable is bound in every match, and adjacency is not read), the events
    of a complex event that satisfies them share one key value -- so evaluating each key
    apart loses nothing, and the predicates are still checked. None when that does not
    hold (then they are only checked per complex event)."""
    if not predicates or query.strategy == "STRICT":
        return None
    body = query.formula
    # (atom, its variables, inside an ABSENT, under iteration)
    atoms: list[tuple[ast.EventAtom, set[str], bool, bool]] = []
    stack: list[tuple[ast.Formula, frozenset[str], bool, bool]] = [
        (body, frozenset(), False, False)]
    while stack:
        f, names, absent, iterated = stack.pop()
        if isinstance(f, ast.Or | ast.Not | ast.Contig) or (
                isinstance(f, ast.Iter | ast.Repeat) and f.contiguous):
            return None
        if isinstance(f, ast.EventAtom):
            atoms.append((f, set(atom_variables(f)) | names, absent, iterated))
        elif isinstance(f, ast.Filter) and any(
                isinstance(x, ast.FilterOr) for x in _filter_nodes(f.filter)):
            return None
        if isinstance(f, ast.Absent):  # its atoms are named by its own variables only
            names, absent = frozenset(), True
        iterated = iterated or isinstance(f, ast.Iter | ast.Repeat)
        stack += [(c, names | {f.var} if isinstance(f, ast.As) else names, absent,
                   iterated) for c in _children(f)]
    parent: dict[str, str] = {}

    def root(v: str) -> str:
        while parent.get(v, v) != v:
            v = parent[v]
        return v

    key: dict[str, str] = {}  # event type -> its key attribute
    bindable = _bindable(body)
    absent_vars = _absent_only(body)
    read = _absent_read(body)
    to_absent: list[tuple[str, str]] = []  # (variable an ABSENT reads, present variable)
    for c in predicates:
        if not _ties(c):
            continue  # (x.a = x.b compares each event of x with itself, never two events)
        for e in (c.left, c.right):
            for t in bindable.get(e.var, ()):
                if key.setdefault(t, e.attr) != e.attr:
                    return None  # two key attributes for one type
        sides = (c.left.var in absent_vars, c.right.var in absent_vars)
        if sides == (False, False):
            parent[root(c.left.var)] = root(c.right.var)
        elif sides == (True, False):
            to_absent.append((c.left.var, c.right.var))
        elif sides == (False, True):
            to_absent.append((c.right.var, c.left.var))
        # (two absent variables: they bind nothing, so they tie nothing)
        # a name an ABSENT shares with present elements ties its absent atoms too
        for x, y in ((c.left.var, c.right.var), (c.right.var, c.left.var)):
            if x in read and sides == (False, False):
                to_absent.append((x, y))
    present = [(t, names) for t, names, absent, _ in atoms if not absent]
    if parent:
        component = {root(v) for v in parent}
        if len(component) != 1:
            return None
        linked = set(parent) | component
    elif len(present) == 1 and not any(it for _, _, ab, it in atoms if not ab) \
            and to_absent:
        linked = set(present[0][1])  # one present event: nothing to tie among them
    else:
        return None
    # an absent atom is tied when one of its variables equals a tied present one
    linked_absent = {a for a, other in to_absent if other in linked}
    for atom, names, absent, _ in atoms:
        t = atom.event_type
        if not names & (linked_absent if absent else linked) or t not in key \
                or not schema.event_types[t].has(key[t]):
            return None
    attrs = sorted(set(key.values()))
    if len({schema.attribute_types()[a] for a in attrs}) != 1:
        return None  # keys of one type only, so equal values are one key
    # order the group so that each type's first attribute in it is its key
    before = {a: {b for t, k in key.items() if k == a for b in attrs
                  if b != a and schema.event_types[t].has(b)} for a in attrs}
    group: list[str] = []
    while before:
        ready = sorted(a for a in before if not any(a in later for later in
                                                    before.values()))
        if not ready:
            return None
        group.append(ready[0])
        del before[ready[0]]
    return tuple(group)


def partition_guarantees(c: ast.Compare, partition_by: tuple[tuple[str, ...], ...],
                         schema: Schema, bindable: dict[str, set[str]]) -> bool:
    """Does evaluating each PARTITION BY key apart already make ``c`` hold on every complex
    event? True for an equality ``x.a = y.b`` (NEXT allowed) when one group keys every type x
    can bind by ``a`` and every type y can bind by ``b`` (a type with none of the group's
    attributes is never evaluated), and ``a`` and ``b`` are one type of int, bool or string:
    then partition keys are equal exactly when ``=`` holds (a null key joins no partition, as
    ``=`` on null is false). Doubles are left to the check: NaN is one key but never equal."""
    if c.op != "==" or not all(isinstance(e, ast.EventAttr) for e in (c.left, c.right)):
        return False
    types = schema.attribute_types()
    kind = {types.get(c.left.attr), types.get(c.right.attr)}
    if len(kind) != 1 or next(iter(kind)) not in (AttrType.INT, AttrType.BOOL,
                                                   AttrType.STRING):
        return False

    def keyed_by(group: tuple[str, ...], e: ast.EventAttr) -> bool:
        for t in bindable.get(e.var, ()):
            et = schema.event_types[t]
            if next((a for a in group if et.has(a)), e.attr) != e.attr:
                return False
        return True

    return any(keyed_by(g, c.left) and keyed_by(g, c.right) for g in partition_by)
