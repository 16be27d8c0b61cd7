"""CORE's Algorithm 1 (evaluation) and Algorithm 2 (enumeration), pure-Python reference backend.

One evaluator serves every partition of a query: each partition has its own table T (active
deterministic state -> union list, in first-insertion order, which is what ``ordered-keys``
needs), and all of them share one node arena. The determinised transition table is filled
lazily: a miss asks the determiniser once.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from cercore.automata.determinize import NO_STATE, LazyDeterminiser
from cercore.interface.constants import (
    BOTTOM,
    CONSUME_ANY,
    CONSUME_NONE,
    MIN_COMPACTION,
    NIL,
    OUTPUT,
    UNBOUNDED_PAST,
    window_start,
)
from cercore.interface.evaluator import EvaluatorInput
from cercore.interface.state import NODE_FIELDS, WORK_KEYS, EvaluatorState, pickled, unpickled
from cercore.runtime.letters import LetterEncoder
from cercore.runtime.output import ComplexEvent
from cercore.runtime.tecs import NodeArena

# work counter (``work_counts`` key) -> the attribute the hot loop increments
_WORK_ATTRIBUTES = {key: "w_" + key for key in WORK_KEYS}


class PythonEvaluator:
    """Algorithm 1 over letters, plus window-pruned enumeration and arena reclamation."""

    backend = "python"

    def __init__(self, det: LazyDeterminiser, encoder: LetterEncoder) -> None:
        self.det = det
        self.encoder = encoder
        self.arena = NodeArena()
        self.table: list[list] = []  # det state -> [letter -> (q•, q∘, next pre) or None]
        self.pre: dict[int, int] = {}  # partition -> pre state, where not the initial state
        self.partitions: dict[int, dict[int, list[int]]] = {}
        self.compact_at = MIN_COMPACTION
        self.reclaimed = False  # a reclamation pass ran that is not reported yet
        self.on_reclaim = None  # (tau) -> None: told after a run that reclaimed (the engine)
        self.reported = 0  # complex events yielded so far (the engine counts deltas)
        self.last_tau = UNBOUNDED_PAST
        self.between = None  # predicates between events, checked while enumerating
        self.labels: dict[tuple[int, int], int] = {}  # (det state, letter) -> -2 - label
        self.reset_work_counts()

    def check_between(self, plan, check) -> None:
        """Check predicates between events while enumerating: ``plan`` (a ``BetweenPlan``)
        labels the OUTPUT nodes, ``check`` (an ``IncrementalCheck``) prunes the walk."""
        self.between = check
        self.plan = plan
        self.labels = {}

    # ---- per batch ------------------------------------------------------------------------------
    def run(self, batch: EvaluatorInput, view=None) -> Iterator:
        """Evaluate the batch's events at offsets ``batch.active`` (in order) and yield
        (start, end, positions) of every complex event as soon as its last event is read —
        or, given a ``view`` (the engine's store snapshot), ``ComplexEvent`` views.

        ``limit`` >= 0 reports at most that many complex events per event (the first ones of
        the enumeration order). ``consume``: after an event that completes a complex event
        (within the window, reported or not), discard every partial match (CONSUME_ANY) or
        those of the event's partition (CONSUME_PARTITION)."""
        (active, pids, letters, times, first_position, epsilon, windowed, limit,
         consume) = batch
        step = self.step
        reclaiming = windowed or consume != CONSUME_NONE
        for k in active.tolist():
            t = int(times[k])
            tau = window_start(t, epsilon) if windowed else UNBOUNDED_PAST
            pid = int(pids[k])
            pos = first_position + k
            finals = step(pid, int(letters[k]), pos, t, tau)
            if finals:
                yield from self._outputs(finals, pid, pos, tau, limit, consume, view)
            if reclaiming and len(self.arena) >= self.compact_at:
                self.reclaim(tau)
        self.report_reclaimed()

    def run_one(self, pid: int, letter: int, pos: int, time: int, epsilon: int,
                windowed: bool, limit: int, consume: int, view=None) -> list:
        """One event (the record path): what ``run`` does for it, its complex events as a
        list."""
        tau = window_start(time, epsilon) if windowed else UNBOUNDED_PAST
        finals = self.step(pid, letter, pos, time, tau)
        out = list(self._outputs(finals, pid, pos, tau, limit, consume, view)) if finals else []
        if (windowed or consume != CONSUME_NONE) and len(self.arena) >= self.compact_at:
            self.reclaim(tau)
            self.report_reclaimed()
        return out

    def _outputs(self, finals: list[int], pid: int, pos: int, tau: int, limit: int,
                 consume: int, view) -> Iterator:
        """The complex events of one event's final nodes (at most ``limit``), then CONSUME
        BY."""
        left = limit
        # with predicates between events, CONSUME BY needs a complex event that satisfies
        # them: under LIMIT 0 the enumeration looks for one and reports nothing
        matched = False
        probing = self.between is not None and consume != CONSUME_NONE and left == 0
        if probing:
            left = 1
        for node in finals:
            if left == 0:
                break
            for start, positions in self.enumerate(node, tau, pos):
                matched = True
                if probing:
                    left = 0
                    break
                self.reported += 1
                yield (start, pos, positions) if view is None \
                    else ComplexEvent.view(start, pos, positions, view)
                left -= 1
                if left == 0:
                    break
        if consume != CONSUME_NONE:
            maxs = self.arena.maxs
            if matched if self.between is not None else any(maxs[node] >= tau
                                                            for node in finals):
                # the partition(s) start afresh: no partial match, no strategy history
                if consume == CONSUME_ANY:
                    self.partitions.clear()
                    self.pre.clear()
                else:
                    self.partitions.pop(pid, None)
                    self.pre.pop(pid, None)

    def run_arrays(self, batch: EvaluatorInput
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``run`` in bulk: (start, end, offsets, positions) int64 arrays; complex event i has
        positions ``positions[offsets[i]:offsets[i + 1]]``."""
        starts: list[int] = []
        ends: list[int] = []
        offsets = [0]
        positions: list[int] = []
        for start, end, pos in self.run(batch):
            starts.append(start)
            ends.append(end)
            positions.extend(pos)
            offsets.append(len(positions))
        return (np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64),
                np.array(offsets, dtype=np.int64), np.array(positions, dtype=np.int64))

    # ---- lazy determinisation -------------------------------------------------------------
    def transition(self, sid: int, letter: int) -> tuple[int, int, int]:
        table = self.table
        while len(table) <= sid:
            table.append([])
        row = table[sid]
        if letter < len(row):
            tr = row[letter]
            if tr is not None:
                return tr
        else:
            row.extend([None] * (letter + 1 - len(row)))
        tr = row[letter] = self.det.successors(sid, self.encoder.atom_masks[letter])
        self.w_determinisation_misses += 1
        return tr

    def _label(self, sid: int, letter: int) -> int:
        """The binding label of det state ``sid``'s marking move on ``letter``, encoded for
        an OUTPUT node's ``right``."""
        code = self.labels.get((sid, letter))
        if code is None:
            det = self.det
            code = self.labels[sid, letter] = -2 - self.plan.label(
                det.cea, det.subsets[sid], self.encoder.atom_masks[letter])
        return code

    # ---- work counters --------------------------------------------------------------------------
    def work_counts(self) -> dict[str, int]:
        """Work done so far, counted in operations (not time); the same keys, counting the same
        operations, on both backends (``cercore.interface.state.WORK_KEYS``):

        - ``events``: events stepped by Algorithm 1 (the batch's active events);
        - ``transitions``: transition-table lookups, one per (state, union list) pair an event
          runs through δ: the new bottom's list in the pre state, plus every entry of the
          partition's table still inside the window;
        - ``determinisation_misses``: lookups the table could not answer, so the lazy
          determiniser was asked (at most once per (det state, letter));
        - ``nodes_bottom`` / ``nodes_output`` / ``nodes_union``: tECS nodes created by each
          constructor (union nodes include those of union-list inserts and merges);
        - ``union_list_inserts`` / ``union_list_merges``: union-list operations (§4.2);
        - ``step_work_max``: the largest work of one event's step (transitions + nodes created
          + union-list operations): a maximum, not a sum;
        - ``enumerated``: complex events produced by Algorithm 2 (reported or cut by LIMIT
          after production);
        - ``enumerated_positions``: their positions, summed over complex events;
        - ``enumeration_nodes``: tECS nodes the depth-first enumeration visited;
        - ``predicate_checks``: events joining an enumerated path that predicates between
          events were checked on (each with the combinations it completes);
        - ``branches_pruned``: paths abandoned because such a check failed (with every complex
          event below), or complex events the whole check dropped at the bottom.

        The counters travel with ``to_state``/pickling and survive backend moves."""
        return {key: getattr(self, attr) for key, attr in _WORK_ATTRIBUTES.items()}

    def reset_work_counts(self, counts: dict[str, int] | None = None) -> None:
        """Set every work counter to 0, or to ``counts`` (keys of ``work_counts``)."""
        c = counts or {}
        for key, attr in _WORK_ATTRIBUTES.items():
            setattr(self, attr, c.get(key, 0))

    # ---- Algorithm 1 ------------------------------------------------------------------------
    def step(self, pid: int, letter: int, pos: int, time: int, tau: int) -> list[int]:
        """Read one event of partition ``pid``; return the nodes whose complex events end here."""
        arena = self.arena
        maxs = arena.maxs
        final = self.det.final
        old = self.partitions.get(pid)
        new: dict[int, list[int]] = {}
        size0 = len(arena.kind)
        # work counters, kept in locals in the loop (cheaper than attributes)
        n_trans = n_out = n_ins = n_merge = 0
        bottom = arena.new_bottom(pos, time)
        # runs starting here begin in the partition's pre state (the initial state unless a
        # selection strategy ranks them against the partition's history)
        initial = self.det.initial
        pre = self.pre.get(pid, initial)
        next_pre = self.transition(pre, letter)[2]
        if next_pre != pre:
            if next_pre == initial:
                del self.pre[pid]
            else:
                self.pre[pid] = next_pre
        items = [(pre, [bottom])]
        if old:
            items.extend(old.items())
        table = self.table
        for p, ul in items:
            if maxs[ul[0]] < tau:  # every run in this list started outside the window
                continue
            n_trans += 1
            row = table[p] if p < len(table) else None
            tr = row[letter] if row is not None and letter < len(row) else None
            if tr is None:
                tr = self.transition(p, letter)
            q_mark, q_skip, _ = tr
            merged = NIL
            if q_mark != NO_STATE:
                merged = arena.merge(ul)
                out = arena.extend(merged, pos, NIL if self.between is None
                                   else self._label(p, letter))
                n_merge += 1
                n_out += 1
                target = new.get(q_mark)
                if target is None:
                    new[q_mark] = [out]
                else:
                    arena.insert(target, out)
                    n_ins += 1
            if q_skip != NO_STATE:
                target = new.get(q_skip)
                if target is None:
                    new[q_skip] = ul  # each old list moves to at most one new state
                else:
                    if merged == NIL:
                        merged = arena.merge(ul)
                        n_merge += 1
                    arena.insert(target, merged)
                    n_ins += 1
        if new:
            self.partitions[pid] = new
        elif old is not None:
            del self.partitions[pid]
        finals = [arena.merge(ul) for q, ul in new.items() if final[q]]
        n_merge += len(finals)
        # union nodes are what the step created beyond its one bottom and its output nodes
        created = len(arena.kind) - size0
        self.w_events += 1
        self.w_nodes_bottom += 1
        self.w_transitions += n_trans
        self.w_nodes_output += n_out
        self.w_nodes_union += created - 1 - n_out
        self.w_union_list_inserts += n_ins
        self.w_union_list_merges += n_merge
        work = n_trans + created + n_ins + n_merge
        if work > self.w_step_work_max:
            self.w_step_work_max = work
        return finals

    # ---- Algorithm 2 --------------------------------------------------------------------------
    def enumerate(self, node: int, tau: int, end: int = -1
                  ) -> Iterator[tuple[int, tuple[int, ...]]]:
        """(start, positions) of every complex event below ``node`` that starts at time ≥ tau,
        depth-first, left before right (latest start first). With predicates between events
        (``check_between``), a branch whose events fail one is abandoned as soon as they are
        bound; ``end`` is the complex events' end (for the whole check at the bottom)."""
        if self.between is not None:
            yield from self._enumerate_checked(node, tau, end)
            return
        arena = self.arena
        kind, pos, maxs, left, right = arena.kind, arena.pos, arena.maxs, arena.left, arena.right
        if maxs[node] < tau:
            return
        stack: list[tuple[int, tuple | None]] = [(node, None)]
        visited = 0  # flushed into the counters before each yield (the caller may stop there)
        while stack:
            n, path = stack.pop()
            while True:
                visited += 1
                k = kind[n]
                if k == BOTTOM:
                    positions = self._completed(path, visited)
                    visited = 0
                    yield pos[n], positions
                    break
                if k == OUTPUT:
                    path = (pos[n], path)
                else:
                    r = right[n]
                    if r != NIL and maxs[r] >= tau:
                        stack.append((r, path))
                n = left[n]
        self.w_enumeration_nodes += visited

    def _completed(self, path: tuple | None, visited: int) -> tuple[int, ...]:
        """A walk reached a bottom: the positions of ``path`` (a linked list, earliest
        first), counted with the ``visited`` nodes."""
        out = []
        while path is not None:
            out.append(path[0])
            path = path[1]
        self.w_enumeration_nodes += visited
        self.w_enumerated += 1
        self.w_enumerated_positions += len(out)
        return tuple(out)

    def _enumerate_checked(self, node: int, tau: int, end: int
                           ) -> Iterator[tuple[int, tuple[int, ...]]]:
        """``enumerate`` checking predicates between events as each event joins the path
        (cercore.runtime.event_predicates): the same walk, with the path's depth on the
        stack so that backtracking restores the events bound so far."""
        arena = self.arena
        kind, pos, maxs, left, right = arena.kind, arena.pos, arena.maxs, arena.left, arena.right
        check = self.between
        if maxs[node] < tau:
            return
        check.cut(0)
        stack: list[tuple[int, tuple | None, int]] = [(node, None, 0)]
        visited = 0
        checks0, pruned0 = check.checks, check.pruned
        try:
            while stack:
                n, path, depth = stack.pop()
                check.cut(depth)
                while True:
                    visited += 1
                    k = kind[n]
                    if k == BOTTOM:
                        positions = self._completed(path, visited)
                        visited = 0
                        if check.accepts(pos[n], end, positions):
                            yield pos[n], positions
                        break
                    if k == OUTPUT:
                        if not check.push(pos[n], -2 - right[n], depth):
                            break
                        path = (pos[n], path)
                        depth += 1
                    else:
                        r = right[n]
                        if r != NIL and maxs[r] >= tau:
                            stack.append((r, path, depth))
                    n = left[n]
        finally:
            self.w_enumeration_nodes += visited
            self.w_predicate_checks += check.checks - checks0
            self.w_branches_pruned += check.pruned - pruned0

    # ---- memory -------------------------------------------------------------------------------
    def reclaim(self, tau: int) -> None:
        maxs = self.arena.maxs
        lists: list[list[int]] = []
        for pid in list(self.partitions):
            table = self.partitions[pid]
            for q in list(table):
                ul = table[q]
                if maxs[ul[0]] < tau:
                    del table[q]
                    continue
                while maxs[ul[-1]] < tau:
                    ul.pop()
                lists.append(ul)
            if not table:
                del self.partitions[pid]
        self.arena.compact(lists, tau)
        self.compact_at = max(MIN_COMPACTION, 2 * len(self.arena))
        self.reclaimed = True
        self.last_tau = tau

    def compact(self, tau: int) -> None:
        """Reclaim now the nodes of partial matches that start before ``tau`` (what a run
        does when the arena fills)."""
        self.reclaim(tau)
        self.report_reclaimed()

    def report_reclaimed(self) -> None:
        """At the end of a run: tell ``on_reclaim`` the window start of the reclamation
        passes it made (then the engine forgets what the evaluator no longer holds)."""
        if self.reclaimed and self.on_reclaim is not None:
            self.reclaimed = False
            self.on_reclaim(self.last_tau)

    def live_partitions(self) -> set[int]:
        return set(self.partitions) | set(self.pre)

    def memory_nodes(self) -> int:
        return len(self.arena)


    # ---- state (backend-neutral, see cercore.interface.state) ---------------------------------
    def to_state(self):
        """A backend-neutral ``EvaluatorState`` (numpy arrays; partitions sorted by id)."""
        a = self.arena
        return EvaluatorState(
            **EvaluatorState.pack_nodes({f: getattr(a, f) for f in NODE_FIELDS}),
            **EvaluatorState.pack_partitions(self.partitions),
            **EvaluatorState.pack_pre(self.pre),
            table=EvaluatorState.pack_table(self.table), compact_at=self.compact_at,
            last_tau=self.last_tau, reclaimed=self.reclaimed,
            work=self.work_counts()).trimmed()

    def from_state(self, state) -> None:
        """Load a backend-neutral ``EvaluatorState`` (replaces the arena, tables and counters)."""
        state.validate()
        arena = self.arena = NodeArena()
        for f in NODE_FIELDS:
            setattr(arena, f, getattr(state, f).tolist())
        self.partitions = state.partitions()
        self.pre = state.pre_map()
        self.table = state.table_rows()
        self.compact_at, self.last_tau, self.reclaimed = (state.compact_at, state.last_tau,
                                                          state.reclaimed)
        self.reset_work_counts(state.work)

    def __getstate__(self) -> dict:
        return pickled(self)

    def __setstate__(self, d: dict) -> None:
        self.reported = 0
        self.on_reclaim = None  # (the engine listens again)
        self.between, self.labels = None, {}  # (the engine checks predicates again)
        unpickled(self, d)
