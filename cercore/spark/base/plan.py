"""How a compiled query runs on Spark: T-CER slices, one engine per key, or one ordered pass.

Pure Python (no pyspark import), so the choice can be explained and tested anywhere.

The three plans ("Aggregates are all you need", §4 T-CER, keyed and ordered evaluation):

* **keyed** — PARTITION BY: one engine per key, each over its key's events in (time, seq)
  order. Exact whenever nothing crosses keys: the engine evaluates partitions independently,
  and selection strategies, ``:``, STRICT, LIMIT (per triggering event, which lies in one key)
  and CONSUME BY PARTITION all act inside one partition. Not exact for CONSUME BY ANY (a match
  in one key discards runs in all keys) or WITHIN n EVENTS (it counts the events of all keys).
* **tcer** — the T-CER construction for queries whose matches span at most ε (WITHIN,
  inclusive): overlapping slices [l, l + WS) with l = k·WA, WS = WA + D_C − 1 and D_C = ε + 1
  (WITHIN is ≤, T-CER's span bound is <, hence the + 1). Each slice runs a fresh engine;
  a complex event is kept only by the slice k = ⌊(end − ε) / WA⌋, the one slice that holds
  the whole window before its end, [end − ε, end], so it is reported exactly once. Exact when
  the complex events ending at an event depend only on the events of that window: every
  strategy under WITHIN (NEXT/LAST/MAX select among the complex events that fit the window)
  and LIMIT (per triggering event, after selection); not CONSUME BY, which discards runs after
  earlier matches. The slice coordinate is the
  window attribute when it is also the ordering time, or the global position for
  WITHIN n EVENTS when the query reads every event (ticks = positions).
* **single** — one engine over the whole stream in (time, seq) order: always exact, no
  parallelism. Used for history-dependent queries that cannot be keyed.

A leading absence (``ABSENT(ψ) WITHIN T ; φ``, ``AnalysedQuery.lookback``) looks at the ψ events
in the T before a complex event's start: a key's engine sees them all, and T-CER slices reach T
further back (WS grows by T, a complex event is kept by slice ⌊(end − ε − T) / WA⌋).

A deadline (``φ ; ABSENT(ψ) WITHIN T``, ``AnalysedQuery.deadline``) is decided by what follows a
complex event's end: ψ events of its partition up to T after it, and whether any event the query
reads passes its deadline (event time is global, across partitions). Keyed groups are told the
input's latest read time (one aggregate) and fire the deadlines before it at their end, so they
are exact; T-CER slices by time grow by T (WS = WA + D_C − 1 + T: the slice keeping a complex
event also holds every event up to its deadline) and fire the same way; slices by position are
not bounded in time, so a deadline query without keys or time slices runs in one pass.

**In place** (batch, keyed and T-CER by time): when the input is in event order already -- each
Spark partition sorted, the partitions in a row, as event logs are mostly written -- the engines
run where Spark reads the data, one engine over each read partition (which holds every key of its
stretch of time), with no exchange. A read partition p covering times [a_p, b_p] finds exactly
the complex events whose window lies inside it; with K = ε + a leading absence's T
(``in_place``), it reports those with end − K > b_{p−1} (the previous partition's last time).
The others ("crossing") end within K after the boundary: a second, small stage runs an engine
over each boundary's rows, times [a_p − K, b_{p−1} + K], and reports those that end in p. Exact
under T-CER's conditions (WITHIN on the ordering time, no history dependence) and without a
deadline (which looks past a complex event's end); partitions must be longer than K around each
boundary, else the plan is the shuffled one. Over plain Parquet files in order, the layout
comes from the footers (``ceql.footers``) and the plan is the in-place stage alone: its
workers read their runs of row groups and each the rows of the boundary before its run (or,
when Spark must read the files, the boundary stage runs on the driver).

Streaming runs the same plans, with state per key (PARTITION BY key, T-CER slice, or one
constant key), except T-CER by position (a stream has no global positions); T-CER by event time
runs only when asked for: measured on two cores, a state per slice in every micro-batch cost
more than one state for the stream.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from cercore.runtime.slices import history_dependence, window_reach

TCER = "tcer"
KEYED = "keyed"
SINGLE = "single"


@dataclass(frozen=True)
class SparkPlan:
    """The plan choice for one query. ``coordinate`` ("time" | "position") and ``span_limit``
    (D_C, in coordinate units) are set for T-CER; the slice advance WA is chosen at run time
    from the data's extent unless given."""

    kind: str
    reason: str
    coordinate: str | None = None
    span_limit: int | None = None
    history_dependent: str | None = None  # why a window-local run is not exact, if it is not
    reach: int = 0  # T-CER: how far after its end a complex event's fate is decided (deadline T)
    lookback: int = 0  # T-CER: how far before its start (ABSENT(ψ) WITHIN T ; φ)
    # batch, input in event order: K = ε (+ a leading absence's T), how far before its end a
    # complex event depends on events, when the plan can run in place (None: it cannot)
    in_place: int | None = None
    in_place_why_not: str | None = None

    def slice_size(self, advance: int) -> int:
        """WS for a slice advance WA: the smallest size keeping every match inside a slice
        (WA ≤ WS − D_C + 1), and every event its absences look at too: up to its deadline
        after its end, back to the span of a leading absence before its start
        (WS = WA + D_C − 1 + T_after + T_before)."""
        return advance + self.span_limit - 1 + self.reach + self.lookback

    @property
    def keep_offset(self) -> int:
        """How far before a complex event's end the slice keeping it begins: ε, and the span
        of a leading absence (slice ⌊(end − ε − T_before) / WA⌋ holds all it depends on)."""
        return self.span_limit - 1 + self.lookback

    def describe(self, advance: int | None = None) -> str:
        name = {TCER: "T-CER (overlapping slices, parallel, exact)",
                KEYED: "keyed (one engine per PARTITION BY key)",
                SINGLE: "single ordered pass (one engine, no parallelism)"}[self.kind]
        lines = [f"spark plan: {name}", f"why: {self.reason}"]
        if self.kind == TCER:
            unit = "time units" if self.coordinate == "time" else "positions"
            lines.append(f"slices by {'event time' if self.coordinate == 'time' else 'position'}"
                         f": span limit D_C = ε + 1 = {self.span_limit} {unit} (WITHIN is "
                         "inclusive)" + (f", plus the deadline T = {self.reach} after a "
                                         "complex event's end" if self.reach else "")
                         + (f", plus the span T = {self.lookback} an absence looks back "
                            "before its start" if self.lookback else ""))
            if advance is not None:
                size = self.slice_size(advance)
                back = "ε + T_before" if self.lookback else "ε"
                lines.append(f"slice advance WA = {advance}, slice size WS = {size}, "
                             f"≤ {-(-size // advance)} slices per event; a complex event "
                             f"is kept by the slice ⌊(end − {back}) / WA⌋ only (the one "
                             "holding the window before its end)")
            else:
                lines.append("slice advance WA: chosen from the data's extent (≥ D_C"
                             + (" + T" if self.reach or self.lookback else "")
                             + ", so each event is in at most 2 slices), or slice_advance=")
        if self.in_place is not None:
            lines.append("in place when the input is in event order (ordered=True, or the "
                         "first pass finds it so, with at least as many read partitions as "
                         "cores): one engine per read partition, no exchange; complex events "
                         f"ending within K = {self.in_place} after a partition's start come "
                         "from a second stage over each boundary's rows (over plain "
                         "Parquet files, the worker of the run after each boundary reads "
                         "them)")
        elif self.in_place_why_not is not None:
            lines.append(f"not in place: {self.in_place_why_not}")
        return "\n".join(lines)


