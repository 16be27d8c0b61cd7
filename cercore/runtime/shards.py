"""All cores for one keyed query: the partitions split among ``k`` evaluators that step a batch
in ``k`` threads, with identical output.

PARTITION BY keys are independent (CORE §5): a partition's runs, complex events, CONSUME BY
PARTITION and strategy history never look at another partition. So partition ``p`` belongs to
shard ``p % k``; each shard is a whole evaluator (its own tECS arena, union lists, determinised
-state cache, work counters) over the events of its partitions, and only reads what the
engine's intake wrote before the batch (letters, times, partition ids; the attribute values of
predicates between events). The compiled kernels step without the GIL, so the shards of a batch
run in parallel threads; the reference backend runs them too (one at a time, by the GIL), with
the same output.

In bulk (``run_arrays``) the compiled evaluator steps a shard's whole batch without the GIL,
into growing C buffers copied to numpy once; the engine's bulk stages that work per end
(selection, times) run in the shard's thread too, and the batches of a whole input are merged
once, at its end, in C (a k-way merge of runs, no sort), the batches shared among the threads
and written straight into the output (``ShardedArrays``).

In bulk the intake is off the serial path (``runtime/pipeline.py``): the next batches are
decoded (in a reading thread) and prepared (in the caller's) while the shards step one.

Measured (2026-11-28, the stock trace x40, 995,480 events from Arrow, an idle 2-core VM;
docs/performance.md): two workers 1.48-1.61x one for a keyed query with a predicate between
events, 1.05-1.48x for a keyed query with 6.7 M complex events (writing memory: the two
threads' page faults and writes slow each other), 1.49-1.60x for a keyed query without output
(0.85-0.92x before the pipeline). Not faster on every query shape, so ``workers`` defaults to
one.

Every event belongs to one partition, so every complex event that ends at an event comes from
that event's shard, in that shard's enumeration order. Merging the shards' complex events by end
position (stable) therefore gives exactly the order one evaluator gives. What crosses
partitions -- CONSUME BY ANY, a query without PARTITION BY -- runs on one evaluator
(``shards_for`` says why).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from cercore.errors import ConfigError
from cercore.interface.complex_event import ComplexEvent
from cercore.interface.evaluator import Evaluator, EvaluatorInput
from cercore.runtime.memory import kept_blocks

__all__ = ["MIN_EVENTS_PER_SHARD", "ShardedArrays", "ShardedEvaluator", "checked_workers",
           "shards_for"]

# a batch steps its shards in threads only with this many events per shard (fewer: one after
# the other in the caller's thread; the output is the same)
MIN_EVENTS_PER_SHARD = 2048


def checked_workers(workers: Any) -> None:
    """Refuse a ``workers`` that is not None or a whole number >= 1."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ConfigError(f"workers must be a whole number >= 1, not {workers!r}")


def shards_for(analysed, workers: int | None, events: Any = None) -> tuple[int, str]:
    """How many shards evaluate the query for ``workers`` (None: one -- see the module doc:
    the shards are not faster than one evaluator on every query shape, so nothing splits
    unless asked),
    and why (for ``explain``). ``events``: the input, for when the default depends on it."""
    checked_workers(workers)
    wanted = 1 if workers is None else workers
    if wanted == 1:
        return 1, "one (workers=N: a keyed query's partitions split among N threads)"
    if not analysed.partition_by:
        return 1, "one worker: without PARTITION BY every event is in one partition"
    if analysed.query.consume == "ANY":
        return 1, "one worker: CONSUME BY ANY discards the runs of every partition"
    return wanted, (f"{wanted} workers: partitions split among them (partition id mod {wanted});"
                    " in bulk the next batches are decoded and prepared while they step one")


