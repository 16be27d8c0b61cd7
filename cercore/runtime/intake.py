"""The engine's intake: decoded events -> what the evaluator reads. Each event the query reads
gets its letter (``LetterEncoder``), its window time (event time, or its read count under an
EVENTS window; checked to never go backwards) and its partition id (``PartitionIndex``), and is
stored (``EventStore``) for the complex events that will read it: a batch at a time (the
evaluator's ``EvaluatorInput``; the record path, ``Engine._evaluate_one``, does the same for
one event inline, as it runs per event); memory settles here after each.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cercore.errors import EventError
from cercore.input import Batch, EventInput
from cercore.input.order import TimeOrder
from cercore.interface.constants import INT64_MIN, NO_PARTITION, window_start
from cercore.interface.evaluator import EvaluatorInput
from cercore.interface.letters import LettersKernel
from cercore.runtime.letters import LetterEncoder, inert_letters_skippable
from cercore.runtime.partitions import PartitionIndex
from cercore.runtime.store import EventStore

__all__ = ["Intake", "order_attribute"]


def order_attribute(analysed) -> str | None:
    """The attribute whose values never go backwards in the stream a query reads: its time
    window's, or without one the schema's time attribute (late events are never accepted
    silently); None: no event time."""
    window = analysed.window
    return (window.attribute if window.kind in ("time", "attr") else None) \
        or analysed.schema.time_attribute


class Intake:
    """Letters, window times, partitions and the store of one engine (see the module doc)."""

    # the partition ids of a batch prepared ahead and not evaluated yet (the bulk pipeline,
    # ``runtime/pipeline.py``): its partitions are held, their keys kept
    ahead: np.ndarray | None = None

    def __init__(self, window, encoder: LetterEncoder, partitions: PartitionIndex,
                 store: EventStore, time_order: TimeOrder | None, skip_inert: bool) -> None:
        self.window = window
        self.encoder = encoder
        self.partitions = partitions
        self.store = store
        self.time_order = time_order
        self.checks_time = True  # False when a MultiEngine checks the shared time order
        self.skip_inert = skip_inert  # events that satisfy no atom are not stepped
        self.tick = 0  # query-read events so far (EVENTS windows count these)
        self.latest_time = INT64_MIN  # window time of the last read event (store pruning)
        self.reclaimed_before: int | None = None  # reported by the evaluator, not acted on

    @classmethod
    def of(cls, analysed, encoder: LetterEncoder, events: EventInput) -> Intake:
        """The intake of an analysed query whose events ``events`` decodes."""
        schema, attr = analysed.schema, order_attribute(analysed)
        return cls(analysed.window, encoder, PartitionIndex(schema, analysed.partition_by),
                   EventStore(schema, schema.time_attribute, analysed.attribute_projection,
                              events.decoder.time_form),
                   events.time_order(attr) if attr is not None else None,
                   inert_letters_skippable(analysed))

    # ---- a batch ---------------------------------------------------------------------------
    def batch(self, batch: Batch, shared: dict | None, kernel: LettersKernel | None,
              limit: int, consume: int) -> tuple[EvaluatorInput, EventError | None]:
        """Letters, times and partitions of a batch, stored: the evaluator's input and the
        batch's error (raised after its good events).
        ``shared``: the per-batch cache of queries run together; ``kernel``: the backend's
        letters kernel."""
        args, error, latest = self.prepare(batch, shared, kernel, limit, consume)
        self.commit(batch, args, latest)
        return args, error

    def prepare(self, batch: Batch, shared: dict | None, kernel: LettersKernel | None,
                limit: int, consume: int) -> tuple[EvaluatorInput, EventError | None, int | None]:
        """``batch`` without storing it: what reads nothing the evaluation of the batch
        before may still use (the store, the window start), so that it can run while that
        batch is evaluated (``runtime/pipeline.py``); ``commit`` stores it. Also gives the
        time of its last read event (None: none read)."""
        encoder, order = self.encoder, self.time_order
        read = encoder.read_mask(batch, shared)
        n_ok, error = (batch.n, None) if order is None or not self.checks_time \
            else order.check(batch, read)  # unmarks (and skips) late events
        error = error or batch.error
        if n_ok < batch.n:
            batch.truncate(n_ok, error)
            read = read[:n_ok]
        letters = encoder.encode(batch, shared, read, kernel)
        if self.window.kind == "events":
            times = self.tick + np.cumsum(read, dtype=np.int64) - 1
        elif order is not None:
            times = order.times(batch, read)
        else:
            times = np.zeros(batch.n, dtype=np.int64)
        last_read = np.flatnonzero(read)[-1:]
        latest = int(times[last_read[0]]) if len(last_read) else None
        partitions = self.partitions
        pids = partitions.assign(batch.type_ids, batch.columns, read)
        active = encoder.active(read, letters, pids if partitions.partitioned else None,
                                self.skip_inert, kernel)
        self.tick += int(np.count_nonzero(read))
        return EvaluatorInput(active, pids, letters, times, batch.first_position,
                              self.window.epsilon or 0, self.window.kind is not None, limit,
                              consume), error, latest

    def commit(self, batch: Batch, args: EvaluatorInput, latest: int | None) -> None:
        """Store a prepared batch, just before it is evaluated."""
        if latest is not None:
            self.latest_time = latest
        self.store.add(batch, args.times, args.letters, args.pids)

    # ---- memory ------------------------------------------------------------------------------
    def reclaimed(self, tau: int) -> None:
        """The evaluator's report (``Evaluator.on_reclaim``): it reclaimed the partial matches
        that start before ``tau``. Acted on by ``settle``, once the event or batch is done
        (its complex events may still need their partitions)."""
        self.reclaimed_before = tau

    def window_start(self) -> int | None:
        """The oldest time a partial match may start at now (None: no window, or nothing
        read yet)."""
        if self.window.kind is None or self.latest_time == INT64_MIN:
            return None
        return window_start(self.latest_time, self.window.epsilon or 0)

    def settle(self, window_moved: bool, held: Callable[[], set[int]]) -> None:
        """After an event or a batch: forget what the evaluator reported it no longer holds --
        the keys of the partitions nothing ``held`` any more (no partial match, nothing a look
        back or a deadline needs; a key that comes back gets a new partition id) and the
        stored events before its window start -- and, when the window moved, the stored
        events it has left behind (memory under WITHIN stays flat however events arrive)."""
        tau = self.reclaimed_before
        if tau is not None:
            self.reclaimed_before = None
            live = held()
            if self.ahead is not None:
                live = live | set(np.unique(self.ahead[self.ahead != NO_PARTITION]).tolist())
            self.partitions.forget(live)
            self.store.prune(tau)
        start = self.window_start() if window_moved else None
        if start is not None:
            self.store.prune(start)