def _crosses_keys(analysed) -> str | None:
    """Why one engine per key would differ from one engine over everything (None: it does
    not)."""
    if analysed.query.consume == "ANY":
        return "CONSUME BY ANY discards partial matches in every key"
    if analysed.window.kind == "events":
        return "WITHIN n EVENTS counts the events of all keys"
    return None


def reads_every_event(analysed) -> bool:
    """Whether the query reads every declared event type (no FROM restricting them): then a
    WITHIN n EVENTS window counts exactly the stream's positions."""
    return len(analysed.visible_types) == len(analysed.schema.event_types)


def choose_plan(analysed, order_attribute: str | None, *, streaming: bool = False,
                on_error: str = "raise") -> SparkPlan:
    """The plan for ``analysed`` (a ``cercore.ceql.analysis.AnalysedQuery``) when the events
    are ordered by ``order_attribute`` (then a sequence). With ``streaming`` the plan is keyed
    or single: T-CER (by event time only, a stream has no global positions) is exact where
    batch would slice by time, but runs only when asked for (``streaming_tcer``)."""
    plan = _batch_plan(analysed, order_attribute, on_error)
    if not streaming:
        return plan
    plan = dataclasses.replace(plan, in_place=None, in_place_why_not=None)  # (batch only)
    if plan.kind != TCER:
        return plan
    if plan.coordinate == "position":
        return SparkPlan(SINGLE, f"{plan.reason}; but a stream cannot number without one "
                         "engine the global positions these slices need")
    return SparkPlan(SINGLE, f"{plan.reason}; streaming keeps one state for the stream: T-CER "
                     "slices by event time are exact here (plan='tcer') but cost one state per "
                     "slice in every micro-batch, which pays only when micro-batches span "
                     "several slices")