class ShardedEvaluator:
    """``k`` evaluators, one per shard of the partitions, behind the ``Evaluator`` interface
    (see the module doc)."""

    def __init__(self, make: Callable[[Any], Evaluator], dets: list) -> None:
        """``k = len(dets)`` evaluators ``make(det)``, each over its own determiniser (its
        states numbered as it goes: an evaluator's table and state refer to its own)."""
        self.dets = dets
        self.shards = [make(det) for det in dets]
        self.backend = self.shards[0].backend
        self.reported = 0  # complex events ``run`` yielded
        self._pool: ThreadPoolExecutor | None = None
        self._reader: ThreadPoolExecutor | None = None
        self._merge = _merge_kernel(self.backend)

    @property
    def pool(self) -> ThreadPoolExecutor | None:
        """The shards' threads (None until a batch was large enough to use them)."""
        return self._pool

    @property
    def reader(self) -> ThreadPoolExecutor:
        """The thread that decodes the next batch of a bulk input while the caller prepares
        one and the shards step the one before (``runtime/pipeline.py``)."""
        if self._reader is None:
            self._reader = ThreadPoolExecutor(1, thread_name_prefix="cercore-read")
        return self._reader

    # ---- the interface ---------------------------------------------------------------------
    @property
    def on_reclaim(self):
        return self.shards[0].on_reclaim

    @on_reclaim.setter
    def on_reclaim(self, listener) -> None:
        for s in self.shards:
            s.on_reclaim = listener

    def check_between(self, plan: Any, check: Any) -> None:
        # each shard walks its own paths: its own copy of the incremental check
        for s in self.shards:
            s.check_between(plan, type(check)(check.plan, check.values, check.full))

    def run(self, batch: EvaluatorInput, view: Any = None) -> Iterator:
        start, end, offsets, positions = self.run_arrays(batch)
        bounds = offsets.tolist()
        for i, (s, e) in enumerate(zip(start.tolist(), end.tolist())):
            ps = tuple(positions[bounds[i]:bounds[i + 1]].tolist())
            self.reported += 1
            yield (s, e, ps) if view is None else ComplexEvent.view(s, e, ps, view)

    def run_one(self, pid: int, letter: int, pos: int, time: int, epsilon: int,
                windowed: bool, limit: int, consume: int, view: Any = None) -> list | Iterator:
        return self.shards[pid % len(self.shards)].run_one(
            pid, letter, pos, time, epsilon, windowed, limit, consume, view)

    def run_arrays(self, batch: EvaluatorInput, then: Callable[[tuple], tuple] | None = None,
                   merged: bool = True) -> Any:
        """The batch's complex events as (start, end, offsets, positions) arrays, each shard's
        in its own thread when the batch is large enough; ``then``: what to do with a shard's
        arrays in its thread too (the engine's bulk stages that work per end: selection,
        times), giving (start, end, offsets, positions, *more per complex event). Merged
        by end (in C on the compiled backend), or, not ``merged``, as ``ShardedArrays``
        (merged at the end of the input, in threads)."""
        found = self.submit(batch, then)()
        if not merged:
            return ShardedArrays(found, self)
        some = [f for f in found if len(f[0])]
        if len(some) <= 1:
            return some[0] if some else found[0]
        return self._merge(some)

    def submit(self, batch: EvaluatorInput, then: Callable[[tuple], tuple] | None = None
               ) -> Callable[[], list[tuple]]:
        """``run_arrays`` started: the shards step the batch in threads when it is large
        enough (else here, at once); the call returned waits for them and gives each shard's
        arrays. Until then the caller may prepare the next batch (``runtime/pipeline.py``)."""
        k = len(self.shards)

        def shard(i: int) -> tuple:
            with kept_blocks():
                active = batch.active
                part = batch._replace(active=active[batch.pids[active] % k == i])
                found = self.shards[i].run_arrays(part)
                return found if then is None else then(found)

        if len(batch.active) < MIN_EVENTS_PER_SHARD * k:
            found = [shard(i) for i in range(k)]
            return lambda: found
        if self._pool is None:
            self._pool = ThreadPoolExecutor(k, thread_name_prefix="cercore-shard")
        running = [self._pool.submit(shard, i) for i in range(k)]

        def done() -> list[tuple]:
            wait(running)  # (every shard done before an error is raised)
            return [f.result() for f in running]

        return done

    def compact(self, tau: int) -> None:
        for s in self.shards:
            s.compact(tau)

    def live_partitions(self) -> set[int]:
        return set().union(*(s.live_partitions() for s in self.shards))

    def memory_nodes(self) -> int:
        return sum(s.memory_nodes() for s in self.shards)

    def work_counts(self) -> dict[str, int]:
        counts = [s.work_counts() for s in self.shards]
        return {key: (max if key == "step_work_max" else sum)(c[key] for c in counts)
                for key in counts[0]}

    def reset_work_counts(self, counts: dict[str, int] | None = None) -> None:
        for i, s in enumerate(self.shards):  # (given counts: all on the first shard)
            s.reset_work_counts(counts if i == 0 else None)

    def to_state(self) -> Any:
        return [s.to_state() for s in self.shards]

    def from_state(self, state: Any) -> None:
        for s, st in zip(self.shards, state):
            s.from_state(st)

    @property
    def n_states(self) -> int:
        """Determinised states, over every shard's cache."""
        return sum(det.n_states for det in self.dets)

    def __getstate__(self) -> dict:
        return {"dets": self.dets, "shards": self.shards, "backend": self.backend}  # (no pool)

    def __setstate__(self, state: dict) -> None:
        self.dets, self.shards, self.backend = state["dets"], state["shards"], state["backend"]
        self.reported, self._pool, self._reader = 0, None, None
        self._merge = _merge_kernel(self.backend)


