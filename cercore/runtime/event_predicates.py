"""Predicates between events (``b.price > s.price``, ``r.v < NEXT(r).v``), checked while the
enumerator walks the tECS.

Semantics (Foundations §3, docs/DESIGN.md): a complex event satisfies the predicates iff some
valuation producing it makes each one hold for every combination of events bound to the
variables it names (``NEXT(r)``: every two consecutive events bound to r); a predicate whose
variables bind nothing holds vacuously.

The automaton reads one event at a time and cannot compare two; but it knows, for each event
it marks, which variables bind it. Each OUTPUT node of the tECS carries a *binding label*: the
set of (predicate) variables of the atoms whose marked transitions produced it -- from the
determinised state and the letter, ``BetweenPlan.label``. When every run through that
transition binds the event to the same variables (the common case: ``SELL AS s ; BUY AS b``,
``BUY+ AS r``), the valuation of every complex event through the node is fixed there, so the
enumerator (Algorithm 2, walking from the last event back to the first) checks each
combination as soon as its earliest event is bound, and abandons a failing branch with
everything below it: a complex event that fails costs the walk up to its first failing pair.
``+`` variables are checked pair by pair as each bound event joins, ``NEXT(r)`` on each
consecutive pair. A node whose event different runs bind differently gets the label
``AMBIGUOUS``: from there on the path is not checked incrementally, and the complex event is
checked whole at the bottom (``EventPredicateCheck``: every valuation, from the automaton).

Every check evaluates the predicate layer's scalar form (``cercore.predicates.scalar_leaf``)
over the terms' values (``TermValues``), so arithmetic, nulls and comparisons mean exactly
what they mean inside ``X[...]``; the Cython kernel evaluates comparisons of numeric terms
and literals itself, with the same meaning (``cercore_fast/evaluator.pyx``), and calls these
closures for the rest.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import product

from cercore.automata.cea import MARK, TRUE_LABEL
from cercore.ceql import ast
from cercore.ceql.terms import event_terms, rename_terms
from cercore.interface.constants import AMBIGUOUS, NOT_READ
from cercore.predicates import COMPARISONS, scalar_leaf
from cercore.runtime.bindings import BindingSolver
from cercore.runtime.term_values import TermValues
from cercore.types import AttrType

__all__ = ["AMBIGUOUS", "BetweenPlan", "EventPredicateCheck", "IncrementalCheck",
           "between_events", "computed_by_kernel", "new_combinations_hold"]

MAX_LABELLED = 30  # variables a label can name (a bit each, in an int32)

_NUMERIC = (AttrType.INT, AttrType.DOUBLE)


class Check:
    """One predicate, compiled: its variables (ids into the plan's, each read alone or as
    (event, next) when a term says ``NEXT``), its terms, and its scalar form over a row of
    term values."""

    def __init__(self, compare: ast.Compare, vid: dict[str, int],
                 types: dict[str, AttrType]) -> None:
        terms = list(dict.fromkeys(event_terms(compare)))
        names = list(dict.fromkeys(t.var for t in terms))
        self.compare = compare
        self.vids = tuple(vid[v] for v in names)
        self.paired = tuple(any(t.next for t in terms if t.var == v) for v in names)
        # term i: (index of its variable in vids, 0 = the event / 1 = the next one, attribute)
        self.terms = [(names.index(t.var), int(t.next), t.attr) for t in terms]
        self.keys = [f"\0{i}" for i in range(len(terms))]
        self.fn = _scalar_form(compare, self.keys)
        self.compiled = _compiled_form(compare, terms, types)
        self.fast = None if self.compiled is None else _fast_form(self.compiled, self.terms)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        del state["fn"], state["fast"]  # closures: compiled again when loaded
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.fn = _scalar_form(self.compare, self.keys)
        self.fast = None if self.compiled is None else _fast_form(self.compiled, self.terms)

    def holds(self, combo: tuple[tuple[int, int], ...], values: TermValues) -> bool:
        """On one combination: per variable, the (event, next event) positions it reads."""
        lists, base = values.lists, values.base
        if self.fast is not None:
            return self.fast(combo, lists, base)
        return self.fn({key: lists[attr][combo[k][side] - base]
                        for key, (k, side, attr) in zip(self.keys, self.terms)})

    def holds_on(self, valuation: dict[int, list[int]], values: TermValues) -> bool:
        """On a whole valuation (variable id -> its positions, in order): every combination."""
        choices = []
        for k, v in enumerate(self.vids):
            bound = valuation.get(v, [])
            choices.append(list(zip(bound, bound[1:])) if self.paired[k]
                           else [(p, p) for p in bound])
        value = values.value  # (TermValues, or a store view's events: _ViewValues)
        return all(self.fn({key: value(attr, combo[k][side])
                            for key, (k, side, attr) in zip(self.keys, self.terms)})
                   for combo in product(*choices))


def _scalar_form(compare, keys: list[str]):
    """``row -> bool``: the predicate layer's scalar form of ``compare`` over a row whose
    ``keys[i]`` holds the value of its i-th term."""
    names = {t: k for t, k in zip(dict.fromkeys(event_terms(compare)), keys)}
    return scalar_leaf(rename_terms(compare, lambda t: ast.AttrRef(names[t])))


def _fast_form(form, terms: list[tuple[int, int, str]]):
    """``(combo, lists, base) -> bool`` for a compiled form (``_compiled_form``) of two
    leaves: the same comparison as the Cython kernel's, read straight from the term values'
    lists -- null is false, two ints compare as ints, anything with a double as doubles (what
    ``scalar_leaf`` does, without its general machinery). None for arithmetic (the scalar
    closure computes it)."""
    if form[1][0] == "expr" or form[2][0] == "expr":
        return None
    op = COMPARISONS[form[0]]
    mixed = form[1][2] != form[2][2]  # an int beside a double: both read as doubles

    def operand(side):
        if side[0] == "const":
            value = float(side[1]) if mixed else side[1]
            return lambda combo, lists, base: value
        k, at, attr = terms[side[1]]
        if mixed:
            return lambda combo, lists, base: (
                None if (v := lists[attr][combo[k][at] - base]) is None else float(v))
        return lambda combo, lists, base: lists[attr][combo[k][at] - base]

    left, right = operand(form[1]), operand(form[2])

    def compare(combo, lists, base) -> bool:
        a = left(combo, lists, base)
        if a is None:
            return False
        b = right(combo, lists, base)
        return b is not None and op(a, b)
    return compare


# the most steps of an operand the kernel computes (``MAX_STEPS`` in cercore_fast/arithmetic.pxd)
MAX_STEPS = 8


def _compiled_leaf(e, terms: list[ast.EventAttr], types: dict[str, AttrType]):
    """A numeric term (``("term", i, is_double)``) or number (``("const", value,
    is_double)``) as the kernel reads it; None otherwise."""
    if isinstance(e, ast.EventAttr) and types.get(e.attr) in _NUMERIC:
        return ("term", terms.index(e), types[e.attr] is AttrType.DOUBLE)
    if isinstance(e, ast.Literal) and type(e.value) in (int, float) \
            and (type(e.value) is float or -2**63 <= e.value < 2**63):
        return ("const", e.value, type(e.value) is float)
    return None


def compiled_operand(e, terms: list[ast.EventAttr], types: dict[str, AttrType]):
    """An operand as the kernels compute it (cercore_fast/arithmetic.pxd, for the check
    between events and the trend kernel's predicates on adjacent events): a leaf
    (``_compiled_leaf``), or arithmetic over leaves -- ``+ - * / %`` and unary minus -- as
    ``("expr", steps, is_double)``: its postfix steps, ``("leaf", leaf)`` or
    ``(operator, is_double)`` (``"neg"`` for unary minus), each step's value a double when
    one of its operands is (as the predicate layer computes it); None otherwise."""
    steps: list[tuple] = []

    def walk(e) -> bool | None:
        leaf = _compiled_leaf(e, terms, types)
        if leaf is not None:
            steps.append(("leaf", leaf))
            return leaf[2]
        if isinstance(e, ast.Neg):
            d = walk(e.operand)
            if d is not None:
                steps.append(("neg", d))
            return d
        if isinstance(e, ast.BinOp):
            a = walk(e.left)
            b = None if a is None else walk(e.right)
            if b is not None:
                steps.append((e.op, a or b))
                return a or b
        return None

    is_double = walk(e)
    if is_double is None or len(steps) > MAX_STEPS:
        return None
    return steps[0][1] if len(steps) == 1 else ("expr", tuple(steps), is_double)


def computed_by_kernel(compare: ast.Compare, types: dict[str, AttrType]) -> bool:
    """Whether the Cython check computes ``compare`` itself (else it calls the scalar closure,
    with the GIL, for each combination)."""
    return _compiled_form(compare, list(dict.fromkeys(event_terms(compare))), types) is not None


def _compiled_form(compare, terms: list[ast.EventAttr], types: dict[str, AttrType]):
    """(operator, left, right) for the Cython kernel when ``compare`` compares two numeric
    operands (``compiled_operand``: terms, numbers and arithmetic over them, computed in
    int64 or double as the predicate layer computes them; an int64 overflow asks the scalar
    closure), or two string terms for (in)equality (read as their codes); None otherwise
    (the kernel calls the scalar closure)."""
    if not isinstance(compare, ast.Compare) or compare.op not in COMPARISONS:
        return None
    if compare.op in ("==", "!=") and all(
            isinstance(e, ast.EventAttr) and types.get(e.attr) is AttrType.STRING
            for e in (compare.left, compare.right)):
        # two strings: equal exactly when their codes are (TermValues interns them)
        return (compare.op, ("term", terms.index(compare.left), False),
                ("term", terms.index(compare.right), False))
    left = compiled_operand(compare.left, terms, types)
    right = None if left is None else compiled_operand(compare.right, terms, types)
    return None if right is None else (compare.op, left, right)


class BetweenPlan:
    """The checked predicates of a query, compiled once, and the binding labels of its
    marked transitions."""

    def __init__(self, predicates: tuple[ast.Compare, ...], types: dict[str, AttrType],
                 atom_variables: dict[int, frozenset[str]]) -> None:
        self.variables = sorted({t.var for p in predicates for t in event_terms(p)})
        vid = {v: i for i, v in enumerate(self.variables)}
        self.checks = [Check(p, vid, types) for p in predicates]
        self.attributes = sorted({attr for c in self.checks for _, _, attr in c.terms})
        # atom id -> the ids of the predicates' variables it binds
        self.atom_vids = {a: frozenset(vid[v] for v in names if v in vid)
                          for a, names in atom_variables.items()}
        # label -> (the variable ids it binds, the checks that read one of them, in order)
        self._labels: dict[int, tuple[frozenset[int], tuple[int, ...]]] = {}

    def label(self, cea, subset, atom_mask: int) -> int:
        """The binding label of the marking successor of det state ``subset`` (CEA states)
        on an event satisfying ``atom_mask``: ``1 + sum(1 << v)`` over the (predicate)
        variables every marking move binds the event to -- one number whatever the order
        labels are met in, so both backends build the same nodes -- or AMBIGUOUS when moves
        disagree (or the query has more than MAX_LABELLED variables)."""
        sets = {self.atom_vids.get(label, frozenset())
                for s in subset for label, mark, _ in cea.transitions[s]
                if mark == MARK and (label == TRUE_LABEL or (atom_mask >> label) & 1)}
        if len(sets) != 1 or len(self.variables) > MAX_LABELLED:
            return AMBIGUOUS
        return 1 + sum(1 << v for v in next(iter(sets)))

    def label_info(self, label: int) -> tuple[frozenset[int], tuple[int, ...]]:
        """(the variable ids a label binds, the checks that read one of them)."""
        info = self._labels.get(label)
        if info is None:
            bound = frozenset(v for v in range(len(self.variables)) if (label - 1) >> v & 1)
            info = self._labels[label] = (bound, tuple(
                i for i, c in enumerate(self.checks) if bound & set(c.vids)))
        return info

    def holds_on(self, valuation: dict[str, list[int]], values: TermValues) -> bool:
        """A whole valuation (variable name -> positions) satisfies every predicate."""
        by_id = {self.variables.index(v): ps for v, ps in valuation.items()
                 if v in self.variables}
        return all(c.holds_on(by_id, values) for c in self.checks)


class IncrementalCheck:
    """The enumerator's side of the check: the events bound so far on the current path, by
    variable, with their depth on the path, so that backtracking (``cut``) restores them."""

    def __init__(self, plan: BetweenPlan, values: TermValues, full) -> None:
        self.plan = plan
        self.values = values
        self.full = full  # (start, end, positions) -> bool: the whole check, every valuation
        n = len(plan.variables)
        self.bound: list[list[int]] = [[] for _ in range(n)]  # positions, latest first
        self.depths: list[list[int]] = [[] for _ in range(n)]
        self.ambiguous_at = -1  # depth of the path's first AMBIGUOUS node, or -1
        self.checks = 0  # nodes whose event was checked
        self.pruned = 0  # branches abandoned (complex events dropped at the bottom included)

    def cut(self, depth: int) -> None:
        """Back to a path of ``depth`` events."""
        for b, d in zip(self.bound, self.depths):
            while d and d[-1] >= depth:
                d.pop()
                b.pop()
        if self.ambiguous_at >= depth:
            self.ambiguous_at = -1

    def push(self, position: int, label: int, depth: int) -> bool:
        """The event at ``position`` joins the path at ``depth`` (every event already on it is
        later): False when a combination it completes fails (abandon the branch)."""
        if self.ambiguous_at >= 0:
            return True
        if label <= AMBIGUOUS:  # (an unlabelled node: checked whole)
            self.ambiguous_at = depth
            return True
        plan = self.plan
        new, todo = plan.label_info(label)
        if todo:
            self.checks += 1
            for i in todo:
                if not new_combinations_hold(plan.checks[i], position, new, self.bound,
                                              self.values):
                    self.pruned += 1
                    return False
        for v in new:
            self.bound[v].append(position)
            self.depths[v].append(depth)
        return True

    def new_combinations_hold(self, check: int, position: int, new: frozenset[int],
                              bound: list[list[int]]) -> bool:
        """``new_combinations_hold`` of the plan's check number ``check`` (what a compiled
        enumerator calls for a check it does not compile)."""
        return new_combinations_hold(self.plan.checks[check], position, new, bound, self.values)

    def accepts(self, start: int, end: int, positions) -> bool:
        """At the bottom of a path: True, or the whole check when an AMBIGUOUS node left part
        of it unchecked."""
        if self.ambiguous_at < 0:
            return True
        if self.full(start, end, positions):
            return True
        self.pruned += 1
        return False


def new_combinations_hold(check: Check, position: int, new: frozenset[int],
                          bound: list[list[int]], values: TermValues) -> bool:
    """The combinations of ``check`` the event at ``position`` (bound to the variables
    ``new``) completes, given the events already bound (all later): each variable of ``new``
    takes the new event (or, read with NEXT, the pair it starts), the others what they had.
    Disjoint: variables before the i-th new one keep their old elements, the i-th takes its
    new one, those after it either (the order cercore_fast/between.pyx follows too)."""
    vids, paired = check.vids, check.paired
    news = []
    for k, v in enumerate(vids):
        if v not in new:
            news.append(None)
        elif not paired[k]:
            news.append((position, position))
        else:
            b = bound[v]
            news.append((position, b[-1]) if b else None)
    holds = check.holds
    if len(vids) == 1:  # one variable (r.v < NEXT(r).v): its new element alone
        return news[0] is None or holds((news[0],), values)
    olds = [_elements(bound[v], paired[k]) for k, v in enumerate(vids)]
    if len(vids) == 2:
        n0, n1 = news
        if n0 is not None:
            for e in olds[1]:
                if not holds((n0, e), values):
                    return False
            if n1 is not None and not holds((n0, n1), values):
                return False
        if n1 is not None:
            for e in olds[0]:
                if not holds((e, n1), values):
                    return False
        return True
    for i, element in enumerate(news):
        if element is None:
            continue
        lists = [olds[j] if j < i else [element] if j == i
                 else olds[j] + ([news[j]] if news[j] is not None else [])
                 for j in range(len(olds))]
        for combo in product(*lists):
            if not holds(combo, values):
                return False
    return True


def _elements(b: list[int], paired: bool) -> list[tuple[int, int]]:
    """A variable's elements so far (``b``: its positions, latest first): each event, or
    (read with NEXT) each consecutive pair (event, next event)."""
    if paired:
        return [(b[i + 1], b[i]) for i in range(len(b) - 1)]
    return [(p, p) for p in b]


class EventPredicateCheck:
    """The whole check of a complex event, over every valuation that produces it (from the
    automaton): what an AMBIGUOUS path needs at its bottom, and what ``ce.bindings`` reads."""

    def __init__(self, plan: BetweenPlan, values: TermValues, solver: BindingSolver,
                 read_letter: int) -> None:
        self.plan = plan
        self.values = values
        self.solver = solver  # with every variable wanted
        self.not_read = read_letter  # the letter of events the query does not read

    def _passing(self, view, start: int, end: int, positions, values=None) -> Iterator[dict]:
        """The valuations producing the complex event that satisfy every predicate (terms
        read from ``values``, by default the view's events)."""
        values = _ViewValues(view) if values is None else values
        span = view.span(start, end)
        pid = next(p for pos, _, p in span if pos == end)
        mine = [(pos, letter) for pos, letter, p in span
                if p == pid and letter != self.not_read]
        for valuation in self.solver.valuations(mine, tuple(positions)):
            if self.plan.holds_on(valuation, values):
                yield valuation

    def holds(self, view, start: int, end: int, positions) -> bool:
        """While it is enumerated (its events are in ``TermValues``)."""
        return next(self._passing(view, start, end, positions, self.values), None) is not None

    def holds_in(self, store, binder, start: int, end: int, positions) -> bool:
        """``holds`` over a view of ``store`` (the whole check an enumerator calls for a path
        it could not check as it walked)."""
        return self.holds(store.view(binder), start, end, positions)

    def bindings(self, view, ce) -> dict[str, tuple[int, ...]]:
        """``ce.bindings`` under predicates between events: the union over the valuations
        that satisfy them (the others do not produce the complex event)."""
        found: dict[str, set[int]] = {}
        for valuation in self._passing(view, ce.start, ce.end, ce.positions):
            for v, ps in valuation.items():
                found.setdefault(v, set()).update(ps)
        return {v: tuple(sorted(ps)) for v, ps in sorted(found.items())}


class _ViewValues:
    """``TermValues.value`` read from a store view: a complex event's bindings may be read
    long after the check, when its positions have left ``TermValues``."""

    def __init__(self, view) -> None:
        self.view = view

    def value(self, attribute: str, position: int):
        return self.view.event(position).attributes.get(attribute)


def between_events(query, encoder, store, typed: bool) -> EventPredicateCheck | None:
    """The predicates between events an engine checks (those ``PARTITION BY`` does not
    guarantee), None without any: their plan, and the values of the attributes they read,
    fed and pruned with the engine's ``store`` (``typed``: arrays for a compiled check)."""
    analysed = query.analysed
    between = analysed.checked_predicates
    if not between:
        return None
    variables = {x.id: x.variables for x in analysed.atoms}
    types = query.schema.attribute_types()
    plan = BetweenPlan(between, types, variables)
    values = store.terms = TermValues(types, plan.attributes, typed=typed)
    return EventPredicateCheck(plan, values, BindingSolver(
        query.cea, variables, encoder.atom_masks, None), NOT_READ)

