"""A discrete-event simulation of PrePP plan execution (§5.2, §7.1) over per-node traces.

Every node generates its local trace in time order. Messages travel on FIFO channels with a
constant ``latency``; each carries one event (push, pull request, pull response) or a control
value (heartbeat, request watermark, response watermark). The protocol:

* **Push** (step with Ψ = ∅): a source sends each event to the sink when it occurs.
* **Pull requests**: the sink runs, per pull step i, a cercore engine for the partial matches
  over 𝒜(s_i); for every new one it sends the match's Ψ_i events to the sources of the types
  of ρ_i that can still complete it (each event at most once per destination).
* **Pull responses**: a source keeps its events of a pulled type ε and the request events
  (active pull requests). An ε event is sent once it forms a partial match over Ψ_i ∪ {ε} with
  request events — checked when a request arrives (for buffered events) and when the event
  occurs (for stored requests) — with the query's predicates (only order and window for a
  window-only plan). Branches of an OR that contain ε but no Ψ_i type send ε unconditionally.
* **Watermarks.** A source's messages carry the time up to which it has sent all its pushes;
  idle sources send heartbeats; the sink's pushed-type watermark is the minimum over sources.
  When request engine i has evaluated up to P, the sink tells the sources of ρ_i (request
  watermark); a source answers with the response watermark P − W (every match holding an ε
  event at time ≤ P − W ends by P, so its requests have arrived) and purges older buffered ε
  events. At the end of its trace a node announces +∞.
* The sink feeds every engine in global ``(t, uid)`` order up to the minimum watermark of the
  engine's types, so the cercore engine (which needs ordered input) evaluates at the sink; the
  final engine's complex events are the detected matches.

The report counts messages by kind, compares transmission with push-all, measures detection
latency (detection time − time of the match's last event) and, with ``check``, verifies that
the detected matches equal the centralised evaluation of the global trace — the correctness
gate. Each pull step delays detection by about a window plus a round trip (the sink waits for
the watermark; the paper's tree NFAs evaluate out of order instead).
"""

from __future__ import annotations

import heapq
import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import cercore
from cercore.network.errors import NetworkError
from cercore.network.evaluate import (
    QueryEvaluator,
    centralised_matches,
    global_trace,
    passes_filters,
    schema_for,
)
from cercore.network.network import Network
from cercore.network.plan import Plan
from cercore.network.query import Branch, NetEvent, NetQuery, pair_test

EVENT_KINDS = ("push", "request", "response")
CONTROL_KINDS = ("heartbeat", "request_watermark", "response_watermark")
INF = math.inf

# DES priorities at equal times: events occur before messages are handled, so a message sent
# at time τ can vouch for every local event with t ≤ τ.
_GEN, _MSG, _TICK = 0, 1, 2


@dataclass
class SimulationReport:
    """What a simulation measured."""

    plan: Plan
    messages: Counter
    transmitted: int                 # push + request + response events
    push_all: int                    # events a push-all plan would send to this sink
    push_all_best: int               # ... to the best sink
    matches: set[frozenset[int]]
    latencies: list[float]
    centralised: set[frozenset[int]] | None = None
    peak_buffer: int = 0             # largest number of buffered events at one source
    per_step_requests: dict[int, int] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        """Transmission ratio vs pushing everything to the best sink."""
        return self.transmitted / self.push_all_best if self.push_all_best else 0.0

    @property
    def correct(self) -> bool | None:
        return None if self.centralised is None else self.matches == self.centralised

    @property
    def mean_latency(self) -> float:
        return sum(self.latencies) / len(self.latencies) if self.latencies else 0.0

    @property
    def max_latency(self) -> float:
        return max(self.latencies, default=0.0)

    def summary(self) -> dict:
        return {"plan": str(self.plan), "transmitted": self.transmitted,
                **{k: self.messages.get(k, 0) for k in EVENT_KINDS + CONTROL_KINDS},
                "push_all_same_sink": self.push_all, "push_all_best_sink": self.push_all_best,
                "ratio": self.ratio, "matches": len(self.matches),
                "correct": self.correct, "mean_latency": self.mean_latency,
                "max_latency": self.max_latency, "peak_buffer": self.peak_buffer}