class ShardedArrays:
    """A batch's complex events, each shard's (start, end, offsets, positions, start_time,
    end_time) in end order, not merged yet: ``merged`` merges the batches of a whole input at
    once, straight into the output arrays, the batches shared among the shards' threads (a
    batch's complex events end after the previous batch's, so each batch has its own range of
    the output). No large temporary array: freeing one while threads run costs the process
    page faults and, under a VM, TLB shootdowns (measured: several times the cost of one
    thread's)."""

    __slots__ = ("found", "sharded")

    def __init__(self, found: list[tuple], sharded: ShardedEvaluator) -> None:
        self.found, self.sharded = found, sharded

    def __len__(self) -> int:
        return sum(len(f[0]) for f in self.found)

    @staticmethod
    def merged(batches: list[ShardedArrays]) -> tuple[np.ndarray, ...]:
        sharded = batches[0].sharded
        merge, pool, width = sharded._merge, sharded.pool, len(batches[0].found[0])
        n = [len(b) for b in batches]
        m = [sum(len(f[3]) for f in b.found) for b in batches]
        firsts = np.cumsum([0] + n).tolist()
        first_positions = np.cumsum([0] + m).tolist()
        out = [np.empty(firsts[-1], dtype=np.int64) for _ in range(width)]
        out[2], out[3] = np.empty(firsts[-1] + 1, dtype=np.int64), \
            np.empty(first_positions[-1], dtype=np.int64)
        out[2][0] = 0

        def merge_batches(r: int, step: int) -> None:
            for i in range(r, len(batches), step):
                some = [f for f in batches[i].found if len(f[0])]
                if not some:
                    continue
                lo, p0 = firsts[i], first_positions[i]
                if merge is not _merged:
                    merge(some, out, lo, p0)
                    continue
                done = some[0] if len(some) == 1 else _merged(some)
                for f in range(width):
                    if f == 2:
                        out[2][lo + 1:lo + n[i] + 1] = done[2][1:] + p0
                    elif f == 3:
                        out[3][p0:p0 + m[i]] = done[3]
                    else:
                        out[f][lo:lo + n[i]] = done[f]

        k = len(sharded.shards)
        if pool is None or firsts[-1] < MIN_EVENTS_PER_SHARD * k:
            merge_batches(0, 1)
        else:
            list(pool.map(merge_batches, range(k), [k] * k))
        return tuple(out)


def _merge_kernel(backend: str) -> Callable[[list], tuple]:
    """The merge of the shards' arrays: in C on the compiled backend, else numpy."""
    if backend == "cython":
        from cercore_fast.evaluator import merge_by_end

        return merge_by_end
    return _merged


def _merged(found: list[tuple]) -> tuple[np.ndarray, ...]:
    """The shards' complex events (each shard's (start, end, offsets, positions, *more) in end
    order) as one evaluator reports them: by end position, stable (all complex events of one
    end come from one shard)."""
    end = np.concatenate([f[1] for f in found])
    lengths = np.concatenate([np.diff(f[2]) for f in found])
    positions = np.concatenate([f[3] for f in found])
    firsts = np.concatenate([f[2][:-1] + base for f, base in
                             zip(found, np.cumsum([0] + [len(f[3]) for f in found[:-1]]))])
    order = np.argsort(end, kind="stable")
    lengths = lengths[order]
    offsets = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    take = np.repeat(firsts[order] - offsets[:-1], lengths) + np.arange(offsets[-1])
    more = [np.concatenate([f[i] for f in found])[order] for i in range(4, len(found[0]))]
    return (np.concatenate([f[0] for f in found])[order], end[order], offsets,
            positions[take], *more)
