# distutils: language = c++
# cython: language_level=3
"""Cython backend of cercore's evaluator: CORE's Algorithm 1 and Algorithm 2 in C.

``CythonEvaluator`` has exactly the batch interface of the pure-Python reference
``cercore.runtime.evaluator.PythonEvaluator`` and produces the same complex events in the same
order: it performs the same arena operations in the same order, so the tECS DAG (hence the
depth-first enumeration order) is identical.

How a batch runs (``run``): a C loop (``advance``, no GIL) steps through the batch's events.
For each event it runs Algorithm 1 on the event's partition table, then enumerates the new
complex events (Algorithm 2, an explicit DFS stack) into flat output buffers. It returns to
Python when

* the output buffer is full (``FULL``): the generator yields the buffered complex events and
  resumes the suspended enumeration (huge outputs are never materialised at once);
* a determinised transition is missing (``MISS``): checked for every state an event needs
  *before* the step mutates anything; Python asks ``det.successors`` once, stores the answer in
  the int32 table (grown on demand for new det states and new letters) and resumes;
* the batch is done (``DONE``).

Reclamation (same rule and trigger as the reference) runs only between events, after the
event's outputs are buffered, never while an enumeration is suspended.
"""

cimport cython
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cython.operator cimport dereference as deref, preincrement as inc
from libc.stdint cimport INT64_MAX, int8_t, int32_t, int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector

from cercore_fast.constants cimport BOTTOM, NIL, NO_STATE, OUTPUT, UNION, window_start
from cercore_fast.output cimport make_view
from cercore_fast.tecs cimport (
    Arena, Node, UList, arena_free, arena_from_array, arena_reserve, arena_to_array, compact,
    extend, new_bottom, ul_insert, ul_merge,
)

import numpy as np

from cercore.interface.state import WORK_KEYS, EvaluatorState, pickled, unpickled

from cercore.interface import constants

# the shared numbers, read once from their one definition (cercore.interface.constants); C
# globals, so the loops read them as C
MIN_COMPACTION = constants.MIN_COMPACTION
UNBOUNDED_PAST = constants.UNBOUNDED_PAST
cdef int64_t C_UNBOUNDED_PAST = constants.UNBOUNDED_PAST
cdef int CONSUME_NONE = constants.CONSUME_NONE
cdef int CONSUME_ANY = constants.CONSUME_ANY
cdef int32_t MISSING = constants.MISSING  # transition table: not computed yet
OUTPUT_CAP = 1 << 16  # positions buffered before returning to Python

cdef size_t MAX_SPARE_LISTS = 4096  # emptied union lists kept for reuse (bounds the pool)

cdef enum:
    DONE = 0
    FULL = 1
    MISS = 2
    NOMEM = 3
    FAILED = 4  # a predicate between events raised (BetweenKernel.pop_error)


def _new_evaluator():
    """Unpickling helper: an empty evaluator, filled by ``__setstate__``."""
    return CythonEvaluator.__new__(CythonEvaluator)


