"""The life of an engine over a stream (every engine kind: CEQL queries, trend queries): one
batch at a time, never half of one, and where in the stream it stands."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from cercore.errors import CercoreError
from cercore.input import Batch, EventInput
from cercore.input.order import TimeOrder
from cercore.input.source import AsyncInput, checked_watermark, in_hand

__all__ = ["StreamEngine"]


class StreamEngine(AsyncInput):
    """The life of an engine that reads a stream through an ``EventInput`` (``self.input``)
    and checks time with a ``TimeOrder`` (``self.time_order``, or None): a batch is evaluated
    whole or the engine refuses further use (``_usable``, ``_guarded``), and what it tells
    about its position in the stream.

    The ways events arrive, the same for every engine kind: ``_feed`` (``process``),
    ``push`` and ``_evaluate`` (batches released by a flush or a watermark),
    over what each engine defines: ``_record(type, attributes, stream id)`` (one event: its
    outputs as a list, or an iterator that must be exhausted before the next event) and
    ``_run(batch)`` (a batch: an iterator of its outputs)."""

    def __getstate__(self) -> dict[str, Any]:
        """Refused while a batch is half done (see ``_usable``)."""
        self._usable()
        return self.__dict__.copy()

    # what each engine kind defines (see the class doc)
    _record: Callable[[Any, Any, int], list | Iterator]
    _run: Callable[[Batch], Iterator]

    def _feed(self, events: Any, stream: str | None) -> Iterator:
        """``process``: events in hand (a list, a table) in batches; any other iterable (a
        live feed) one at a time, every output of an event yielded before the next event is
        asked for."""
        self._usable()
        if not in_hand(events):
            for typ, attrs, sid in self.input.live(events, stream):
                found = self._record(typ, attrs, sid)
                if found:
                    yield from found if type(found) is list else self._guarded(found)
            return
        for batch in self.input.batches(events, stream):
            yield from self._guarded(self._run(batch))

    def push(self, event_type: str, attributes: dict[str, Any],
             stream: str | None = None) -> list:
        """Evaluate one event (of ``stream``, if given); return what it completes -- complex
        events, or a trend query's window rows (with a reorder slack: what the buffered events
        it releases complete)."""
        self._usable()
        if self.input.reorder is not None:
            return list(self._feed(iter([(event_type, attributes)]), stream))
        found = self._record(event_type, attributes, self.input.stream_code(stream))
        return found if type(found) is list else list(found)

    def _evaluate(self, batches: Iterator[Batch]) -> list:
        """The outputs of ``batches`` (what a flush or a watermark releases)."""
        return [out for batch in batches for out in self._guarded(self._run(batch))]

    input: EventInput
    time_order: TimeOrder | None
    # inside a batch (a process() generator suspended in it) / a batch was left half done
    _busy = False
    _abandoned = False

    def _usable(self) -> None:
        """Refuse to start anything while a batch is half done: new input, a watermark, the
        end of the stream, a pickle or a backend move would see (or freeze) an engine whose
        evaluator has stepped part of a batch that its input position does not cover."""
        if self._busy:
            raise CercoreError(
                "this engine is in the middle of a batch: a process() generator is suspended "
                "in it; exhaust or close it before feeding, advancing, flushing, pickling or "
                "moving the engine")
        if self._abandoned:
            raise CercoreError(
                "a process() generator of this engine was closed (or failed) in the middle of "
                "a batch, so the engine has evaluated part of it; start a new engine or restore "
                "a checkpoint taken between batches")

    def _guarded(self, batch_output: Iterator) -> Iterator:
        """Run one batch's generator: refused while another is half done; if it stops before
        the batch is finished (closed, or an error other than a bad event's), the engine is
        left refusing further use instead of continuing from an inconsistent state."""
        self._usable()
        self._busy = True
        finished = False
        try:
            yield from batch_output
            finished = True
        except CercoreError:
            finished = True  # raised once the batch's good events are evaluated: consistent
            raise
        finally:
            self._busy = False
            if not finished:
                self._abandoned = True

    @property
    def position(self) -> int:
        """The next input position (events received so far)."""
        return self.input.position

    @property
    def last_time(self) -> int | None:
        """The time of the last event read (or of the last watermark), None before any."""
        return None if self.time_order is None else self.time_order.last

    def _watermark(self, t: int) -> Iterator[Batch]:
        """``advance(t)``'s input side: check ``t``, release what a reorder slack holds up to
        it (as batches for the engine to evaluate), then no event before ``t`` is accepted."""
        t = checked_watermark(t, self.time_order)
        yield from self.input.advance(t)
        self.time_order.last = max(t, self.time_order.last if self.time_order.last is not None
                                   else t)
