"""Static analysis of a trend aggregation query (COGRA §3): the pattern automaton over
variables, the predicate classes, the aggregates, the window, and the granularity choice.

Each pattern position is a *variable* (``Load L``; the type name when none is given), so a type
may occur several times under different variables (the renaming of Appendix C). The pattern
language is then local: a trend's variable string starts with ``start``, ends with ``end``, and
every consecutive pair ``(u, v)`` has ``u in preds[v]``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cercore.ceql import ast as ceql
from cercore.ceql.analysis import Spot, unstated_unit_warning
from cercore.ceql.guards import TRUE_GUARD, Guard, guard_and, guard_of
from cercore.ceql.regex import regex_problem
from cercore.ceql.terms import event_terms, rename_terms
from cercore.errors import CEQLSemanticError, did_you_mean
from cercore.predicates import COMPARISONS, MIRRORED, scalar_pred
from cercore.runtime.event_predicates import compiled_operand
from cercore.schema import Schema
from cercore.trends import ast
from cercore.trends.ast import condition_text
from cercore.types import INT64_MAX, AttrType, seconds_to_units

SEMANTICS_TEXT = {"any": "skip-till-any-match", "next": "skip-till-next-match",
                  "contiguous": "contiguous"}


@dataclass
class Var:
    """One pattern position: ``id`` indexes every per-variable array."""

    id: int
    name: str
    type: str
    local: list = field(default_factory=list)  # conditions on this variable's events alone
    guard: Guard = TRUE_GUARD  # their conjunction, over the plan's leaves


@dataclass(frozen=True)
class AdjacentPredicate:
    """A condition on adjacent events ``(p, s)`` of a trend, ``p`` bound to ``pred_var`` and
    its successor ``s`` bound to ``succ_var``: a CEQL predicate whose ``x.attr`` terms read
    ``p`` and ``NEXT(y).attr`` terms read ``s``. ``test((p attrs, s attrs))`` is its scalar
    form (``cercore.predicates.scalar_pred``)."""

    pred_var: int
    succ_var: int
    cond: Any
    test: Callable[[tuple[dict, dict]], bool]
    # (operator, predecessor side, successor side) as the compiled trend kernel computes the
    # condition (``kernel_operands``), or None: the kernel leaves the plan to the reference
    operands: tuple | None = None

    def holds(self, pred_attrs: dict, succ_attrs: dict) -> bool:
        return self.test((pred_attrs, succ_attrs))


def kernel_operands(cond: Any, types: dict[str, AttrType]) -> tuple | None:
    """``cond`` as the compiled trend kernel computes it: a comparison whose one side reads
    only the predecessor (``x.a`` terms) and the other only its successor (``NEXT(y).b``),
    each side numbers and arithmetic over numeric attributes (``compiled_operand``: int64
    exactly, an overflow left to the reference's exact ints, doubles one operation at a
    time). Returns (operator, predecessor side, successor side), a side being (its compiled
    operand, the attributes its terms read in order); None otherwise."""
    if not isinstance(cond, ceql.Compare) or cond.op not in COMPARISONS:
        return None
    left, right, op = cond.left, cond.right, cond.op
    if all(t.next for t in event_terms(left)):
        left, right, op = right, left, MIRRORED[op]
    sides = []
    for side, successor in ((left, False), (right, True)):
        terms = list(dict.fromkeys(event_terms(side)))
        if any(t.next != successor for t in terms):
            return None
        form = compiled_operand(side, terms, types)
        if form is None:
            return None
        sides.append((form, tuple(t.attr for t in terms)))
    return (op, *sides)


@dataclass(frozen=True)
class Field:
    """One running aggregate besides the trend count: ``cnt`` (events of ``vars``), ``sum``,
    ``min`` or ``max`` (of ``attr`` over events of ``vars``)."""

    kind: str
    vars: frozenset
    attr: str | None


@dataclass
class TrendPlan:
    query: ast.TrendQuery
    schema: Schema
    vars: list[Var]
    start: int
    end: int
    preds: list[frozenset]
    # local conditions: CEQL leaves over one event's attributes (``x.attr`` read as ``attr``);
    # each variable's ``guard`` combines them (the letters of ``cercore.runtime.letters``)
    leaves: list[ceql.Pred]
    adjacent: list[AdjacentPredicate]
    equivalence: tuple[str, ...]
    group_by: tuple[str, ...]
    partition_attrs: tuple[str, ...]
    aggregates: list[tuple[ast.Aggregate, int, int]]  # (aggregate, field of value, cnt field)
    fields: list[Field]
    window: tuple[int, int] | None  # (size, slide) in time units
    semantics: str
    next_algorithm: str  # "exact" | "paper"
    granularity: str = ""
    reason: str = ""
    event_grained: frozenset = frozenset()
    types: frozenset = frozenset()
    text: str = ""  # the query text: a plan pickles as (text, schema) and is planned again
    # the partition key's groups (``PartitionIndex``): PARTITION BY's brackets, then each
    # equivalence and GROUP BY attribute alone; ``partition_attrs`` lists their attributes
    partition_groups: tuple[tuple[str, ...], ...] = ()
    warnings: tuple[str, ...] = ()  # what explain and the CLI tell (an unstated time unit)

    def __reduce__(self):
        return (replan, (self.text, self.schema, self.next_algorithm))

    @property
    def var_names(self) -> list[str]:
        return [v.name for v in self.vars]

    def adjacent_for(self, p: int, s: int) -> list[AdjacentPredicate]:
        return [a for a in self.adjacent if a.pred_var == p and a.succ_var == s]

    def value_attributes(self) -> list[str]:
        """The attributes an aggregator reads of an event: aggregated ones and those of the
        predicates on adjacent events (what a runner copies of each event)."""
        attrs = {f.attr for f in self.fields if f.attr}
        attrs |= {t.attr for a in self.adjacent for t in event_terms(a.cond)}
        return sorted(attrs)


def analyse(query: ast.TrendQuery, schema: Schema, text: str,
            next_algorithm: str = "exact") -> TrendPlan:
    """Check ``query`` against ``schema`` and plan its evaluation; CEQLSemanticError on
    anything it cannot evaluate exactly."""
    return _Analyser(query, schema, text, next_algorithm).run()


def replan(text: str, schema: Schema, next_algorithm: str) -> TrendPlan:
    """The plan of a trend query's text (how a pickled plan comes back: its predicates are
    compiled closures, so they are compiled again)."""
    from cercore.trends.parse import parse_trend_query

    return analyse(parse_trend_query(text), schema, text, next_algorithm)


class _Analyser:
    def __init__(self, query: ast.TrendQuery, schema: Schema, text: str, next_algorithm: str):
        self.q = query
        self.schema = schema
        self.text = text
        if next_algorithm not in ("exact", "paper"):
            raise ValueError("next_algorithm must be 'exact' or 'paper'")
        self.next_algorithm = next_algorithm
        self.vars: list[Var] = []
        self.by_name: dict[str, Var] = {}
        self.succ: dict[int, set[int]] = {}
        self.warnings: list[str] = []

    def error(self, message: str, node=None, hint: str | None = None) -> CEQLSemanticError:
        line = getattr(node, "line", None) if node is not None else None
        column = getattr(node, "column", None) if node is not None else None
        return CEQLSemanticError(message, line=line, column=column, text=self.text, hint=hint)

    # -- pattern -----------------------------------------------------------------------------
    def pattern(self, node) -> tuple[int, int]:
        """(start var, end var) of ``node``; adds its variables and transitions."""
        if isinstance(node, ast.PAtom):
            if node.type not in self.schema.event_types:
                raise self.error(f"unknown event type {node.type!r}"
                                 + did_you_mean(node.type, self.schema.event_types), node)
            if self.q.streams:
                carried = any(node.type in self.schema.streams[s].event_types
                              for s in self.q.streams)
                if not carried:
                    raise self.error(f"no stream in FROM carries {node.type} events", node)
            name = node.var or node.type
            if name in self.by_name:
                first = self.by_name[name]
                what = (f"event type {node.type} is used twice without renaming"
                        if node.var is None or first.type == node.type and first.name == first.type
                        else f"variable {name!r} is bound twice")
                raise self.error(what, node, hint="give each occurrence its own variable, e.g. "
                                 f"SEQ({node.type} {node.type[0].upper()}1, ..., "
                                 f"{node.type} {node.type[0].upper()}2)")
            v = Var(len(self.vars), name, node.type)
            self.vars.append(v)
            self.by_name[name] = v
            self.succ[v.id] = set()
            return v.id, v.id
        if isinstance(node, ast.PSeq):
            ends = [self.pattern(p) for p in node.parts]
            for (_, e1), (s2, _) in zip(ends, ends[1:]):
                self.succ[e1].add(s2)
            return ends[0][0], ends[-1][1]
        if isinstance(node, ast.PPlus):
            s, e = self.pattern(node.body)
            self.succ[e].add(s)
            return s, e
        raise self.error("unsupported pattern", node)  # pragma: no cover - parser shapes

    # -- names -------------------------------------------------------------------------------
    def var(self, name: str, node) -> Var:
        v = self.by_name.get(name)
        if v is None:
            raise self.error(f"unknown variable {name!r}" + did_you_mean(name, self.by_name),
                             node, hint="variables are named in the pattern, e.g. Load L+")
        return v

    def attr_type(self, v: Var, attr: str, node) -> AttrType:
        et = self.schema.event_types[v.type]
        types = et.attribute_types
        if attr not in types:
            raise self.error(f"{v.type} has no attribute {attr!r}" + did_you_mean(attr, types),
                             node)
        return types[attr]

    def targets(self, name: str, node) -> frozenset:
        """Variables an aggregate names: a variable, or every variable of an event type."""
        if name in self.by_name:
            return frozenset({self.by_name[name].id})
        ids = frozenset(v.id for v in self.vars if v.type == name)
        if not ids:
            raise self.error(f"unknown variable {name!r}" + did_you_mean(name, self.by_name),
                             node)
        return ids

    # -- conditions --------------------------------------------------------------------------
    def conjuncts(self, cond) -> list:
        if isinstance(cond, ceql.PredAnd):
            return self.conjuncts(cond.left) + self.conjuncts(cond.right)
        return [cond] if cond is not None else []

    def refs(self, cond) -> list[ceql.EventAttr]:
        """The ``V.attr`` / ``NEXT(V).attr`` terms of a condition (``[...]`` only at the top)."""
        if isinstance(cond, ast.Equiv):
            raise self.error("[...] equivalence predicates go at the top level of WHERE, "
                             "joined by AND", cond)
        if isinstance(cond, (ceql.PredAnd, ceql.PredOr)):
            return self.refs(cond.left) + self.refs(cond.right)
        if isinstance(cond, ceql.PredNot):
            return self.refs(cond.operand)
        return event_terms(cond)

    def typecheck(self, node) -> str:
        """'num' | 'str' | 'bool' of an expression, or 'cond' for a condition."""
        if isinstance(node, ceql.Literal):
            v = node.value
            return "bool" if isinstance(v, bool) else "str" if isinstance(v, str) else "num"
        if isinstance(node, ceql.EventAttr):
            t = self.attr_type(self.var(node.var, node), node.attr, node)
            return "num" if t.is_numeric else "str" if t == AttrType.STRING else "bool"
        if isinstance(node, (ceql.BinOp, ceql.Neg)):
            for sub in ((node.left, node.right) if isinstance(node, ceql.BinOp)
                        else (node.operand,)):
                if self.typecheck(sub) != "num":
                    raise self.error(f"arithmetic needs numbers: {condition_text(sub)}", sub,
                                     hint=self.symbol_hint(sub))
            return "num"
        if isinstance(node, ceql.Like):
            if self.typecheck(node.operand) != "str":
                raise self.error(f"LIKE needs a string, not {condition_text(node.operand)}",
                                 node)
            problem = regex_problem(node.pattern)
            if problem is not None:
                raise self.error(problem, node)
            return "cond"
        if isinstance(node, ceql.InSet):
            t = self.typecheck(node.operand)
            for item in node.items:
                if isinstance(item, ceql.Range):
                    if t != "num" or any(self.typecheck(b) != "num" for b in (item.lo, item.hi)):
                        raise self.error(f"a range needs numbers: {condition_text(item.lo)}.."
                                         f"{condition_text(item.hi)} for "
                                         f"{condition_text(node.operand)} ({t})", item)
                elif self.typecheck(item) != t:
                    raise self.error(f"IN list mixes {condition_text(node.operand)} ({t}) "
                                     f"with {condition_text(item)}", item)
            return "cond"
        if isinstance(node, ceql.InRange):
            for b in (node.operand, node.lo, node.hi):
                if self.typecheck(b) != "num":
                    raise self.error(f"IN RANGE needs numbers, not {condition_text(b)}", node)
            return "cond"
        if isinstance(node, ceql.Compare):
            lt, rt = self.typecheck(node.left), self.typecheck(node.right)
            if lt != rt:
                bad = node.left if isinstance(node.left, ceql.Literal) else node.right
                raise self.error(f"cannot compare {condition_text(node.left)} ({lt}) with "
                                 f"{condition_text(node.right)} ({rt})", node,
                                 hint=self.symbol_hint(bad))
            if lt == "bool" and node.op not in ("==", "!="):
                raise self.error("booleans compare only with = and !=", node)
            return "cond"
        for f in ("left", "right", "operand"):
            sub = getattr(node, f, None)
            if sub is not None:
                self.typecheck(sub)
        return "cond"

    @staticmethod
    def symbol_hint(node) -> str | None:
        if isinstance(node, ast.Symbol):
            return (f"{node.value} is read as the string '{node.value}'; to read an attribute "
                    f"write V.{node.value}")
        return None

    def local_guards(self) -> list[ceql.Pred]:
        """Each variable's guard over the leaves of its local conditions, whose ``x.attr``
        terms become the event's own attributes (CEQL's ``X[attr ...]``); the leaves."""
        leaves: list[ceql.Pred] = []
        index: dict[ceql.Pred, int] = {}
        for v in self.vars:
            own = [rename_terms(c, lambda t: ceql.AttrRef(t.attr)) for c in v.local]
            v.guard = guard_and([guard_of(c, leaves, index) for c in own])
        return leaves

    def check_partition_group(self, group: tuple[str, ...], types, q) -> None:
        """PARTITION BY [a, ...] as CEQL reads it: every event type of the pattern has
        exactly one of the bracket's attributes (one key, named differently by different
        types); a type with several is an error that suggests the composite key."""
        hint = ("for the pair as a composite key, write PARTITION BY "
                + ", ".join(f"[{a}]" for a in group))
        m = re.search(r"\bPARTITION\s+BY\s*\[\s*" + re.escape(group[0]), self.text or "",
                      re.IGNORECASE)
        if m is not None:  # the bracket's first attribute (the AST keeps no place of it)
            before = self.text[:m.end() - len(group[0])]
            q = Spot(before.count("\n") + 1, len(before) - before.rfind("\n"))
        for t in sorted(types):
            have = [a for a in group if self.schema.event_types[t].has(a)]
            if not have:
                known = {a for n in types for a, _ in self.schema.event_types[n].attributes}
                unknown = next((a for a in group if a not in known), None)
                if unknown is not None and len(group) == 1:
                    raise self.error(f"unknown attribute {unknown!r} in PARTITION BY"
                                     + did_you_mean(unknown, known), q)
                raise self.error(f"{t} has none of PARTITION BY [{', '.join(group)}]", q,
                                 hint="every event of a trend must carry its partition key")
            if len(have) > 1:
                raise self.error(
                    f"event type {t} has {len(have)} of the attributes of PARTITION BY "
                    f"[{', '.join(group)}] ({', '.join(have)}): inside one bracket each event "
                    "type has exactly one of them (one key that types name differently)",
                    q, hint=hint)

    # -- main --------------------------------------------------------------------------------
    def run(self) -> TrendPlan:
        q = self.q
        for s in q.streams:
            if s not in self.schema.streams:
                raise self.error(f"unknown stream {s!r}" + did_you_mean(s, self.schema.streams),
                                 q)
        start, end = self.pattern(q.pattern)
        n = len(self.vars)
        preds = [frozenset(u for u in range(n) if v in self.succ[u]) for v in range(n)]

        # COGRA's [a, b] equivalence predicates: each attribute equal across the trend
        equivalence: list[str] = []
        adjacent: list[AdjacentPredicate] = []
        for c in self.conjuncts(q.condition):
            if isinstance(c, ast.Equiv):
                equivalence.extend(c.attrs)
                continue
            self.typecheck(c)
            refs = self.refs(c)
            now = {r.var for r in refs if not r.next}
            nxt = {r.var for r in refs if r.next}
            if not refs:
                raise self.error(f"condition {condition_text(c)} reads no attribute", c,
                                 hint=self.symbol_hint(c.left if isinstance(c, ceql.Compare)
                                                       else None))
            if len(now) > 1 or len(nxt) > 1 or (nxt and not now):
                raise self.error(
                    f"condition {condition_text(c)} relates events that need not be adjacent", c,
                    hint="conditions read one event (T.speed > 5) or two adjacent events "
                         "(L.cpu < NEXT(L).cpu); for equality across a trend use [attr]")
            p = self.var(next(iter(now)), c)
            if not nxt:
                p.local.append(c)
                continue
            one_event = _one_event_leaf(c)
            if one_event is not None:
                raise self.error(f"{condition_text(one_event)}: LIKE and IN read one event",
                                 one_event, hint="relate adjacent events with a comparison, "
                                 "e.g. L.cpu < NEXT(L).cpu")
            s = self.var(next(iter(nxt)), c)
            if p.id not in preds[s.id]:
                raise self.error(
                    f"{s.name} never directly follows {p.name} in the pattern, so "
                    f"{condition_text(c)} can never apply", c)
            adjacent.append(AdjacentPredicate(p.id, s.id, c, scalar_pred(c), kernel_operands(
                c, self.schema.attribute_types())))

        types = frozenset(v.type for v in self.vars)
        for group in q.partition_by:
            self.check_partition_group(group, types, q)
        for a in dict.fromkeys(equivalence):
            for t in sorted(types):
                if not self.schema.event_types[t].has(a):
                    raise self.error(f"equivalence attribute {a!r} is missing from {t}", q,
                                     hint="every event of a trend must carry the attributes "
                                          "in [...] and GROUP BY")
        for a in q.group_by:
            for t in sorted(types):
                if not self.schema.event_types[t].has(a):
                    raise self.error(f"GROUP BY attribute {a!r} is missing from {t}", q)
        # the partition key, one home with CEQL (cercore.runtime.partitions.key_attributes):
        # PARTITION BY's groups, then each equivalence and GROUP BY attribute on its own
        partition_groups = tuple(dict.fromkeys(
            [*q.partition_by, *((a,) for a in equivalence), *((g,) for g in q.group_by)]))
        partition_attrs = tuple(dict.fromkeys(a for g in partition_groups for a in g))
        equivalence = [a for g in q.partition_by for a in g] + equivalence

        fields: list[Field] = []

        def field_id(f: Field) -> int:
            if f not in fields:
                fields.append(f)
            return fields.index(f) + 1  # slot 0 of a vector is the trend count

        aggregates = []
        seen_items: set[str] = set()
        for item in q.items:
            if isinstance(item, ast.GroupAttr):
                if item.name not in q.group_by:
                    raise self.error(f"{item.name} is returned but not grouped by", item,
                                     hint=f"add GROUP BY {item.name}, or return aggregates only")
                continue
            if str(item) in seen_items:
                raise self.error(f"{item} is returned twice", item)
            seen_items.add(str(item))
            if item.target is None:
                aggregates.append((item, 0, 0))
                continue
            ids = self.targets(item.target, item)
            cnt = field_id(Field("cnt", ids, None))
            if item.func == "COUNT":
                aggregates.append((item, cnt, cnt))
                continue
            for i in ids:
                if not self.attr_type(self.vars[i], item.attr, item).is_numeric:
                    raise self.error(f"{item.func} needs a numeric attribute; "
                                     f"{item.target}.{item.attr} is not", item)
            kind = {"SUM": "sum", "AVG": "sum", "MIN": "min", "MAX": "max"}[item.func]
            aggregates.append((item, field_id(Field(kind, ids, item.attr)), cnt))
        if not aggregates:
            raise self.error("a trend query returns at least one aggregate", q,
                             hint="e.g. RETURN COUNT(*) PATTERN ...")

        plan = TrendPlan(q, self.schema, self.vars, start, end, preds, self.local_guards(),
                         adjacent,
                         tuple(dict.fromkeys(equivalence)), q.group_by, partition_attrs,
                         aggregates, fields, self.window(), q.semantics, self.next_algorithm,
                         types=types, text=self.text, partition_groups=partition_groups,
                         warnings=tuple(self.warnings))
        if self.next_algorithm == "paper" and len(types) < n:
            raise self.error("the paper's skip-till-next-match algorithm needs each event type "
                             "once in the pattern", q, hint="use the exact algorithm")
        choose_granularity(plan)
        return plan

    def window(self) -> tuple[int, int] | None:
        w = self.q.window
        if w is None:
            return None
        if self.schema.time_attribute is None:
            raise self.error("WITHIN needs a time attribute", w,
                             hint="mark one attribute primary_time in the declarations, or "
                                  "pass time_attribute=")
        def units(amount, unit) -> int:
            x = seconds_to_units(amount, self.schema.time_unit) if unit == "s" else amount
            if isinstance(x, float) and not math.isfinite(x) or x > INT64_MAX:
                raise self.error(f"window sizes are at most {INT64_MAX} "
                                 f"{self.schema.time_unit} (times are int64); got {amount}", w)
            if x <= 0 or x != int(x):
                raise self.error(f"window sizes must be positive whole numbers of "
                                 f"{self.schema.time_unit}; got {x}", w)
            return int(x)

        size = units(w.size, w.unit)
        slide = size if w.slide is None else units(w.slide, w.slide_unit)
        if "s" in (w.unit, w.slide_unit if w.slide is not None else None) \
                and not self.schema.time_unit_stated:
            self.warnings.append(unstated_unit_warning(self.schema.time_attribute))
        return size, slide


def choose_granularity(plan: TrendPlan) -> None:
    """COGRA Table 5, with the note's exact skip-till-next-match: fill granularity, reason and
    the event-grained variables (T_e)."""
    te = frozenset(a.pred_var for a in plan.adjacent)
    names = plan.var_names
    te_text = "{" + ", ".join(names[i] for i in sorted(te)) + "}"
    tt_text = "{" + ", ".join(n for i, n in enumerate(names) if i not in te) + "}"
    preds_text = "; ".join(condition_text(a.cond) for a in plan.adjacent)
    if plan.semantics == "contiguous":
        plan.granularity = "pattern-grained"
        plan.reason = ("contiguous: the only possible predecessor of an event is the event "
                       "just before it in the filtered, partitioned stream (Thm 6.1), so the "
                       "last timestamp's aggregates are all the state")
    elif plan.semantics == "next" and plan.next_algorithm == "paper":
        plan.granularity = "pattern-grained"
        plan.reason = ("skip-till-next-match, paper compatibility mode (Algorithm 3: last "
                       "matched event only); may undercount, see docs/trends.md")
    elif plan.semantics == "next":
        plan.event_grained = te
        if te:
            plan.granularity = "mixed"
            plan.reason = (f"skip-till-next-match (exact waiting set): predicates on adjacent "
                           f"events ({preds_text}) decide which waiting trend ends a new event "
                           f"consumes, so T_e={te_text} keep waiting events, T_t={tt_text} "
                           "keep per-variable sums")
        else:
            plan.granularity = "type-grained"
            plan.reason = ("skip-till-next-match (exact waiting set) without predicates on "
                           "adjacent events: all waiting trend ends of one variable are consumed "
                           "together, so per-variable sums suffice")
    else:
        plan.event_grained = te
        if te:
            plan.granularity = "mixed"
            plan.reason = (f"skip-till-any-match with predicates on adjacent events "
                           f"({preds_text}): T_e={te_text} keep events, T_t={tt_text} keep "
                           "per-variable aggregates (Alg. 2)")
            if len(te) == len(plan.vars):
                plan.reason += "; T_t is empty, so this is event-grained (GRETA fallback)"
        else:
            plan.granularity = "type-grained"
            plan.reason = ("skip-till-any-match without predicates on adjacent events: every "
                           "earlier matched event of a predecessor variable is adjacent to a "
                           "new event (Thm 4.2), so one aggregate per variable suffices")


def _one_event_leaf(cond):
    """The first LIKE / IN / IN RANGE leaf of ``cond`` (None: only comparisons)."""
    if isinstance(cond, (ceql.Like, ceql.InSet, ceql.InRange)):
        return cond
    if isinstance(cond, (ceql.PredAnd, ceql.PredOr)):
        return _one_event_leaf(cond.left) or _one_event_leaf(cond.right)
    if isinstance(cond, ceql.PredNot):
        return _one_event_leaf(cond.operand)
    return None
