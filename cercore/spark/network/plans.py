"""PrePP on Spark, for batch, and the estimators at scale.

    run = run_plan(events_df, query, plan=plan, network=net)   # a SparkPlanRun
    run.matches, run.transmitted

Spark has no executor-to-executor push/pull primitive, so a plan is realised as ordered,
predicate-carrying **semi-join reductions** over a DataFrame of all events (columns ``node``,
``event_type``, the time column, ``uid`` and the attributes); the driver plays the sink:

* push step ρ: the ρ events of the other nodes are collected at the sink;
* pull step (Ψ, ρ): the sink evaluates the partial matches over 𝒜(s) with the cercore engine,
  keeps the distinct Ψ combinations of those matches (the requests), **broadcasts** them, and
  each ε ∈ ρ is reduced by ``events_ε.join(broadcast(requests), <window ∧ order ∧ predicates
  between ε and Ψ>, "left_semi")`` — only the surviving rows (the responses) reach the sink;
* the sink finally evaluates the whole query with the cercore engine.

Transmission is counted by Spark itself, with observed metrics (``DataFrame.observe``), which
classic and Spark Connect sessions both report: the rows entering the broadcast side of each
semi join (request rows) and the rows leaving the semi join (responses); pushes are the rows
the sink collects. (Adaptive execution is switched off while a step runs, so each plan runs as
written: one broadcast per semi join.) Request rows count Ψ *combinations* broadcast once,
where the network simulator counts Ψ events per destination node.

Single-type filters are applied where the events are, before any step (as in the simulator):
a filtered-out event is never transmitted. With OR, each pulled type is reduced once per
branch that contains it, with that branch's requests, order and predicates; an event several
branches need is sent once (responses count distinct events).

Estimators: :func:`estimate_rates` (``groupBy(event_type, node).count()``) and
:func:`estimate_pairwise` (window self-joins), matching :mod:`cercore.network.estimate`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cercore.network.errors import NetworkError
from cercore.network.evaluate import QueryEvaluator, schema_for
from cercore.network.network import Network
from cercore.network.pattern import net_query
from cercore.network.plan import Plan
from cercore.network.query import NetEvent, NetQuery
from cercore.types import type_of_spark

if TYPE_CHECKING:
    from pyspark.sql import Column



def events_dataframe(traces: dict[Hashable, list[NetEvent]], *, spark,
                     time_attribute: str = "t"):
    """A DataFrame of the local traces (node as string), on ``spark``."""
    rows = [{"node": str(n), "event_type": e.type, time_attribute: e.t, "uid": e.uid, **e.attrs}
            for n, tr in traces.items() for e in tr]
    if not rows:
        raise NetworkError("no events")
    import pandas as pd
    return spark.createDataFrame(pd.DataFrame(rows))


def apply_filters(events, query: NetQuery, *, backend: str = "auto"):
    """``events`` (a DataFrame) without the rows that fail their type's single-type filter,
    evaluated on the executors by cercore's predicate layer over each batch's events, decoded
    as the engine decodes them (``passes_filters``; ``backend`` is passed on, and needs no
    engine); rows of unfiltered types pass."""
    from pyspark.sql import functions as F

    from cercore.network.evaluate import passes_filters

    filtered = sorted(query.filter_map)
    ta = query.time_attribute

    def keep(batches):
        for pdf in batches:
            rows = pdf.to_dict("records")
            evs = [NetEvent(int(r["uid"]), r["event_type"], int(r[ta]), r["node"],
                            {k: v for k, v in r.items()
                             if k not in ("node", "event_type", "uid", ta) and v == v})
                   for r in rows]  # (v == v: NaN cells are missing attributes)
            kept = {e.uid for e in passes_filters(query, evs, schema_for(query, evs), backend)} \
                if evs else set()
            yield pdf[[u in kept for u in pdf["uid"]]]

    mine = events.filter(F.col("event_type").isin(filtered))
    rest = events.filter(~F.col("event_type").isin(filtered))
    return rest.unionByName(mine.mapInPandas(keep, schema=events.schema))


def _to_events(rows, time_attribute: str) -> list[NetEvent]:
    out = []
    for r in rows:
        d = r.asDict()
        attrs = {k: v for k, v in d.items()
                 if k not in ("node", "event_type", "uid", time_attribute)}
        out.append(NetEvent(int(d["uid"]), d["event_type"], int(d[time_attribute]), d["node"],
                            attrs))
    return out


def _counted(df, name: str):
    """(``df`` counting the rows that flow through it, a function returning that count once an
    action has run): an ``Observation``, which classic and Connect sessions both fill in."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    seen = Observation(name)
    return df.observe(seen, F.count(F.lit(1)).alias("rows")), lambda: int(seen.get["rows"])