@cython.final
@cython.auto_pickle(False)
cdef class CythonEvaluator:
    """Algorithm 1 over letters, window-pruned enumeration and arena reclamation, in C."""

    backend = "cython"

    def __cinit__(self):
        self.trans = NULL
        self.labels = NULL
        self.between = None
        self.trans_rows = 0
        self.trans_cols = 0
        self.arena.nodes = NULL
        self.arena.size = 0
        self.arena.capacity = 0
        self.compact_at = MIN_COMPACTION
        self.min_compaction = MIN_COMPACTION
        self.reclaimed = False
        self.last_tau = C_UNBOUNDED_PAST
        self.out_cap = OUTPUT_CAP
        self.out_off.push_back(0)
        self.b_n = 0
        self.enumerating = False
        self.reset_work_counts()

    def __init__(self, det, encoder):
        self.det = det
        self.encoder = encoder
        self.compact_at = MIN_COMPACTION
        self.refresh_states()

    def __dealloc__(self):
        arena_free(&self.arena)
        free(self.trans)
        self.trans = NULL
        free(self.labels)
        self.labels = NULL

    def check_between(self, plan, check):
        """Check predicates between events while enumerating: ``plan`` (a ``BetweenPlan``)
        labels the OUTPUT nodes, ``check`` (an ``IncrementalCheck``) gives the term values
        and the whole check of ambiguous paths (cercore_fast/between.pyx does the rest)."""
        self.between = BetweenKernel(plan, check.values, check)
        self.grow_table(1, 1)  # (labels exist exactly when `between` is set)
        self.label_table()

    cdef int label_table(self) except -1:
        """(Re)build the labels of the table's computed marking moves."""
        cdef int64_t n = self.trans_rows * self.trans_cols, idx, sid, letter
        free(self.labels)
        self.labels = NULL
        if self.between is None or n == 0:
            return 0
        self.labels = <int32_t*>malloc(<size_t>n * sizeof(int32_t))
        if self.labels == NULL:
            raise MemoryError("cercore_fast: label table")
        for idx in range(n):
            self.labels[idx] = NIL
            if self.trans[idx * 3] != MISSING and self.trans[idx * 3] != NO_STATE:
                sid = idx // self.trans_cols
                letter = idx % self.trans_cols
                self.labels[idx] = self.label_of(sid, letter)
        return 0

    cdef int32_t label_of(self, int64_t sid, int64_t letter) except? -9:
        """The encoded label (``-2 - label``) of ``sid``'s marking move on ``letter``."""
        det = self.det
        return -2 - self.between.plan.label(det.cea, det.subsets[sid],
                                            self.encoder.atom_masks[letter])

    # ---- per batch ---------------------------------------------------------------------------
    def run(self, batch, view=None):
        """Evaluate the batch's events at offsets ``batch.active`` (in order; an
        ``EvaluatorInput``) and yield (start, end, positions) of every complex event, in the
        reference backend's order — or, given a ``view`` (the engine's store snapshot),
        ComplexEvent views built in C. ``limit`` and ``consume`` as in the reference
        (cercore.runtime.evaluator)."""
        cdef const int64_t[::1] a = np.ascontiguousarray(batch.active, dtype=np.int64)
        cdef const int64_t[::1] p = np.ascontiguousarray(batch.pids, dtype=np.int64)
        cdef const int32_t[::1] l = np.ascontiguousarray(batch.letters, dtype=np.int32)
        cdef const int64_t[::1] t = np.ascontiguousarray(batch.times, dtype=np.int64)
        cdef int code
        cdef Py_ssize_t i, n_out
        if a.shape[0] == 0:
            return
        self.begin(a, p, l, t, batch)
        try:
            while True:
                code = self.run_to_stop()
                # yield the buffered outputs one by one (no list: fewer objects for the GC)
                n_out = self.out_start.size()
                for i in range(n_out):
                    yield self.output(i, view)
                if n_out:
                    self.clear_output()
                if code == DONE:
                    break
        finally:
            self.finish()

    def run_one(self, int64_t pid, int32_t letter, int64_t pos, int64_t time, int64_t epsilon,
                bint windowed, int64_t limit, int consume, view=None):
        """One event (the record path): what ``run`` does for it, without numpy arrays or a
        generator. Its complex events as a list; should they overflow the output buffer, a
        generator that yields them all (the engine exhausts it before the next event)."""
        cdef list out
        self.one_active = 0
        self.one_pid = pid
        self.one_letter = letter
        self.one_time = time
        self.set_input(&self.one_active, &self.one_pid, &self.one_letter, &self.one_time, 1,
                       pos, epsilon, windowed, limit, consume)
        try:
            if self.run_to_stop() == FULL:
                return self._rest_of_one(self._buffered(view), view)
            out = self._buffered(view) if self.out_start.size() else []
            self.finish()
            return out
        except BaseException:
            self.finish()
            raise

    def _rest_of_one(self, list first, view):
        """``run_one``'s outputs beyond one buffer, as ``run`` yields them."""
        cdef int code
        try:
            yield from first
            while True:
                code = self.run_to_stop()
                yield from self._buffered(view)
                if code == DONE:
                    break
        finally:
            self.finish()

    cdef list _buffered(self, view):
        """The buffered complex events (tuples, or views over ``view``); the buffer empties."""
        cdef Py_ssize_t i, n_out = self.out_start.size()
        cdef list out = [self.output(i, view) for i in range(n_out)]
        self.clear_output()
        return out

    cdef object output(self, Py_ssize_t i, view):
        """Buffered complex event ``i``: (start, end, positions), or a view over ``view``
        (counted as reported)."""
        cdef Py_ssize_t j, lo = self.out_off[i], hi = self.out_off[i + 1]
        cdef object tup = PyTuple_New(hi - lo), v
        for j in range(lo, hi):
            v = self.out_pos[j]
            Py_INCREF(v)
            PyTuple_SET_ITEM(tup, j - lo, v)
        self.reported += 1
        if view is None:
            return (self.out_start[i], self.out_end[i], tup)
        return make_view(self.out_start[i], self.out_end[i], tup, view)

    def run_arrays(self, batch):
        """``run`` in bulk: (start, end, offsets, positions) int64 arrays, complex event i having
        positions ``positions[offsets[i]:offsets[i + 1]]``; no Python object per complex
        event. The whole batch runs without the GIL (taken back only to fill a missing
        transition): the output buffers grow as needed, and become numpy arrays once, at the
        end (so the shards of a ``ShardedEvaluator`` run in parallel threads)."""
        cdef const int64_t[::1] a = np.ascontiguousarray(batch.active, dtype=np.int64)
        cdef const int64_t[::1] p = np.ascontiguousarray(batch.pids, dtype=np.int64)
        cdef const int32_t[::1] l = np.ascontiguousarray(batch.letters, dtype=np.int32)
        cdef const int64_t[::1] t = np.ascontiguousarray(batch.times, dtype=np.int64)
        if a.shape[0] == 0:
            return _empty_arrays()
        self.begin(a, p, l, t, batch)
        self.out_cap = INT64_MAX  # (no FULL stop: the buffers take the batch's outputs)
        try:
            self.run_to_stop()
            return self.output_arrays()
        finally:
            self.out_cap = OUTPUT_CAP
            self.finish()

    cdef tuple output_arrays(self):
        """The buffered complex events as (start, end, offsets, positions) arrays (one copy,
        without the GIL); the buffers keep their memory for the next batch."""
        cdef Py_ssize_t n = self.out_start.size(), m = self.out_pos.size()
        start = np.empty(n, dtype=np.int64)
        end = np.empty(n, dtype=np.int64)
        offsets = np.empty(n + 1, dtype=np.int64)
        positions = np.empty(m, dtype=np.int64)
        cdef int64_t[::1] vs = start, ve = end, vo = offsets, vp = positions
        with nogil:
            if n:
                memcpy(&vs[0], self.out_start.data(), n * sizeof(int64_t))
                memcpy(&ve[0], self.out_end.data(), n * sizeof(int64_t))
            memcpy(&vo[0], self.out_off.data(), (n + 1) * sizeof(int64_t))
            if m:
                memcpy(&vp[0], self.out_pos.data(), m * sizeof(int64_t))
        return start, end, offsets, positions

    cdef void begin(self, const int64_t[::1] a, const int64_t[::1] p, const int32_t[::1] l,
                    const int64_t[::1] t, object batch) except *:
        self.refresh_states()
        self.set_input(&a[0], &p[0], &l[0], &t[0], a.shape[0], batch.first_position,
                       batch.epsilon, batch.windowed, batch.limit, batch.consume)

    cdef void set_input(self, const int64_t* active, const int64_t* pids, const int32_t* letters,
                        const int64_t* times, Py_ssize_t n, int64_t first, int64_t epsilon,
                        bint windowed, int64_t limit, int consume) except *:
        """The events to evaluate next (a batch's, or ``run_one``'s one) and how."""
        self.b_active = active
        self.b_pids = pids
        self.b_letters = letters
        self.b_times = times
        self.b_n = n
        self.b_i = 0
        self.b_first = first
        self.b_epsilon = epsilon
        self.b_windowed = windowed
        self.b_limit = limit
        self.b_consume = consume
        self.enumerating = False
        self.min_compaction = MIN_COMPACTION
        if self.between is not None:
            self.between.refresh()

    cdef int run_to_stop(self) except -1:
        """``advance`` until it stops for something other than a table miss: DONE, or FULL
        (the output buffer is full)."""
        cdef int code = MISS
        while code == MISS:
            code = self.advance_or_raise()
        return code

    cdef int advance_or_raise(self) except -1:
        """One ``advance``; a table miss is resolved here (MISS: call again)."""
        cdef int code
        with nogil:
            code = self.advance()
        if code == MISS:
            self.resolve_miss()
        elif code == NOMEM:
            raise MemoryError("cercore_fast: out of memory in the tECS arena")
        elif code == FAILED:
            raise self.between.pop_error()
        return code

    cdef int finish(self) except -1:
        # the batch's arrays die with the caller's frame: nothing may read them afterwards
        self.b_n = 0
        self.b_i = 0
        self.enumerating = False
        self.st_node.clear()
        self.st_depth.clear()
        self.path.clear()
        self.clear_output()
        if self.reclaimed and self.on_reclaim is not None:  # (rare: checked inline)
            self.report_reclaimed()
        return 0

    cdef void clear_output(self) noexcept:
        self.out_start.clear()
        self.out_end.clear()
        self.out_pos.clear()
        self.out_off.clear()
        self.out_off.push_back(0)

    cdef int advance(self) noexcept nogil:
        """Run the batch from where it stopped; DONE, FULL (buffer full), MISS or NOMEM."""
        cdef int64_t k, t, tau, pos, root
        cdef int rc
        while True:
            if self.enumerating:
                rc = self.enum_run()
                if rc == 1:
                    return FULL
                if rc == 2:
                    return FAILED
                self.root_idx += 1
                if self.root_idx < <int64_t>self.roots.size() and self.left != 0:
                    root = self.roots[self.root_idx]
                    if self.arena.nodes[root].maxs >= self.cur_tau:
                        self.path.clear()
                        self.st_node.push_back(root)
                        self.st_depth.push_back(0)
                    continue
                self.enumerating = False
                if self.b_consume != CONSUME_NONE and self.roots.size():
                    self.consume_after()
                # the event is fully enumerated: reclamation may run now
                if (self.b_windowed or self.b_consume != CONSUME_NONE) \
                        and self.arena.size >= self.compact_at:
                    if self.reclaim(self.cur_tau) < 0:
                        return NOMEM
                self.b_i += 1
            if self.b_i >= self.b_n:
                return DONE
            k = self.b_active[self.b_i]
            t = self.b_times[k]
            tau = window_start(t, self.b_epsilon) if self.b_windowed else C_UNBOUNDED_PAST
            pos = self.b_first + k
            rc = self.step(self.b_pids[k], self.b_letters[k], pos, t, tau)
            if rc == 1:
                return MISS
            if rc == 2:
                return NOMEM
            self.cur_pos = pos
            self.cur_tau = tau
            self.cur_pid = self.b_pids[k]
            self.left = self.b_limit
            self.matched = False
            # CONSUME BY under LIMIT 0 with predicates between events: consumption needs one
            # complex event that satisfies them, so look for it without reporting it
            self.probing = self.labels != NULL and self.b_consume != CONSUME_NONE \
                and self.left == 0
            if self.probing:
                self.left = 1
            self.enumerating = True
            self.root_idx = -1

    # ---- lazy determinisation ----------------------------------------------------------------
    cdef int lookup_ok(self, int32_t sid, int32_t letter) noexcept nogil:
        if sid >= self.trans_rows or letter >= self.trans_cols:
            return 0
        return self.trans[(sid * self.trans_cols + letter) * 3] != MISSING

    cdef int resolve_miss(self) except -1:
        cdef int32_t sid = self.miss_sid, letter = self.miss_letter
        cdef int64_t idx
        q_mark, q_skip, q_pre = self.det.successors(sid, self.encoder.atom_masks[letter])
        self.w_misses += 1
        self.refresh_states()
        self.grow_table(sid + 1, letter + 1)
        idx = (sid * self.trans_cols + letter) * 3
        self.trans[idx] = q_mark
        self.trans[idx + 1] = q_skip
        self.trans[idx + 2] = q_pre
        if self.between is not None and q_mark != NO_STATE:
            self.labels[sid * self.trans_cols + letter] = self.label_of(sid, letter)
        return 0

    cdef int grow_table(self, int64_t rows, int64_t cols) except -1:
        cdef int64_t nr = self.trans_rows, nc = self.trans_cols, i, j, n
        cdef int32_t* t
        cdef int32_t* lab
        if rows <= nr and cols <= nc:
            return 0
        if nr < 8:
            nr = 8
        while nr < rows:
            nr *= 2
        if nc < 8:
            nc = 8
        while nc < cols:
            nc *= 2
        n = nr * nc * 3
        t = <int32_t*>malloc(<size_t>n * sizeof(int32_t))
        if t == NULL:
            raise MemoryError("cercore_fast: transition table")
        for i in range(n):
            t[i] = MISSING
        for i in range(self.trans_rows):
            for j in range(self.trans_cols * 3):
                t[i * nc * 3 + j] = self.trans[i * self.trans_cols * 3 + j]
        if self.between is not None:
            lab = <int32_t*>malloc(<size_t>(nr * nc) * sizeof(int32_t))
            if lab == NULL:
                free(t)
                raise MemoryError("cercore_fast: label table")
            for i in range(nr * nc):
                lab[i] = NIL
            for i in range(self.trans_rows):
                for j in range(self.trans_cols):
                    lab[i * nc + j] = self.labels[i * self.trans_cols + j]
            free(self.labels)
            self.labels = lab
        free(self.trans)
        self.trans = t
        self.trans_rows = nr
        self.trans_cols = nc
        return 0

    cdef int refresh_states(self) except -1:
        """Pick up det states created since the last call (final flags, scratch slots)."""
        final = self.det.final
        cdef Py_ssize_t n = len(final)
        cdef uint8_t flag  # (a named local: Cython binds a conditional expression passed to
        while <Py_ssize_t>self.final.size() < n:  # push_back(const T&) to a dangling temporary)
            flag = 1 if final[self.final.size()] else 0
            self.final.push_back(flag)
        if <Py_ssize_t>self.slot.size() < n:
            self.slot.resize(n, -1)
        self.initial = self.det.initial
        return 0

    # ---- work counters ------------------------------------------------------------------------
    def work_counts(self):
        """Work done so far, in operations: the keys and meanings of the reference
        ``cercore.runtime.evaluator.PythonEvaluator.work_counts`` (equal counts for the same
        query and stream)."""
        # in WORK_KEYS order; one bottom node per step, and the union nodes are the rest
        return dict(zip(WORK_KEYS, (
            self.w_events, self.w_transitions, self.w_misses, self.w_events, self.w_outputs,
            self.w_created - self.w_events - self.w_outputs, self.w_inserts, self.w_merges,
            self.w_step_max, self.w_enumerated, self.w_positions, self.w_visited,
            self.w_checks, self.w_pruned)))

    def reset_work_counts(self, counts=None):
        """Set every work counter to 0, or to ``counts`` (keys of ``work_counts``)."""
        c = counts or {}
        # in WORK_KEYS order, as work_counts gives them
        (self.w_events, self.w_transitions, self.w_misses, bottoms, self.w_outputs, unions,
         self.w_inserts, self.w_merges, self.w_step_max, self.w_enumerated, self.w_positions,
         self.w_visited, self.w_checks, self.w_pruned) = [c.get(k, 0) for k in WORK_KEYS]
        self.w_created = bottoms + self.w_outputs + unions

    # ---- Algorithm 1 --------------------------------------------------------------------------
    cdef int step(self, int64_t pid, int32_t letter, int64_t pos, int64_t time,
                  int64_t tau) noexcept nogil:
        """Read one event of partition ``pid``; its final nodes go to ``roots``. 0 on success,
        1 on a table miss (nothing changed; ``miss_sid``/``miss_letter`` say which), 2 when out
        of memory."""
        cdef Table* old = NULL
        cdef unordered_map[int64_t, Table].iterator it = self.partitions.find(pid)
        cdef size_t i, n_old = 0, n_live = 0
        cdef int64_t need = 8, bottom, size0, ops0, work
        cdef int32_t q, pre = self.initial, next_pre
        cdef UList* ul
        cdef unordered_map[int64_t, int32_t].iterator pit = self.pre.find(pid)
        if pit != self.pre.end():
            pre = deref(pit).second
        if it != self.partitions.end():
            old = &deref(it).second
            n_old = old.states.size()
        # every transition this step needs must be in the table before anything changes; the
        # misses are resolved in the reference's order (pre state first, then T's order)
        if not self.lookup_ok(pre, letter):
            self.miss_sid = pre
            self.miss_letter = letter
            return 1
        for i in range(n_old):
            ul = &old.lists[i]
            if self.arena.nodes[deref(ul)[0]].maxs < tau:
                continue
            if not self.lookup_ok(old.states[i], letter):
                self.miss_sid = old.states[i]
                self.miss_letter = letter
                return 1
            need += 3 * <int64_t>ul.size() + 7
            n_live += 1
        if arena_reserve(&self.arena, need) < 0:
            return 2
        # runs starting here begin in the partition's pre state (see the reference)
        next_pre = self.trans[(pre * self.trans_cols + letter) * 3 + 2]
        if next_pre != pre:
            if next_pre == self.initial:
                self.pre.erase(pid)
            else:
                self.pre[pid] = next_pre
        size0 = self.arena.size
        # work counters: process_item counts its operations straight into the totals
        ops0 = self.w_inserts + self.w_merges
        bottom = new_bottom(&self.arena, pos, time)
        self.bottom_list.clear()
        self.bottom_list.push_back(bottom)
        self.process_item(pre, self.bottom_list, letter, pos, tau)
        for i in range(n_old):
            self.process_item(old.states[i], old.lists[i], letter, pos, tau)
        self.roots.clear()
        for i in range(self.new_states.size()):
            q = self.new_states[i]
            self.slot[q] = -1
            if self.final[q]:
                self.roots.push_back(ul_merge(&self.arena, self.new_lists[i]))
                self.w_merges += 1
        if self.new_states.size():
            if old == NULL:
                old = &self.partitions[pid]
            old.states.swap(self.new_states)
            old.lists.swap(self.new_lists)
            self.new_states.clear()
            self.recycle_new_lists()  # the partition's previous lists
        elif old != NULL:
            self.partitions.erase(it)
        # one transition per item: the bottom's list plus every live entry (process_item skips
        # the same expired ones)
        self.w_events += 1
        self.w_transitions += 1 + n_live
        self.w_created += self.arena.size - size0
        work = (1 + n_live + self.arena.size - size0
                + self.w_inserts + self.w_merges - ops0)
        if work > self.w_step_max:
            self.w_step_max = work
        return 0

    cdef void new_list(self, size_t ns) noexcept nogil:
        """Append the empty list ``new_lists[ns]``, reusing a spare buffer if there is one."""
        self.new_lists.resize(ns + 1)
        if self.spare_lists.size():
            self.new_lists[ns].swap(self.spare_lists.back())
            self.spare_lists.pop_back()

    cdef void recycle_new_lists(self) noexcept nogil:
        """Empty ``new_lists``, keeping the lists' buffers as spares: one step's lists are
        the next step's, so a step allocates nothing once the pool is warm."""
        cdef size_t i
        for i in range(self.new_lists.size()):
            if self.new_lists[i].capacity() and self.spare_lists.size() < MAX_SPARE_LISTS:
                self.new_lists[i].clear()
                self.spare_lists.resize(self.spare_lists.size() + 1)
                self.spare_lists.back().swap(self.new_lists[i])
        self.new_lists.clear()

    cdef void process_item(self, int32_t p, UList& ul, int32_t letter, int64_t pos,
                           int64_t tau) noexcept nogil:
        cdef Arena* a = &self.arena
        cdef int64_t idx, merged = NIL, out
        cdef int32_t q_mark, q_skip, s
        cdef size_t ns
        if a.nodes[ul[0]].maxs < tau:  # every run in this list started outside the window
            return
        idx = (p * self.trans_cols + letter) * 3
        q_mark = self.trans[idx]
        q_skip = self.trans[idx + 1]
        if q_mark != NO_STATE:
            merged = ul_merge(a, ul)
            out = extend(a, merged, pos)
            if self.labels != NULL:
                a.nodes[out].right = self.labels[p * self.trans_cols + letter]
            self.w_merges += 1
            self.w_outputs += 1
            s = self.slot[q_mark]
            if s < 0:
                ns = self.new_states.size()
                self.slot[q_mark] = <int32_t>ns
                self.new_states.push_back(q_mark)
                self.new_list(ns)
                self.new_lists[ns].push_back(out)
            else:
                ul_insert(a, self.new_lists[s], out)
                self.w_inserts += 1
        if q_skip != NO_STATE:
            s = self.slot[q_skip]
            if s < 0:  # the old list moves to its (only) new state
                ns = self.new_states.size()
                self.slot[q_skip] = <int32_t>ns
                self.new_states.push_back(q_skip)
                self.new_lists.resize(ns + 1)
                self.new_lists[ns].swap(ul)
            else:
                if merged == NIL:
                    merged = ul_merge(a, ul)
                    self.w_merges += 1
                ul_insert(a, self.new_lists[s], merged)
                self.w_inserts += 1

    # ---- Algorithm 2 --------------------------------------------------------------------------
    cdef int enum_run(self) noexcept nogil:
        """Continue the DFS; 1 when the output buffer filled up (suspended), 0 when done, 2
        when a predicate between events raised. With such predicates (``between``), each
        event joining the path is checked and a failing branch is abandoned."""
        cdef Node* nodes = self.arena.nodes  # enumeration never allocates nodes
        cdef int64_t n, r, tau = self.cur_tau, end = self.cur_pos, depth
        cdef Py_ssize_t j
        cdef int8_t k
        cdef int rc
        cdef bint checking = self.labels != NULL  # (set exactly when `between` is)
        while self.st_node.size():
            if <int64_t>self.out_pos.size() >= self.out_cap \
                    or <int64_t>self.out_start.size() >= self.out_cap:
                return 1
            n = self.st_node.back()
            self.st_node.pop_back()
            depth = self.st_depth.back()
            self.path.resize(depth)
            self.st_depth.pop_back()
            if checking:
                self.between.cut(depth)
            while True:
                self.w_visited += 1
                k = nodes[n].kind
                if k == BOTTOM:
                    self.w_enumerated += 1
                    self.w_positions += <int64_t>self.path.size()
                    if checking:
                        rc = self.between.accepts(nodes[n].pos, end, self.path)
                        if rc < 0:
                            return 2
                        if rc == 0:
                            self.w_pruned += 1
                            break
                        self.matched = True
                        if self.probing:  # found one: nothing is reported (LIMIT 0)
                            self.st_node.clear()
                            self.st_depth.clear()
                            self.left = 0
                            return 0
                    self.out_start.push_back(nodes[n].pos)
                    self.out_end.push_back(end)
                    for j in range(<Py_ssize_t>self.path.size() - 1, -1, -1):
                        self.out_pos.push_back(self.path[j])
                    self.out_off.push_back(self.out_pos.size())
                    self.left -= 1
                    if self.left == 0:  # LIMIT reached: drop the rest of this event's DFS
                        self.st_node.clear()
                        self.st_depth.clear()
                        return 0
                    break
                if k == OUTPUT:
                    if checking:
                        rc = self.between.push(nodes[n].pos, -2 - <int32_t>nodes[n].right,
                                          <int64_t>self.path.size())
                        if rc < 0:
                            return 2
                        if rc != 1:
                            self.w_checks += 1
                        if rc == 0:
                            self.w_pruned += 1
                            break
                    self.path.push_back(nodes[n].pos)
                else:
                    r = nodes[n].right
                    if r != NIL and nodes[r].maxs >= tau:
                        self.st_node.push_back(r)
                        self.st_depth.push_back(self.path.size())
                n = nodes[n].left
        return 0

    cdef void consume_after(self) noexcept nogil:
        """CONSUME BY: the current event completed a complex event (within the window, whether
        or not LIMIT let it be reported): discard partial matches."""
        cdef size_t i
        cdef bint matched = False
        if self.labels != NULL and not self.matched:
            return  # no complex event satisfied the predicates between events
        for i in range(self.roots.size()):
            if self.arena.nodes[self.roots[i]].maxs >= self.cur_tau:
                matched = True
                break
        if not matched:
            return
        # the partition(s) start afresh: no partial match, no strategy history
        if self.b_consume == CONSUME_ANY:
            self.partitions.clear()
            self.pre.clear()
        else:
            self.partitions.erase(self.cur_pid)
            self.pre.erase(self.cur_pid)

    # ---- memory -------------------------------------------------------------------------------
    cdef int reclaim(self, int64_t tau) noexcept nogil:
        cdef vector[UList*] lists
        cdef unordered_map[int64_t, Table].iterator it = self.partitions.begin()
        cdef Table* tbl
        cdef UList* ul
        cdef Node* nodes = self.arena.nodes
        cdef size_t i, w
        while it != self.partitions.end():
            tbl = &deref(it).second
            w = 0
            for i in range(tbl.states.size()):
                ul = &tbl.lists[i]
                if nodes[deref(ul)[0]].maxs < tau:
                    continue
                while nodes[ul.back()].maxs < tau:
                    ul.pop_back()
                if w != i:
                    tbl.states[w] = tbl.states[i]
                    tbl.lists[w].swap(deref(ul))
                w += 1
            tbl.states.resize(w)
            tbl.lists.resize(w)
            if w == 0:
                it = self.partitions.erase(it)
                continue
            for i in range(w):
                lists.push_back(&tbl.lists[i])
            inc(it)
        if compact(&self.arena, lists, tau, self.min_compaction) < 0:
            return -1
        self.compact_at = max(self.min_compaction, 2 * self.arena.size)
        self.reclaimed = True
        self.last_tau = tau
        return 0

    def compact(self, int64_t tau):
        """Reclaim now the nodes of partial matches that start before ``tau`` (what a run
        does when the arena fills)."""
        if self.reclaim(tau) < 0:
            raise MemoryError("cercore: out of memory compacting the tECS arena")
        self.report_reclaimed()

    def report_reclaimed(self):
        """At the end of a run: tell ``on_reclaim`` the window start of the reclamation
        passes it made (then the engine forgets what the evaluator no longer holds)."""
        if self.reclaimed and self.on_reclaim is not None:
            self.reclaimed = False
            self.on_reclaim(self.last_tau)

    def live_partitions(self):
        cdef set out = set()
        for kv in self.partitions:
            out.add(kv.first)
        for kv2 in self.pre:
            out.add(kv2.first)
        return out

    def memory_nodes(self):
        return self.arena.size

    # ---- state (backend-neutral, see cercore.interface.state) -----------------------------------
    def to_state(self):
        """A backend-neutral ``EvaluatorState`` (numpy arrays; partitions sorted by id)."""
        cdef size_t e, j
        cdef Table* tbl
        pids = sorted(kv.first for kv in self.partitions)
        part_offsets = [0]
        entry_states = []
        entry_offsets = [0]
        list_nodes = []
        for pid in pids:
            tbl = &self.partitions[<int64_t>pid]
            for e in range(tbl.states.size()):
                entry_states.append(tbl.states[e])
                for j in range(tbl.lists[e].size()):
                    list_nodes.append(tbl.lists[e][j])
                entry_offsets.append(len(list_nodes))
            part_offsets.append(len(entry_states))
        table = np.full((self.trans_rows, self.trans_cols, 3), MISSING, dtype=np.int32)
        cdef int32_t[:, :, ::1] vt = table
        cdef int64_t r, c, k
        for r in range(self.trans_rows):
            for c in range(self.trans_cols):
                for k in range(3):
                    vt[r, c, k] = self.trans[(r * self.trans_cols + c) * 3 + k]
        pre_ids = sorted(kv.first for kv in self.pre)
        return EvaluatorState(
            **EvaluatorState.pack_nodes(arena_to_array(&self.arena)),
            part_ids=np.array(pids, dtype=np.int64),
            part_offsets=np.array(part_offsets, dtype=np.int64),
            entry_states=np.array(entry_states, dtype=np.int32),
            entry_offsets=np.array(entry_offsets, dtype=np.int64),
            list_nodes=np.array(list_nodes, dtype=np.int64),
            pre_ids=np.array(pre_ids, dtype=np.int64),
            pre_states=np.array([self.pre[<int64_t>i] for i in pre_ids], dtype=np.int32),
            table=table, compact_at=self.compact_at, last_tau=self.last_tau,
            reclaimed=bool(self.reclaimed), work=self.work_counts()).trimmed()

    def from_state(self, state):
        """Load a backend-neutral ``EvaluatorState`` (replaces the arena, tables and counters)."""
        state.validate()
        cdef Table* tbl
        arena_from_array(&self.arena, state.nodes())
        self.partitions.clear()
        for pid, entries in state.partitions().items():
            tbl = &self.partitions[<int64_t>pid]
            for q, ul in entries.items():
                tbl.states.push_back(q)
                tbl.lists.push_back(ul)
        free(self.trans)
        self.trans = NULL
        self.trans_rows = self.trans_cols = 0
        table = np.ascontiguousarray(state.table, dtype=np.int32)
        rows, cols = table.shape[0], table.shape[1]
        self.refresh_states()
        if rows and cols:
            self.grow_table(rows, cols)
            for r in range(rows):
                for c in range(cols):
                    for k in range(3):
                        self.trans[(r * self.trans_cols + c) * 3 + k] = table[r, c, k]
        self.label_table()
        self.pre.clear()
        for pid, q in state.pre_map().items():
            self.pre[<int64_t>pid] = <int32_t>q
        self.compact_at = state.compact_at
        self.last_tau = state.last_tau
        self.reclaimed = state.reclaimed
        self.reset_work_counts(state.work)

    def __getstate__(self):
        return pickled(self)

    def __setstate__(self, d):
        unpickled(self, d)

    def __reduce__(self):
        return (_new_evaluator, (), self.__getstate__())