def _batch_plan(analysed, order_attribute: str | None, on_error: str) -> SparkPlan:
    """``choose_plan`` for a batch DataFrame, with what it needs to run in place."""
    plan = _shuffled_plan(analysed, order_attribute, on_error)
    if plan.kind == SINGLE or plan.kind == TCER and plan.coordinate != "time":
        return plan
    k, why_not = window_reach(analysed, order_attribute)
    return dataclasses.replace(plan, in_place=k, in_place_why_not=why_not)


def _shuffled_plan(analysed, order_attribute: str | None, on_error: str) -> SparkPlan:
    """The plan over input in any order."""
    w = analysed.window
    history = history_dependence(analysed)
    crossing = _crosses_keys(analysed)
    if analysed.partition_by and crossing is None:
        return SparkPlan(KEYED, "PARTITION BY: matches never combine events of two keys and "
                         "nothing in the query crosses keys", history_dependent=history)
    why_not_keyed = ("no PARTITION BY" if not analysed.partition_by
                     else f"not keyed: {crossing}")
    if w.kind is None:
        return SparkPlan(SINGLE, f"{why_not_keyed} and no WITHIN: a match may span the whole "
                         "stream", history_dependent=history)
    if history is not None:
        return SparkPlan(SINGLE, f"{why_not_keyed}; history-dependent: {history}",
                         history_dependent=history)
    d_c = int(w.epsilon) + 1
    if w.kind == "events":
        if analysed.deadline is not None:
            return SparkPlan(SINGLE, f"{why_not_keyed}; WITHIN n EVENTS slices by position, "
                             "which does not bound how far in time the ABSENT(...) deadline "
                             "reaches")
        if not reads_every_event(analysed):
            return SparkPlan(SINGLE, f"{why_not_keyed}; WITHIN n EVENTS counts only the "
                             "events FROM reads, which positions do not give")
        if on_error != "raise":
            return SparkPlan(SINGLE, f"{why_not_keyed}; WITHIN n EVENTS with on_error="
                             f"{on_error!r}: skipped events would shift the counts")
        return SparkPlan(TCER, f"{why_not_keyed}; WITHIN {w.epsilon} EVENTS bounds every "
                         "match's span in positions", coordinate="position", span_limit=d_c)
    if w.attribute != order_attribute:
        return SparkPlan(SINGLE, f"{why_not_keyed}; the window attribute {w.attribute!r} is "
                         f"not the ordering time {order_attribute!r}, so slices by it would "
                         "not be contiguous runs of the stream")
    deadline, lookback = analysed.deadline, analysed.lookback
    return SparkPlan(TCER, f"{why_not_keyed}; WITHIN bounds every match's span "
                     f"({w.attribute} difference ≤ {w.epsilon})"
                     + ("" if deadline is None else f", its deadline ends {deadline.span} "
                        "after it") + ("" if lookback is None else f", its leading absence "
                                       f"looks {lookback.span} back"),
                     coordinate="time", span_limit=d_c,
                     reach=0 if deadline is None else int(deadline.span),
                     lookback=0 if lookback is None else int(lookback.span))


def absence_lines(analysed, plan: SparkPlan, streaming: bool) -> list[str]:
    """What ``explain`` says about absences with a span on ``plan``: a deadline
    (``φ ; ABSENT(ψ) WITHIN T``) and a leading absence (``ABSENT(ψ) WITHIN T ; φ``)."""
    lines = []
    d = analysed.deadline
    if d is not None:
        head = (f"deadline: T = {d.span} [{d.attribute}]; a complex event is reported once "
                "event time passes its end + T with no ψ event of its partition up to then")
        if streaming:
            lines.append(head + ": when the watermark passes it (on the key's next rows, or an "
                         "event-time timer set for it); pending complex events stay in the "
                         "key's state across micro-batches and restarts")
        else:
            where = {KEYED: "each key's engine also fires, at the end of its group, the "
                            "deadlines before the input's latest read time (one aggregate), as "
                            "a later event of another key does locally",
                     TCER: "slices grow by T, so the slice keeping a complex event holds every "
                           "event up to its deadline, and fire at their end the deadlines "
                           "before the input's latest read time (one aggregate)",
                     SINGLE: "one engine sees every event"}[plan.kind]
            lines.append(head + ": on a later event the query reads, as the local engine's "
                         "process() (the end of the input fires nothing); " + where)
    b = analysed.lookback
    if b is not None:
        lines.append(f"leading absence: T = {b.span} [{b.attribute}] before a complex event's "
                     "start; " + ("T-CER slices reach T further back" if plan.kind == TCER
                                  else "each engine sees every ψ event of its partition"))
    return lines


def streaming_tcer(analysed, order_attribute: str | None, on_error: str = "raise"
                   ) -> SparkPlan | None:
    """The T-CER plan a stream may be asked to run (``plan="tcer"``): the batch choice when it
    slices by event time, else None."""
    plan = _shuffled_plan(analysed, order_attribute, on_error)
    return plan if plan.kind == TCER and plan.coordinate == "time" else None