@dataclass
class SparkPlanRun:
    """Result of running a plan as semi-join reductions."""

    matches: set[frozenset[int]]
    pushed: int = 0
    request_rows: int = 0
    responses: int = 0
    per_step: list[dict[str, Any]] = field(default_factory=list)

    @property
    def transmitted(self) -> int:
        return self.pushed + self.request_rows + self.responses


def run_plan(events, query: NetQuery | str, *, plan: Plan, network: Network | None = None,
             spark=None, schema=None, backend: str = "auto") -> SparkPlanRun:
    """Execute ``plan`` for ``query`` over ``events`` (see module docstring).

    ``events``: a DataFrame of all events (columns ``node``, ``event_type``, the time column,
    ``uid``, the attributes), or per-node traces ``{node: [NetEvent]}`` (then ``spark=`` is
    needed). ``query``: a ``NetQuery``, PrePP notation (``PATTERN ...``) or CEQL text with
    ``schema``. ``network`` (optional) validates the plan against the sources."""
    from pyspark.sql import functions as F

    query = net_query(query, schema)
    if isinstance(events, Mapping):
        if spark is None:
            raise NetworkError("per-node traces need the SparkSession: run_plan(traces, query, "
                               "plan=..., spark=spark)")
        events = events_dataframe(events, spark=spark, time_attribute=query.time_attribute)
    spark = spark or events.sparkSession
    plan.validate(query, network)
    if query.filters:
        events = apply_filters(events, query, backend=backend)
    ta = query.time_attribute
    sink = str(plan.sink)
    at_sink: list[NetEvent] = []
    schema = None
    run = SparkPlanRun(set())
    previous = spark.conf.get("spark.sql.adaptive.enabled")
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        for i, step in enumerate(plan.steps):
            types = sorted(step.acquire)
            mine = events.filter(F.col("event_type").isin(types))
            local = _to_events(mine.filter(F.col("node") == sink).collect(), ta)
            remote = mine.filter(F.col("node") != sink)
            info: dict[str, Any] = {"step": i + 1, "local": len(local)}
            if step.is_push:
                got_df = remote
                rows = got_df.collect()
                info["pushed"] = len(rows)
                run.pushed += len(rows)
            else:
                schema = schema or schema_for(query, at_sink + local)
                requests = _request_rows(query, plan, i, at_sink, schema, backend)
                info["request_rows"] = sum(len(r) for r in requests.values())
                info["broadcast_rows"] = info["semi_join_rows"] = 0
                got: dict[int, Any] = {}  # uid -> row: an event several branches need, once
                for t in types:
                    side = remote.filter(F.col("event_type") == t).alias("e")
                    for branch in query.branches:
                        if t not in branch.types:
                            continue
                        psi = sorted(branch.types & step.pull_set)
                        if not psi:  # this branch needs every t event: no request narrows it
                            part = side.collect()
                            info["unconditional"] = info.get("unconditional", 0) + len(part)
                        else:
                            reqs = requests.get((branch, tuple(psi)))
                            if not reqs:
                                continue
                            sent, broadcast_rows = _counted(spark.createDataFrame(reqs),
                                                            "requests")
                            cond = _join_condition(query, branch, t, psi, F, side, sent)
                            got_df, semi_join_rows = _counted(
                                side.join(F.broadcast(sent.alias("r")), cond, "left_semi"),
                                "responses")
                            part = got_df.collect()
                            info["broadcast_rows"] += broadcast_rows()
                            info["semi_join_rows"] += semi_join_rows()
                        for r in part:
                            got[int(r["uid"])] = r
                rows = list(got.values())
                run.request_rows += info["broadcast_rows"]
                # responses: the distinct events sent (one branch's semi join when OR-free)
                run.responses += len(rows)
                info["responses"] = len(rows)
            at_sink += local + _to_events(rows, ta)
            run.per_step.append(info)
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", previous)
    at_sink.sort(key=lambda e: e.key)
    schema = schema or schema_for(query, at_sink)
    final = QueryEvaluator(query, schema, backend=backend)
    run.matches = {frozenset(e.uid for e in m) for m in final.feed(at_sink)}
    return run


