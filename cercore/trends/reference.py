"""Pure-Python reference aggregators (exact: Python ints never overflow).

One aggregator holds the online state of ONE window of ONE partition -- COGRA's runtime
executor (COGRA §3): events update it and are discarded, so its size is O(l) for the
type- and pattern-grained algorithms and O(l + stored events) for the event-grained variables
of the mixed granularity. It is fed the filtered, partitioned stream ``I`` one timestamp group
at a time: ``update(group)`` with ``group`` the events at one timestamp, in arrival order, as
``(vars, attrs)`` -- ``vars`` are the pattern variables the event matches (empty for an event of
a type outside the pattern; such events matter to contiguity only). ``result()`` is the
aggregate vector over every trend ending in the window so far: ``[COUNT(*), field 1, ...]``
(see ``analysis.Field``).

Events with equal timestamps are never adjacent (strict order), so each timestamp group is one
update: every new aggregate is computed from the state *before* the group, then the group's
updates are applied (COGRA §2.1 assumes a strict order; its example of a variable renamed
"B+ ; B" needs the same snapshot updates).

``cercore_fast.trends`` is the compiled twin; it promotes a window to these classes (via
``restore``) when its int64 arithmetic would overflow.
"""

from __future__ import annotations

from collections.abc import Sequence

from cercore.trends.analysis import Field, TrendPlan

Group = list   # [(vars, attrs), ...] at one timestamp


class Vectors:
    """Aggregate vectors ``[count, f1, ..., fk]``: counts and sums add, min/max combine, and
    ``None`` is the identity of min/max (a trend without events of the field's variables)."""

    def __init__(self, fields: Sequence[Field]) -> None:
        self.fields = list(fields)
        self.kinds = [f.kind for f in fields]

    def zero(self) -> list:
        return [0] + [None if k in ("min", "max") else 0 for k in self.kinds]

    def add(self, acc: list, vec: list) -> None:
        """acc ⊕= vec."""
        acc[0] += vec[0]
        for i, k in enumerate(self.kinds, 1):
            x = vec[i]
            if k == "min":
                if x is not None and (acc[i] is None or x < acc[i]):
                    acc[i] = x
            elif k == "max":
                if x is not None and (acc[i] is None or x > acc[i]):
                    acc[i] = x
            else:
                acc[i] += x

    def extend(self, pred: list, var: int, attrs: dict, is_start: bool) -> list | None:
        """The vector of the (partial) trends ending at event ``attrs`` bound to ``var``, given
        the combined vector ``pred`` of its possible predecessors; None when there is none
        (the MIN/MAX guard: an event in no trend contributes nothing)."""
        c = int(is_start) + pred[0]
        if c == 0:
            return None
        out = [c]
        for i, f in enumerate(self.fields, 1):
            p = pred[i]
            if var not in f.vars:
                out.append(p)
                continue
            k = f.kind
            if k == "cnt":
                out.append(p + c)
                continue
            x = attrs[f.attr]
            if k == "sum":
                out.append(p + x * c)
            elif k == "min":
                out.append(x if p is None or x < p else p)
            else:
                out.append(x if p is None or x > p else p)
        return out


def _adjacent_ok(plan: TrendPlan, u: int, uattrs: dict, v: int, attrs: dict) -> bool:
    return all(a.holds(uattrs, attrs) for a in plan.adjacent_for(u, v))


def _store_new(plan: TrendPlan, vx: Vectors, new: list, events: list[list], per_var: list,
               final: list) -> None:
    """A group's new vectors (variable, attributes, vector) into the state of ANY or NEXT:
    stored with their event for the event-grained variables (``events``), else summed into
    their variable's (``per_var``); summed into ``final`` when they end a trend."""
    for v, attrs, vec in new:
        if v in plan.event_grained:
            events[v].append((attrs, vec))
        else:
            vx.add(per_var[v], vec)
        if v == plan.end:
            vx.add(final, vec)


class AnyAggregator:
    """Skip-till-any-match: type-grained (Alg. 1, Table 9) for variables outside T_e, and
    event-grained for T_e (Alg. 2) -- together the mixed granularity."""

    def __init__(self, plan: TrendPlan) -> None:
        self.plan = plan
        self.vx = vx = Vectors(plan.fields)
        n = len(plan.vars)
        self.per_var = [vx.zero() for _ in range(n)]   # T_t: one vector per variable
        self.stored: list[list] = [[] for _ in range(n)]  # T_e: (attrs, vector) per event
        self.final = vx.zero()

    def update(self, group: Group) -> None:
        plan, vx, te = self.plan, self.vx, self.plan.event_grained
        new = []
        for vs, attrs in group:
            for v in vs:
                pred = vx.zero()
                for u in plan.preds[v]:
                    if u in te:
                        for uattrs, uvec in self.stored[u]:
                            if _adjacent_ok(plan, u, uattrs, v, attrs):
                                vx.add(pred, uvec)
                    else:
                        vx.add(pred, self.per_var[u])
                vec = vx.extend(pred, v, attrs, v == plan.start)
                if vec is not None:
                    new.append((v, attrs, vec))
        _store_new(plan, vx, new, self.stored, self.per_var, self.final)

    def result(self) -> list:
        return self.final

    def stored_events(self) -> int:
        return sum(map(len, self.stored))


