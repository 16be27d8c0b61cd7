"""Pure-Python reference aggregators (exact: Python ints never overflow).

Each function aggregates the trends of ONE window of ONE partition. Input: the events of the
filtered, partitioned stream ``I`` inside the window, in time order, as ``(time, vars, attrs)``
-- ``vars`` are the pattern variables the event matches (empty for an event of a type outside
the pattern; such events matter to contiguity only). Output: the aggregate vector over every
trend ending in the window: ``[COUNT(*), field 1, field 2, ...]`` (see ``analysis.Field``).

Events with equal timestamps are never adjacent (strict order), so each timestamp group is
processed as a batch: every new aggregate is computed from the state *before* the group, then
the group's updates are applied (note seed-002, pitfall 2; this also gives the snapshot
semantics that renamed variables need, pitfall 8).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import groupby

from cercore.trends.analysis import Field, TrendPlan

Event = tuple  # (time, vars: tuple[int, ...], attrs: dict)


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


def timestamp_groups(events: Sequence[Event]) -> Iterator[list[Event]]:
    for _, group in groupby(events, key=lambda e: e[0]):
        yield list(group)


def _adjacent_ok(plan: TrendPlan, u: int, uattrs: dict, v: int, attrs: dict) -> bool:
    return all(a.test(uattrs, attrs) for a in plan.adjacent_for(u, v))


def aggregate_any(plan: TrendPlan, events: Sequence[Event]) -> list:
    """Skip-till-any-match: type-grained (Alg. 1, Table 9) for variables outside T_e, and
    event-grained for T_e (Alg. 2) -- together the mixed granularity."""
    vx = Vectors(plan.fields)
    te = plan.event_grained
    n = len(plan.vars)
    per_var = [vx.zero() for _ in range(n)]          # T_t: one vector per variable
    stored: list[list] = [[] for _ in range(n)]      # T_e: (attrs, vector) per matched event
    final = vx.zero()
    for group in timestamp_groups(events):
        new = []
        for _, vs, attrs in group:
            for v in vs:
                pred = vx.zero()
                for u in plan.preds[v]:
                    if u in te:
                        for uattrs, uvec in stored[u]:
                            if _adjacent_ok(plan, u, uattrs, v, attrs):
                                vx.add(pred, uvec)
                    else:
                        vx.add(pred, per_var[u])
                vec = vx.extend(pred, v, attrs, v == plan.start)
                if vec is not None:
                    new.append((v, attrs, vec))
        for v, attrs, vec in new:
            if v in te:
                stored[v].append((attrs, vec))
            else:
                vx.add(per_var[v], vec)
            if v == plan.end:
                vx.add(final, vec)
    return final


def aggregate_next(plan: TrendPlan, events: Sequence[Event]) -> list:
    """Exact skip-till-next-match (note seed-002 §3.3): a waiting set of trend ends that have
    not met their successor yet. The first later event ANY-adjacent to a waiting end takes it
    (every such event at that timestamp), and the end stops waiting. Per-variable sums for
    variables outside T_e, waiting events for T_e."""
    vx = Vectors(plan.fields)
    te = plan.event_grained
    n = len(plan.vars)
    waiting = [vx.zero() for _ in range(n)]
    waiting_events: list[list] = [[] for _ in range(n)]
    final = vx.zero()
    for group in timestamp_groups(events):
        new = []
        taken_vars: set[int] = set()
        taken_events: set[int] = set()
        for _, vs, attrs in group:
            for v in vs:
                pred = vx.zero()
                for u in plan.preds[v]:
                    if u in te:
                        for entry in waiting_events[u]:
                            if _adjacent_ok(plan, u, entry[0], v, attrs):
                                vx.add(pred, entry[1])
                                taken_events.add(id(entry))
                    else:
                        vx.add(pred, waiting[u])
                        taken_vars.add(u)
                vec = vx.extend(pred, v, attrs, v == plan.start)
                if vec is not None:
                    new.append((v, attrs, vec))
        for u in taken_vars:
            waiting[u] = vx.zero()
        if taken_events:
            for u in te:
                waiting_events[u] = [e for e in waiting_events[u] if id(e) not in taken_events]
        for v, attrs, vec in new:
            if v in te:
                waiting_events[v].append((attrs, vec))
            else:
                vx.add(waiting[v], vec)
            if v == plan.end:
                vx.add(final, vec)
    return final


def aggregate_next_paper(plan: TrendPlan, events: Sequence[Event]) -> list:
    """The paper's Algorithm 3 under skip-till-next-match (compatibility mode): only the last
    matched event is kept. It undercounts when a later event is not adjacent to the last
    matched one (note seed-002 §3.3, examples 7-8)."""
    vx = Vectors(plan.fields)
    final = vx.zero()
    last = None  # (time, var, attrs, vector)
    for t, vs, attrs in events:
        if not vs:
            continue
        v = vs[0]
        adj = (last is not None and last[1] in plan.preds[v] and last[0] < t
               and _adjacent_ok(plan, last[1], last[2], v, attrs))
        if v != plan.start and not adj:
            continue
        vec = vx.extend(last[3] if adj else vx.zero(), v, attrs, v == plan.start)
        if v == plan.end:
            vx.add(final, vec)
        last = (t, v, attrs, vec)
    return final


def aggregate_contiguous(plan: TrendPlan, events: Sequence[Event]) -> list:
    """Contiguous (pattern-grained, Alg. 3): an event's only possible predecessors are the
    events of the previous timestamp of ``I``. A trend may start or end at a timestamp shared
    with other events, but an inner event must be alone at its timestamp (any other event
    there lies strictly inside the trend without belonging to it)."""
    vx = Vectors(plan.fields)
    final = vx.zero()
    carried: list = []  # (var, attrs, vector) that the next timestamp may extend
    for group in timestamp_groups(events):
        nodes = []
        for _, vs, attrs in group:
            for v in vs:
                pred = vx.zero()
                for u, uattrs, uvec in carried:
                    if u in plan.preds[v] and _adjacent_ok(plan, u, uattrs, v, attrs):
                        vx.add(pred, uvec)
                vec = vx.extend(pred, v, attrs, v == plan.start)
                if vec is not None:
                    nodes.append((v, attrs, vec))
                    if v == plan.end:
                        vx.add(final, vec)
        if len(group) == 1:
            carried = nodes
        else:  # only the trends that start here may go on
            carried = [(v, attrs, vx.extend(vx.zero(), v, attrs, True))
                       for v, attrs, _ in nodes if v == plan.start]
    return final


def aggregate(plan: TrendPlan, events: Sequence[Event]) -> list:
    """The aggregate vector of one window of one partition, by the plan's algorithm."""
    if plan.semantics == "any":
        return aggregate_any(plan, events)
    if plan.semantics == "contiguous":
        return aggregate_contiguous(plan, events)
    if plan.next_algorithm == "paper":
        return aggregate_next_paper(plan, events)
    return aggregate_next(plan, events)