@dataclass
class _PullState:
    """A source's state for one pulled type: buffered events and how to check them."""

    type: str
    step: int
    pull_set: frozenset[str]
    needs: list[tuple[Branch, tuple[str, ...]]]   # branches with ε, and their Ψ types
    unconditional: bool
    buffer: list[NetEvent] = field(default_factory=list)
    last_p: float = -INF


class Simulation:
    """One run; use :func:`simulate`."""

    def __init__(self, query: NetQuery, network: Network, plan: Plan,
                 traces: dict[Hashable, Sequence[NetEvent]], *, latency: float = 1.0,
                 heartbeat: float | None = None, backend: str = "auto",
                 schema: cercore.Schema | None = None) -> None:
        plan.validate(query, network)
        if not latency > 0:
            raise NetworkError("latency must be > 0")
        self.q, self.net, self.plan = query, network, plan
        self.sink = plan.sink
        self.latency = float(latency)
        self.heartbeat = float(heartbeat if heartbeat is not None else max(query.window, 1))
        if not self.heartbeat > 0:
            raise NetworkError("heartbeat must be > 0")
        self.use_preds = plan.predicate_pull
        self.W = query.window
        all_events = global_trace(traces)
        self.schema = schema or schema_for(query, all_events)
        self.traces = self._local_traces(traces, backend)
        self.step_of = {t: plan.step_of(t) for t in query.types}
        self.messages: Counter = Counter()
        self.per_step_requests: Counter = Counter()
        self.heap: list = []
        self.seq = 0
        self.now = 0.0
        self.last_to_sink: dict[Hashable, float] = {}
        # per node: index of the next local event not yet generated
        self.next_i = {n: 0 for n in network.nodes}
        self._setup_sink(backend)
        self._setup_sources()

    # ---- set-up -------------------------------------------------------------------------
    def _local_traces(self, traces, backend) -> dict[Hashable, list[NetEvent]]:
        out = {n: [] for n in self.net.nodes}
        for n, tr in traces.items():
            if n not in out:
                raise NetworkError(f"trace for {n!r}, which is not a node of the network")
            for e in tr:
                if e.node is not None and e.node != n:
                    raise NetworkError(f"event {e.uid} says node {e.node!r} but is in the trace "
                                       f"of {n!r}")
                if e.type in self.q.types and n not in self.net.sources_of(e.type):
                    raise NetworkError(f"node {n!r} produces a {e.type} event (uid {e.uid}) but "
                                       f"is not a source of {e.type} in the network")
                if not isinstance(e.t, int):
                    raise NetworkError(f"event {e.uid}: time must be an int, not {e.t!r}")
            ordered = sorted((e for e in tr if e.type in self.q.types), key=lambda e: e.key)
            out[n] = passes_filters(self.q, ordered, self.schema, backend)
        return out

    def _setup_sink(self, backend: str) -> None:
        self.req_engines: dict[int, QueryEvaluator] = {}
        self.req_targets: dict[int, dict[frozenset[str], frozenset[str]]] = {}
        for i, s in enumerate(self.plan.steps):
            if s.pull_set:
                xs = self.plan.available(i)
                self.req_engines[i] = QueryEvaluator(self.q, self.schema, xs, backend=backend)
                self.req_targets[i] = {
                    shape: s.acquire & frozenset().union(*(b.types for b in bs))
                    for shape, bs in self.q.partial_shapes(xs).items()}
        self.final = QueryEvaluator(self.q, self.schema, backend=backend)
        self.engines = [(i, e) for i, e in sorted(self.req_engines.items())] + [(None,
                                                                                 self.final)]
        self.pending: dict[int | None, list] = {i: [] for i, _ in self.engines}
        self.progress: dict[int | None, float] = {i: -INF for i, _ in self.engines}
        self.rw_sent: dict[int, float] = {}
        self.heard: dict[Hashable, float] = {n: -INF for n in self.net.nodes}
        self.resp_wm: dict[tuple[Hashable, str], float] = {}
        self.req_sent: set[tuple[int, Hashable]] = set()
        self.detected: dict[frozenset[int], float] = {}
        self.latencies: list[float] = []

    def _setup_sources(self) -> None:
        self.pull: dict[Hashable, dict[str, _PullState]] = defaultdict(dict)
        self.pool: dict[Hashable, dict[str, list[NetEvent]]] = defaultdict(
            lambda: defaultdict(list))
        self.sent_resp: set[int] = set()
        self.peak_buffer = 0
        by_pair = defaultdict(list)
        for p in self.q.predicates:
            by_pair[p.pair].append(p)
        self.pair_preds = {pair: pair_test(ps) for pair, ps in by_pair.items()}
        for i, s in enumerate(self.plan.steps):
            if not s.pull_set:
                continue
            for t in s.acquire:
                needs = [(b, tuple(sorted(b.types & s.pull_set))) for b in self.q.branches
                         if t in b.types]
                for n in self.net.sources_of(t) - {self.sink}:
                    self.pull[n][t] = _PullState(t, i, s.pull_set, needs,
                                                 any(not k for _, k in needs))
        self.pushes_from = {n: any(not self.plan.steps[self.step_of[t]].pull_set
                                   for t in self.net.local_types(n) if t in self.step_of)
                            for n in self.net.nodes}

    # ---- the event loop -----------------------------------------------------------------
    def _schedule(self, time: float, prio: int, what: tuple) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (time, prio, self.seq, what))

    def run(self) -> None:
        for n, tr in self.traces.items():
            if tr:
                self._schedule(tr[0].t, _GEN, ("gen", n))
            else:
                self._schedule(0, _GEN, ("gen", n))  # announces the end at once
            if n != self.sink and self.pushes_from[n] and tr:
                self._schedule(tr[0].t + self.heartbeat, _TICK, ("tick", n))
            if n == self.sink and tr:
                self._schedule(tr[0].t + self.heartbeat, _TICK, ("tick", n))
        while self.heap:
            self.now, _, _, what = heapq.heappop(self.heap)
            getattr(self, "_on_" + what[0])(*what[1:])
        for i, _ in self.engines:
            if self.pending[i] or self.progress[i] != INF:
                raise NetworkError("internal: the simulation ended with unevaluated events "
                                   f"(engine {i}, watermark {self.progress[i]})")

    def _claim(self, n: Hashable) -> float:
        """The time up to which node ``n`` has generated (and pushed) all local events."""
        tr, i = self.traces[n], self.next_i[n]
        return INF if i >= len(tr) else min(self.now, tr[i].t - 1)

    def _send(self, src, dst, kind: str, payload) -> None:
        self.messages[kind] += 1
        claim = self._claim(src)
        self._schedule(self.now + self.latency, _MSG, ("msg", src, dst, kind, payload, claim))
        if dst == self.sink:
            self.last_to_sink[src] = self.now

    def _on_gen(self, n) -> None:
        tr = self.traces[n]
        if self.next_i[n] < len(tr):
            e = tr[self.next_i[n]]
            self.next_i[n] += 1
            if self.next_i[n] < len(tr):
                self._schedule(tr[self.next_i[n]].t, _GEN, ("gen", n))
            if n == self.sink:
                self._arrive(e)
            else:
                self._source_event(n, e)
        if self.next_i[n] >= len(tr):
            self._end_of_trace(n)
        elif n == self.sink:
            self._advance()

    def _end_of_trace(self, n) -> None:
        if n == self.sink:
            self._advance()
            return
        if self.pushes_from[n]:
            self._send(n, self.sink, "heartbeat", None)
        for st in self.pull[n].values():
            if st.last_p > -INF:
                self._send(n, self.sink, "response_watermark", (st.type, st.last_p - self.W))

    def _on_tick(self, n) -> None:
        if self.next_i[n] >= len(self.traces[n]):
            return
        if n == self.sink:
            self._advance()
        elif self.last_to_sink.get(n, -INF) <= self.now - self.heartbeat:
            self._send(n, self.sink, "heartbeat", None)
        self._schedule(self.now + self.heartbeat, _TICK, ("tick", n))

    def _on_msg(self, src, dst, kind, payload, claim) -> None:
        if dst == self.sink:
            self.heard[src] = max(self.heard[src], claim)
            if kind in ("push", "response"):
                self._arrive(payload)
            elif kind == "response_watermark":
                t, w = payload
                key = (src, t)
                self.resp_wm[key] = max(self.resp_wm.get(key, -INF), w)
            self._advance()
        elif kind == "request":
            self._on_request(dst, payload)
        elif kind == "request_watermark":
            self._on_request_watermark(dst, *payload)

    # ---- sink -----------------------------------------------------------------------------
    def _arrive(self, e: NetEvent) -> None:
        for i, ev in self.engines:
            if e.type in ev.types:
                heapq.heappush(self.pending[i], (e.key, e))

    def _type_wm(self, t: str) -> float:
        wm = INF
        if self.sink in self.net.sources_of(t):
            wm = self._claim(self.sink)
        pulled = bool(self.plan.steps[self.step_of[t]].pull_set)
        for n in self.net.sources_of(t) - {self.sink}:
            wm = min(wm, self.resp_wm.get((n, t), -INF) if pulled else self.heard[n])
        return wm

    def _advance(self) -> None:
        wm = {t: self._type_wm(t) for t in self.q.types}
        for i, ev in self.engines:
            upto = min(wm[t] for t in ev.types)
            if upto <= self.progress[i]:
                continue
            batch, pend = [], self.pending[i]
            while pend and pend[0][0][0] <= upto:
                batch.append(heapq.heappop(pend)[1])
            found = ev.feed(batch)
            self.progress[i] = upto
            if i is None:
                for m in found:
                    uids = frozenset(e.uid for e in m)
                    if uids not in self.detected:
                        self.detected[uids] = self.now
                        self.latencies.append(self.now - max(e.t for e in m))
            else:
                self._request(i, found)
                last = self.rw_sent.get(i, -INF)
                if upto == INF or upto - last >= self.heartbeat:
                    self.rw_sent[i] = upto
                    for n in self._pull_sources(i):
                        self._send(self.sink, n, "request_watermark", (i, upto))

    def _pull_sources(self, i: int) -> set:
        return {n for t in self.plan.steps[i].acquire for n in self.net.sources_of(t)} - {
            self.sink}

    def _request(self, i: int, matches) -> None:
        psi = self.plan.steps[i].pull_set
        for m in matches:
            targets = self.req_targets[i][frozenset(e.type for e in m)]
            dests = {n for t in targets for n in self.net.sources_of(t)} - {self.sink}
            for x in m:
                if x.type not in psi:
                    continue
                for d in sorted(dests, key=str):
                    if (x.uid, d) not in self.req_sent:
                        self.req_sent.add((x.uid, d))
                        self.per_step_requests[i] += 1
                        self._send(self.sink, d, "request", x)

    # ---- sources --------------------------------------------------------------------------
    def _source_event(self, n, e: NetEvent) -> None:
        st = self.pull[n].get(e.type)
        if st is None:  # pushed
            self._send(n, self.sink, "push", e)
            return
        if st.unconditional or self._completes(n, st, e, None):
            self._respond(n, e)
        else:
            st.buffer.append(e)
            self.peak_buffer = max(self.peak_buffer, sum(len(s.buffer) for s in
                                                         self.pull[n].values()))

    def _respond(self, n, e: NetEvent) -> None:
        if e.uid not in self.sent_resp:
            self.sent_resp.add(e.uid)
            self._send(n, self.sink, "response", e)

    def _on_request(self, n, x: NetEvent) -> None:
        self.pool[n][x.type].append(x)
        for st in self.pull[n].values():
            if x.type not in st.pull_set:
                continue
            keep = []
            for e in st.buffer:
                if abs(e.t - x.t) <= self.W and self._completes(n, st, e, x):
                    self._respond(n, e)
                else:
                    keep.append(e)
            st.buffer = keep

    def _on_request_watermark(self, n, step: int, p: float) -> None:
        for st in self.pull[n].values():
            if st.step != step:
                continue
            st.last_p = max(st.last_p, p)
            st.buffer = [e for e in st.buffer if e.t >= p - self.W]  # final: never pulled
            self._send(n, self.sink, "response_watermark",
                       (st.type, min(p - self.W, self._claim(n))))
        # request events older than any future use (a buffered or future ε ± one window)
        horizon = min((st.last_p for st in self.pull[n].values()), default=-INF)
        horizon = min(horizon - 2 * self.W, self.now - self.W)
        for k, xs in self.pool[n].items():
            self.pool[n][k] = [x for x in xs if x.t >= horizon]

    def _completes(self, n, st: _PullState, e: NetEvent, forced: NetEvent | None) -> bool:
        """Whether ``e`` forms a partial match over Ψ ∪ {ε} with request events at ``n``
        (including ``forced`` when given)."""
        pool = self.pool[n]
        for branch, ktypes in st.needs:
            if forced is not None and forced.type not in ktypes:
                continue
            cands = []
            for k in ktypes:
                if forced is not None and k == forced.type:
                    cands.append([forced])
                else:
                    cands.append([x for x in pool.get(k, ()) if abs(x.t - e.t) <= self.W])
            if all(cands) and self._search(branch, [e], cands, 0):
                return True
        return False

    def _search(self, branch: Branch, chosen: list[NetEvent], cands, i: int) -> bool:
        if i == len(cands):
            return True
        lo = min(c.t for c in chosen)
        hi = max(c.t for c in chosen)
        for x in cands[i]:
            if max(hi, x.t) - min(lo, x.t) > self.W:
                continue
            if all(self._pair_ok(branch, c, x) for c in chosen):
                chosen.append(x)
                if self._search(branch, chosen, cands, i + 1):
                    return True
                chosen.pop()
        return False

    def _pair_ok(self, branch: Branch, a: NetEvent, b: NetEvent) -> bool:
        if (a.type, b.type) in branch.before and not a.key < b.key:
            return False
        if (b.type, a.type) in branch.before and not b.key < a.key:
            return False
        if self.use_preds:
            test = self.pair_preds.get(frozenset((a.type, b.type)))
            return test is None or test(a, b)
        return True


def simulate(query: NetQuery, network: Network, plan: Plan,
             traces: dict[Hashable, Sequence[NetEvent]], *, latency: float = 1.0,
             heartbeat: float | None = None, backend: str = "auto", check: bool = True,
             schema: cercore.Schema | None = None) -> SimulationReport:
    """Execute ``plan`` over the local ``traces`` (node → events) and report what was sent.
    With ``check``, also evaluate centrally and compare (``report.correct``)."""
    sim = Simulation(query, network, plan, traces, latency=latency, heartbeat=heartbeat,
                     backend=backend, schema=schema)
    sim.run()
    counts = {n: len(tr) for n, tr in sim.traces.items()}
    total = sum(counts.values())
    push_all = total - counts.get(plan.sink, 0)
    best = total - max(counts.values(), default=0)
    central = None
    if check:
        central = centralised_matches(query, sim.traces, sim.schema, backend)
    transmitted = sum(sim.messages[k] for k in EVENT_KINDS)
    return SimulationReport(plan, sim.messages, transmitted, push_all, best,
                            set(sim.detected), sim.latencies, central, sim.peak_buffer,
                            dict(sim.per_step_requests))
