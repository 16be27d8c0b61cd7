"""An engine as one query of a pass over a stream someone else decodes: what a ``MultiEngine``
builds on. The caller decodes the stream once (its own ``EventInput``, positions kept in step
with the engine's), may check time order once for several engines, and hands each engine the
decoded batch or event; a batch's error is the caller's to raise, once every engine has
evaluated the batch's good events."""

from __future__ import annotations

from collections.abc import Iterator

from cercore.errors import ConfigError
from cercore.input import Batch, ReadFilter
from cercore.input.order import TimeOrder
from cercore.runtime.output import ComplexEvent, MatchArrays

__all__ = ["DecodedInput"]


class DecodedInput:
    """The per-batch contract of ``Engine`` (see the module doc), over the engine's
    ``_run``, ``_run_arrays`` and ``_evaluate_one``."""

    @property
    def reads(self) -> ReadFilter:
        """Which events the query reads (event types, streams)."""
        return self.encoder.reads

    def share_time_order(self, order: TimeOrder) -> None:
        """From now on ``order`` -- the check of this engine's order attribute -- is run by
        the caller before each batch or event it hands over; the engine trusts it."""
        if order.attribute != self.order_attribute:
            raise ConfigError(f"time order on {order.attribute!r} handed to an engine ordered "
                              f"by {self.order_attribute!r}")
        self.intake.time_order, self.intake.checks_time = order, False

    def evaluate_batch(self, batch: Batch, shared: dict | None = None
                       ) -> Iterator[ComplexEvent]:
        """The complex events of a decoded batch, as ``process`` evaluates it (refused while
        another batch is half done; left unusable if abandoned half way); ``shared``: the
        callers' per-batch cache of predicate results. The batch's error is not raised."""
        return self._guarded(self._run(batch, shared, raises=False))

    def evaluate_batch_arrays(self, batch: Batch, shared: dict | None = None) -> MatchArrays:
        """``evaluate_batch`` in bulk (``process_arrays``)."""
        self._usable()
        return self._run_arrays(batch, shared, raises=False)

    def evaluate_event(self, type_id: int, row: dict | None, stream: int,
                       position: int) -> list | Iterator:
        """The complex events of one decoded event (type id, SKIPPED for a skipped one) at
        ``position``, as ``push`` evaluates it."""
        self._usable()
        self.input.consumed_one(position)  # (kept in step with the caller's input)
        return self._evaluate_one(type_id, row, stream, position)