class NextAggregator:
    """Exact skip-till-next-match (COGRA Definition 2.6): a waiting set of trend ends that have
    not met their successor yet. The first later event ANY-adjacent to a waiting end takes it
    (every such event at that timestamp), and the end stops waiting. Per-variable sums for
    variables outside T_e, waiting events for T_e."""

    def __init__(self, plan: TrendPlan) -> None:
        self.plan = plan
        self.vx = vx = Vectors(plan.fields)
        n = len(plan.vars)
        self.waiting = [vx.zero() for _ in range(n)]
        self.waiting_events: list[list] = [[] for _ in range(n)]  # (attrs, vector)
        self.final = vx.zero()

    def update(self, group: Group) -> None:
        plan, vx, te = self.plan, self.vx, self.plan.event_grained
        new = []
        taken_vars: set[int] = set()
        taken_events: set[int] = set()
        for vs, attrs in group:
            for v in vs:
                pred = vx.zero()
                for u in plan.preds[v]:
                    if u in te:
                        for entry in self.waiting_events[u]:
                            if _adjacent_ok(plan, u, entry[0], v, attrs):
                                vx.add(pred, entry[1])
                                taken_events.add(id(entry))
                    else:
                        vx.add(pred, self.waiting[u])
                        taken_vars.add(u)
                vec = vx.extend(pred, v, attrs, v == plan.start)
                if vec is not None:
                    new.append((v, attrs, vec))
        for u in taken_vars:
            self.waiting[u] = vx.zero()
        if taken_events:
            for u in te:
                self.waiting_events[u] = [e for e in self.waiting_events[u]
                                          if id(e) not in taken_events]
        _store_new(plan, vx, new, self.waiting_events, self.waiting, self.final)

    def result(self) -> list:
        return self.final

    def stored_events(self) -> int:
        return sum(map(len, self.waiting_events))


class NextPaperAggregator:
    """The paper's Algorithm 3 under skip-till-next-match (compatibility mode): only the last
    matched event is kept. It undercounts when a later event is not adjacent to the last
    matched one (COGRA §6, Algorithm 3, against Definition 2.6; docs/trends.md). Timestamps
    are not batched: an event is adjacent to the last matched one only if strictly later,
    which ``time`` tracks."""

    def __init__(self, plan: TrendPlan) -> None:
        self.plan = plan
        self.vx = Vectors(plan.fields)
        self.final = self.vx.zero()
        self.last = None  # (group number, var, attrs, vector)
        self.time = 0     # number of the current timestamp group

    def update(self, group: Group) -> None:
        plan, vx = self.plan, self.vx
        self.time += 1
        for vs, attrs in group:
            if not vs:
                continue
            v = vs[0]
            last = self.last
            adj = (last is not None and last[1] in plan.preds[v] and last[0] < self.time
                   and _adjacent_ok(plan, last[1], last[2], v, attrs))
            if v != plan.start and not adj:
                continue
            vec = vx.extend(last[3] if adj else vx.zero(), v, attrs, v == plan.start)
            if v == plan.end:
                vx.add(self.final, vec)
            self.last = (self.time, v, attrs, vec)

    def result(self) -> list:
        return self.final

    def stored_events(self) -> int:
        return 0


class ContiguousAggregator:
    """Contiguous (pattern-grained, Alg. 3): an event's only possible predecessors are the
    events of the previous timestamp of ``I``. A trend may start or end at a timestamp shared
    with other events, but an inner event must be alone at its timestamp (any other event
    there lies strictly inside the trend without belonging to it)."""

    def __init__(self, plan: TrendPlan) -> None:
        self.plan = plan
        self.vx = Vectors(plan.fields)
        self.final = self.vx.zero()
        self.carried: list = []  # (var, attrs, vector) that the next timestamp may extend

    def update(self, group: Group) -> None:
        plan, vx = self.plan, self.vx
        nodes = []
        for vs, attrs in group:
            for v in vs:
                pred = vx.zero()
                for u, uattrs, uvec in self.carried:
                    if u in plan.preds[v] and _adjacent_ok(plan, u, uattrs, v, attrs):
                        vx.add(pred, uvec)
                vec = vx.extend(pred, v, attrs, v == plan.start)
                if vec is not None:
                    nodes.append((v, attrs, vec))
                    if v == plan.end:
                        vx.add(self.final, vec)
        if len(group) == 1:
            self.carried = nodes
        else:  # only the trends that start here may go on
            self.carried = [(v, attrs, vx.extend(vx.zero(), v, attrs, True))
                            for v, attrs, _ in nodes if v == plan.start]

    def result(self) -> list:
        return self.final

    def stored_events(self) -> int:
        return len(self.carried)


def aggregator_class(plan: TrendPlan) -> type:
    """The reference aggregator of the plan's algorithm."""
    if plan.semantics == "any":
        return AnyAggregator
    if plan.semantics == "contiguous":
        return ContiguousAggregator
    if plan.next_algorithm == "paper":
        return NextPaperAggregator
    return NextAggregator


class Aggregators:
    """Starts the reference aggregators of one plan; the same interface as the compiled
    ``cercore_fast.trends.Kernel``: ``prepare(group)`` once per timestamp group of a
    partition, then ``update(prepared)`` on each of its open windows' aggregators."""

    def __init__(self, plan: TrendPlan) -> None:
        self.plan = plan
        self.cls = aggregator_class(plan)

    def new(self):
        return self.cls(self.plan)

    def prepare(self, group: Group) -> Group:
        return group

