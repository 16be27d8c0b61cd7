"""Predicates between events (``b.price > s.price``, ``l.v < NEXT(l).v``), checked on complex
events.

The automaton reads one event at a time, so it cannot compare two events; the engine checks
these predicates on each complex event the evaluator enumerates, before selection strategies
and LIMIT see it (docs/DESIGN.md). Semantics (Foundations §3): a complex event satisfies the
predicates iff some valuation producing it makes every predicate hold for every combination of
events bound to the variables it names; ``NEXT(l)`` pairs each event bound to l with the next
one bound to l. A predicate whose variables bind nothing holds vacuously.

Valuations come from the automaton (``BindingSolver.valuations``); each predicate is evaluated
over all its combinations at once by the unary-predicate evaluator (``evaluate_leaf``), after
renaming each ``x.attr`` term to a column, so arithmetic, nulls and comparisons mean exactly
what they mean inside ``X[...]``. The cost is per complex event enumerated: its span, its
valuations and the combinations of bound events (``explain`` says so).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import product
from typing import Any

import numpy as np

from cercore.ceql import ast
from cercore.ceql.terms import event_terms, rename_terms
from cercore.input.columns import Columns
from cercore.predicates import evaluate_leaf
from cercore.runtime.bindings import BindingSolver
from cercore.types import INT64_MAX, INT64_MIN, AttrType

__all__ = ["EventPredicateCheck"]


def _as_columns(e: Any, names: dict[ast.EventAttr, str]) -> Any:
    """``e`` with each event term replaced by the attribute column that holds its values."""
    return rename_terms(e, lambda t: ast.AttrRef(names[t]))


class _Predicate:
    """One predicate, ready to evaluate over the combinations of one valuation."""

    def __init__(self, compare: ast.Compare) -> None:
        terms = list(dict.fromkeys(event_terms(compare)))
        self.terms = terms
        self.columns = {t: f"\0{k}" for k, t in enumerate(terms)}
        self.leaf = _as_columns(compare, self.columns)
        self.variables = list(dict.fromkeys(t.var for t in terms))
        self.paired = {t.var for t in terms if t.next}  # variables read as (event, next)

    def holds(self, valuation: dict[str, list[int]], event, types: dict[str, AttrType]
              ) -> bool:
        choices = []
        for v in self.variables:
            bound = valuation.get(v, [])
            choices.append(list(zip(bound, bound[1:])) if v in self.paired
                           else [(p, p) for p in bound])
        combos = list(product(*choices))
        if not combos:  # a variable binds nothing (or one event, for NEXT): vacuous
            return True
        at = {v: k for k, v in enumerate(self.variables)}
        values: dict[str, list] = {}
        valid: dict[str, list[bool]] = {}
        for term, name in self.columns.items():
            k, side = at[term.var], 1 if term.next else 0
            vals, oks = [], []
            for combo in combos:
                x = event(combo[k][side]).attributes.get(term.attr)
                vals.append(x)
                oks.append(x is not None)
            values[name] = _column(vals, types[term.attr])
            valid[name] = np.array(oks, dtype=bool)
        return bool(evaluate_leaf(self.leaf, Columns(len(combos), values, valid)).all())


def _column(values: list, kind: AttrType) -> np.ndarray:
    """Python values of one declared type as the column the unary evaluator expects (nulls as
    placeholders; their validity is False)."""
    if kind is AttrType.BOOL:
        return np.array([bool(x) for x in values], dtype=bool)
    if kind is AttrType.DOUBLE:
        return np.array([0.0 if x is None else float(x) for x in values], dtype=np.float64)
    if kind is AttrType.INT:
        ints = [0 if x is None else int(x) for x in values]
        if all(INT64_MIN <= x <= INT64_MAX for x in ints):
            return np.array(ints, dtype=np.int64)
        out = np.empty(len(ints), dtype=object)
        out[:] = ints  # exact beyond int64, as the unary evaluator keeps it
        return out
    out = np.empty(len(values), dtype=object)
    out[:] = ["" if x is None else x for x in values]
    return out


class EventPredicateCheck:
    """``holds(view, start, end, positions)``: does the complex event satisfy every predicate
    between events?"""

    def __init__(self, predicates: tuple[ast.Compare, ...], types: dict[str, AttrType],
                 solver: BindingSolver, read_letter: int) -> None:
        self.predicates = [_Predicate(p) for p in predicates]
        self.types = types  # attribute -> its declared type (one per schema)
        self.solver = solver  # with every variable wanted
        self.not_read = read_letter  # the letter of events the query does not read

    def _passing(self, view, start: int, end: int, positions) -> Iterator[dict]:
        """The valuations producing the complex event that satisfy every predicate."""
        span = view.span(start, end)
        pid = next(p for pos, _, p in span if pos == end)
        mine = [(pos, letter) for pos, letter, p in span
                if p == pid and letter != self.not_read]
        for valuation in self.solver.valuations(mine, tuple(positions)):
            if all(p.holds(valuation, view.event, self.types) for p in self.predicates):
                yield valuation

    def holds(self, view, start: int, end: int, positions) -> bool:
        return next(self._passing(view, start, end, positions), None) is not None

    def bindings(self, view, ce) -> dict[str, tuple[int, ...]]:
        """``ce.bindings`` under predicates between events: the union over the valuations
        that satisfy them (the others do not produce the complex event)."""
        found: dict[str, set[int]] = {}
        for valuation in self._passing(view, ce.start, ce.end, ce.positions):
            for v, ps in valuation.items():
                found.setdefault(v, set()).update(ps)
        return {v: tuple(sorted(ps)) for v, ps in sorted(found.items())}