def _request_rows(query: NetQuery, plan: Plan, i: int, at_sink: list[NetEvent], schema,
                  backend: str) -> dict[tuple, list[dict]]:
    """Per (branch, its Ψ types): the distinct Ψ combinations of the sink's partial matches
    over 𝒜(s_i) of that branch, one wide row each (``<type>__t``, ``<type>__uid``,
    ``<type>__<attr>``)."""
    avail, pull = plan.available(i), plan.steps[i].pull_set
    ev = QueryEvaluator(query, schema, avail, backend=backend)
    matches = ev.feed(sorted((e for e in at_sink if e.type in avail), key=lambda e: e.key))
    out: dict[tuple, list[dict]] = {}
    for branch in query.branches:
        psi = sorted(branch.types & pull)
        if not psi or (branch, tuple(psi)) in out:
            continue
        shape = branch.types & avail
        attrs = {p.left_attr if p.left == t else p.right_attr
                 for t in psi for p in query.predicates if t in (p.left, p.right)}
        seen, rows = set(), []
        for m in matches:
            if frozenset(e.type for e in m) != shape or not branch.order_ok(m):
                continue
            by = {e.type: e for e in m}
            key = tuple(by[t].uid for t in psi)
            if key in seen:
                continue
            seen.add(key)
            row = {}
            for t in psi:
                e = by[t]
                row[f"{t}__t"] = e.t
                row[f"{t}__uid"] = e.uid
                for a in sorted(attrs):
                    row[f"{t}__{a}"] = e.value(a)
            rows.append(row)
        out[(branch, tuple(psi))] = rows
    return out


def _pair_condition(predicates, pair: frozenset[str], column) -> Column:
    """The predicates between the two types of ``pair`` as one Spark column, with the
    predicate layer's meaning (``cercore.spark.base.columns``); ``column(type, attribute)`` gives
    an attribute's column and type."""
    from pyspark.sql import functions as F

    from cercore.spark.base.columns import pred_column

    def term(ref):
        return column(ref.var, ref.attr)

    cond = F.lit(True)
    for p in predicates:
        if p.pair == pair:
            cond = cond & pred_column(p.compare, term)
    return cond


def _typed(df, prefix: str, name: str):
    """Column ``name`` of ``df`` (referred to as ``prefix.name``) and its attribute type."""
    from pyspark.sql import functions as F

    return F.col(f"{prefix}.{name}"), type_of_spark(df.schema[name].dataType)


def _join_condition(query: NetQuery, branch, t: str, psi: list[str], F, side, sent):
    """Window, order and predicates between the pulled type ``t`` (``side``, as ``e``) and the
    Ψ columns (``sent``, as ``r``)."""
    ta = query.time_attribute
    e_t, e_uid = F.col(f"e.{ta}"), F.col("e.uid")
    times = [e_t] + [F.col(f"r.{u}__t") for u in psi]
    cond = (F.greatest(*times) - F.least(*times)) <= F.lit(query.window) if psi else F.lit(True)
    for u in psi:
        u_t, u_uid = F.col(f"r.{u}__t"), F.col(f"r.{u}__uid")
        if (u, t) in branch.before:
            cond = cond & ((u_t < e_t) | ((u_t == e_t) & (u_uid < e_uid)))
        if (t, u) in branch.before:
            cond = cond & ((e_t < u_t) | ((e_t == u_t) & (e_uid < u_uid)))
        cond = cond & _pair_condition(
            query.predicates, frozenset((t, u)),
            lambda typ, a, u=u: _typed(side, "e", a) if typ == t else _typed(sent, "r",
                                                                             f"{u}__{a}"))
    return cond


def estimate_rates(events, *, duration: float | None = None,
                   time_attribute: str = "t") -> Network:
    """Sources and mean local rates from ``groupBy(event_type, node).count()``."""
    from pyspark.sql import functions as F

    counts = events.groupBy("event_type", "node").count().collect()
    if duration is None:
        lo, hi = events.agg(F.min(time_attribute), F.max(time_attribute)).first()
        duration = hi - lo + 1
    sources: dict[str, list] = {}
    totals: dict[str, int] = {}
    for r in counts:
        sources.setdefault(r["event_type"], []).append(r["node"])
        totals[r["event_type"]] = totals.get(r["event_type"], 0) + r["count"]
    nodes = sorted({n for ns in sources.values() for n in ns})
    return Network(tuple(nodes), sources, {t: totals[t] / len(sources[t]) / duration
                                           for t in sources})


def estimate_pairwise(events, query: NetQuery | str, *, schema=None
                      ) -> dict[frozenset, float]:
    """σ_{a,b}: among a/b pairs within one window, the fraction meeting the predicates."""
    from pyspark.sql import functions as F

    query = net_query(query, schema)
    ta = query.time_attribute
    out = {}
    for pair in sorted({p.pair for p in query.predicates}, key=sorted):
        a, b = sorted(pair)
        x = events.filter(F.col("event_type") == a).alias("x")
        y = events.filter(F.col("event_type") == b).alias("y")
        near = x.join(y, F.abs(F.col(f"x.{ta}") - F.col(f"y.{ta}")) <= query.window)
        ok = _pair_condition(query.predicates, pair,
                             lambda typ, attr, a=a: _typed(events, "x" if typ == a else "y",
                                                           attr))
        total, hits = near.agg(F.count(F.lit(1)),
                               F.sum(F.when(ok, 1).otherwise(0))).first()
        out[pair] = (hits or 0) / total if total else 1.0
    return out