def compiled_window_start(int64_t time, int64_t epsilon):
    """``window_start`` as the kernels compile it (cercore_fast/constants.pxd), for the test
    that compares it with ``cercore.interface.constants.window_start``."""
    return window_start(time, epsilon)


def _empty_arrays():
    empty = np.zeros(0, dtype=np.int64)
    return empty, empty, np.zeros(1, dtype=np.int64), empty


@cython.boundscheck(False)
@cython.wraparound(False)
def merge_by_end(list parts, list out=None, Py_ssize_t first=0, int64_t first_position=0):
    """The complex events of shards (``runtime/shards.py``) as one evaluator reports them: each
    part is (start, end, offsets, positions, *more) int64 arrays in end order (``more``: other
    per complex event arrays, as many in every part; ``offsets`` may be a slice of a part's,
    into its whole ``positions``), the result the same arrays, merged by end, stable (on equal
    ends the earlier part first). A k-way merge of runs in C, without the GIL: no sort.
    ``out``: write into these arrays (as returned), from complex event ``first`` and
    position ``first_position`` on (threads merging ranges of ends into one output), and
    return nothing."""
    cdef Py_ssize_t k = len(parts), width = len(parts[0]), s, f, i, j, best, n = 0, m = 0
    cdef Py_ssize_t out_i = first, lo, hi, count
    cdef int64_t e, bound, plo, out_p = first_position
    cdef vector[const int64_t*] cols  # part s, column f: cols[s * width + f]
    cdef vector[Py_ssize_t] sizes, at
    cdef const int64_t[::1] v
    cdef const int64_t* off
    cdef const int64_t* ends
    keep = []
    for part in parts:
        if len(part) != width:
            raise ValueError("merge_by_end: parts of different widths")
        for f in range(width):
            arr = np.ascontiguousarray(part[f], dtype=np.int64)
            keep.append(arr)
            v = arr
            cols.push_back(&v[0] if v.shape[0] else NULL)
        sizes.push_back(len(part[0]))
        at.push_back(0)
        n += len(part[0])
        m += int(part[2][len(part[2]) - 1]) - int(part[2][0])  # (offsets may be a slice)
    given = out is not None
    if given and (len(out) != width or any(len(out[f]) < first + n for f in range(width)
                                           if f != 3)
                  or len(out[2]) < first + n + 1 or len(out[3]) < first_position + m):
        raise ValueError("merge_by_end: the output arrays are too short")
    if not given:
        out = [np.empty(n, dtype=np.int64) for _ in range(width)]
        out[2] = np.empty(n + 1, dtype=np.int64)
        out[3] = np.empty(m, dtype=np.int64)
    cdef vector[int64_t*] dst
    cdef int64_t[::1] w
    for f in range(width):
        w = out[f]
        dst.push_back(&w[0] if w.shape[0] else NULL)
    with nogil:
        dst[2][out_i] = out_p
        while True:
            best = -1  # the part whose next complex event ends first (earlier part on ties)
            for s in range(k):
                if at[s] < sizes[s] and (best < 0 or cols[s * width + 1][at[s]]
                                         < cols[best * width + 1][at[best]]):
                    best = s
            if best < 0:
                break
            bound = INT64_MAX  # the run of `best` goes up to the next end of another part
            for s in range(k):
                if s != best and at[s] < sizes[s]:
                    e = cols[s * width + 1][at[s]]
                    if s < best:
                        e -= 1  # (an equal end of an earlier part goes first)
                    if e < bound:
                        bound = e
            lo = at[best]
            hi = lo + 1
            ends = cols[best * width + 1]
            while hi < sizes[best] and ends[hi] <= bound:
                hi += 1
            at[best] = hi
            count = hi - lo
            for f in range(width):
                if f == 2 or f == 3:
                    continue
                memcpy(dst[f] + out_i, cols[best * width + f] + lo, count * sizeof(int64_t))
            off = cols[best * width + 2]
            plo = off[lo]
            for i in range(count):
                dst[2][out_i + i + 1] = off[lo + i + 1] - plo + out_p
            if off[hi] > plo:
                memcpy(dst[3] + out_p, cols[best * width + 3] + plo,
                       (off[hi] - plo) * sizeof(int64_t))
            out_i += count
            out_p += off[hi] - plo
    return None if given else tuple(out)
