"""The input layer's front door: any accepted input -> validated, stream-tagged batches in
time order, numbered by input position. Every engine (CEQL queries, trend queries, several
queries at once) reads its events through an ``EventInput``.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import numpy as np

from cercore.errors import ConfigError, EventError, did_you_mean
from cercore.input.batch import Batch
from cercore.input.decode import RAW, UNKNOWN_STREAM, EventDecoder, string_codes
from cercore.input.event import Event
from cercore.input.options import EngineOptions
from cercore.input.order import ReorderBuffer, TimeOrder, records_of
from cercore.input.skips import SkipLog
from cercore.input.tabular import is_tabular, to_arrow
from cercore.schema import Schema
from cercore.types import NOT_A_VALUE, coerce_time, is_instant, time_problem

# Events per batch. Each batch costs a fixed amount of Python (one numpy call per column and
# predicate, one evaluator call); at 16k events that is amortised to a few ns per event, while
# a batch's columns still fit in the L2 cache (bench: cercore-bench breakdown).
BATCH_SIZE = 16384
RECORD_BATCH_SIZE = 4096  # records are converted one by one anyway: smaller batches, less delay


def in_hand(events: Any) -> bool:
    """Whether ``events`` is all there already -- a list or tuple of records, a table -- and
    is evaluated in batches at bulk speed. Anything else (a generator, an iterator, a live
    feed) is read one event at a time, so each complex event comes out before the next event
    is asked for."""
    return (isinstance(events, Sequence) and not isinstance(events, (str, bytes))) \
        or is_tabular(events)


class EventInput:
    """Decodes events for one engine and keeps its input position.

    ``batches(events)`` yields ``Batch`` objects; the engine reports how many events of each
    it consumed with ``consumed``, which moves ``position`` (the next event's position).
    With ``reorder_slack``, events are buffered and released in time order (see
    ``cercore.input.order``); ``flush()`` releases the rest at the end of the stream.
    """

    def __init__(self, schema: Schema, options: EngineOptions = EngineOptions.DEFAULT,
                 time_attribute: str | None = None, batch_size: int = BATCH_SIZE) -> None:
        self.schema = schema
        self.decoder = EventDecoder(schema, options.on_error)
        self.type_column = options.type_column
        self.stream_column = options.stream_column
        self.batch_size = int(batch_size)
        self.position = 0
        self.reorder: ReorderBuffer | None = None
        if options.reorder_slack is not None:
            if time_attribute is None:
                raise ConfigError("reorder_slack needs event time: the schema names no time "
                                 "attribute and the query has no time window")
            self.reorder = ReorderBuffer(time_attribute, options.reorder_slack,
                                         schema.time_unit)

    @property
    def skips(self) -> SkipLog:
        return self.decoder.skips

    def time_order(self, attribute: str) -> TimeOrder:
        """A time-order check on ``attribute`` that skips or raises as this input does, over
        the events of the types that declare it."""
        carriers = np.zeros(len(self.schema.type_names) + 1, dtype=bool)
        for name in self.schema.type_names:
            et = self.schema.event_types[name]
            carriers[et.id] = et.has(attribute)
        return TimeOrder(attribute, self.decoder.reject, None if carriers[:-1].all() else carriers,
                         self.schema.time_unit)

    # told how many more events were consumed, batch by batch (a progress display: ``cercore
    # run --progress``; T-CER runs pass it on for their own events), when set
    progress: Callable[[int], None] | None = None

    def consumed(self, batch: Batch, n: int) -> None:
        """The engine evaluated the first ``n`` events of ``batch``."""
        if self.progress is not None:
            self.progress(batch.first_position + n - self.position)
        self.position = batch.first_position + n

    def consumed_one(self, position: int) -> None:
        """The engine evaluated (or skipped) the event at ``position``, read one at a time."""
        self.position = position + 1

    def take_one(self, typ: Any, attrs: Any, stream: int) -> tuple[int, Any, int]:
        """The next event read one at a time, decoded (``EventDecoder.decode_one``): its type
        id, attributes and position, which it consumes. An EventError in raise mode leaves it
        unconsumed; so does ``put_back`` (its time was late, in raise mode)."""
        position = self.position
        tid, row = self.decoder.decode_one(typ, attrs, stream, position)
        self.position = position + 1
        return tid, row, position

    def put_back(self, position: int) -> None:
        """The event at ``position`` (``take_one``) is not consumed after all."""
        self.position = position

    def start_at(self, position: int) -> None:
        """Number the events from ``position`` on (an engine joining a running stream)."""
        self.position = position

    # ---- one event at a time ----------------------------------------------------------------
    def stream_code(self, stream: str | None) -> int:
        """The id of the stream that tags a whole input (-1: None); an unknown name is an
        EventError, as for ``batches``."""
        if stream is None:
            return -1
        sid = self.decoder.stream_ids.get(stream)
        if sid is None:
            raise EventError(f"unknown stream {stream!r}"
                             + did_you_mean(str(stream), self.schema.streams), field="stream")
        return sid

    def live(self, events: Any, stream: str | None = None) -> Iterator[tuple[Any, Any, int]]:
        """The events of ``events`` one at a time, each asked for only when the one before it
        has been evaluated: ``(type, attributes, stream id)`` for ``EventDecoder.decode_one``
        (attributes ``RAW`` for a record that is not an event). With a reorder slack, the
        events it releases, in time order."""
        sid = self.stream_code(stream)
        if self.reorder is not None:
            code = self.decoder.stream_id
            for typ, attrs, tag in self.reorder.add(
                    records_of(events, self.type_column, self.decoder.declared, stream,
                               self.stream_column), self._late):
                yield typ, attrs, code(tag)  # (released events may be of earlier inputs)
            return
        for rec in events:
            if type(rec) is tuple and len(rec) == 2:
                yield rec[0], rec[1], sid
            elif isinstance(rec, Event):
                yield rec.type, rec.attributes, sid
            else:
                yield rec, RAW, sid

    # ---- batches ------------------------------------------------------------------------
    def batches(self, events: Any, stream: str | None = None,
                table_batch: int | None = None) -> Iterator[Batch]:
        """The events of ``events`` (records, Event objects, pandas, Arrow) as batches;
        ``stream`` tags every event with that stream; ``table_batch``: events per batch of
        a table (default ``batch_size``)."""
        if stream is not None and stream not in self.schema.streams:
            raise EventError(f"unknown stream {stream!r}"
                             + did_you_mean(str(stream), self.schema.streams), field="stream")
        if self.reorder is not None:
            records = records_of(events, self.type_column, self.decoder.declared, stream,
                                 self.stream_column)
            yield from self._record_batches(self.reorder.add(records, self._late))
        elif is_tabular(events):
            try:
                table = to_arrow(events)
            except EventError:
                if not type(events).__module__.startswith("pandas"):
                    raise
                # Arrow cannot convert the frame: read it row by row, so each bad value is
                # raised or skipped at its own row (tabular_columns)
                records = records_of(events, self.type_column, self.decoder.declared, stream,
                                     self.stream_column)
                yield from self._record_batches(records)
                return
            yield from self._arrow_batches(table, stream, table_batch or self.batch_size)
        else:
            it = iter(events)
            while chunk := list(itertools.islice(it, RECORD_BATCH_SIZE)):
                batch = self.decoder.from_records(chunk, self.position)
                if stream is not None:
                    self._tag_all(batch, stream)
                yield batch

    def flush(self) -> Iterator[Batch]:
        """End of stream: the events a reorder slack still holds back."""
        if self.reorder is not None:
            yield from self._record_batches(iter(self.reorder.flush()))

    def advance(self, t: int) -> Iterator[Batch]:
        """A watermark at time ``t``: the events a reorder slack holds up to ``t``."""
        if self.reorder is not None:
            yield from self._record_batches(iter(self.reorder.advance(t)))

    def _arrow_batches(self, table, stream: str | None, size: int) -> Iterator[Batch]:
        col = self.stream_column
        chunks = table.to_batches(max_chunksize=size) \
            if hasattr(table, "to_batches") else [table]
        # each batch numbered from the end of the one before (a batch cut short by an error
        # ends the input), not from ``position``: a batch may be decoded in another thread
        # while the one before is evaluated (runtime/pipeline.py)
        first = self.position
        for rb in chunks:
            tagged = col is not None and col in rb.column_names
            batch = self.decoder.from_arrow(rb, first, self.type_column,
                                            (col,) if tagged else ())
            first += rb.num_rows
            if stream is not None:
                self._tag_all(batch, stream)
            elif tagged:
                self._tag_column(batch, rb.column(col).slice(0, batch.n))
            yield batch

    def _tag_all(self, batch: Batch, stream: str) -> None:
        sid = self.decoder.stream_ids[stream]
        self.decoder.tag_stream_codes(batch, np.full(batch.n, sid, dtype=np.int16),
                                      lambda k: stream)

    def _tag_column(self, batch: Batch, column) -> None:
        strings = string_codes(column)
        if strings is None:  # not a column of names: every tag is unknown
            self.decoder.tag_streams(batch, column.to_pylist())
            return
        names, ok = strings
        ids = self.decoder.stream_ids
        lut = np.array([ids.get(s, UNKNOWN_STREAM) for s in names.dictionary], dtype=np.int16)
        codes = lut[names.codes]
        if ok is not None:
            codes[~ok] = -1  # a null tag: untagged
        self.decoder.tag_stream_codes(batch, codes, lambda k: names[k])

    def _record_batches(self, records: Iterator) -> Iterator[Batch]:
        """Batches of released ``(type, attrs, stream)`` records."""
        while chunk := list(itertools.islice(records, RECORD_BATCH_SIZE)):
            batch = self.decoder.from_records([t if a is RAW else (t, a) for t, a, _ in chunk],
                                              self.position)
            tags = [s for _, _, s in chunk[:batch.n]]
            if any(s is not None for s in tags):
                self.decoder.tag_streams(batch, tags)
            yield batch

    def _late(self, record, error: EventError) -> None:
        if not self.decoder.reject(error):
            raise error


class AsyncInput:
    """``aprocess``: ``process`` over an async iterable, for every engine kind (each defines
    ``process(events, stream)``)."""

    async def aprocess(self, events: Any, stream: str | None = None) -> AsyncIterator:
        """``async for out in engine.aprocess(feed)``: ``process`` over an async iterable
        (asyncio). Each record is evaluated as it arrives and what it completes is yielded
        before the next one is awaited; an item that is a list of records, an Arrow table or
        a pandas DataFrame (a micro-batch) is evaluated in bulk. The same evaluation as
        ``process``: one implementation behind both."""
        async for item in events:
            bulk = type(item) is list or is_tabular(item)
            for out in self.process(item if bulk else iter((item,)), stream):
                yield out


def checked_watermark(t: Any, order: TimeOrder | None) -> int:
    """``t`` as a watermark for a stream whose time ``order`` is checked: an int (or an
    instant -- a datetime, ISO-8601 text -- read as event times are, ``coerce_time``) not
    before the last event's time (ConfigError without event time, EventError when it goes
    back)."""
    if order is None:
        raise ConfigError("advance() needs event time: the schema names no time attribute "
                          "(without one, time is the input position)")
    if not isinstance(t, bool) and (is_instant(t) or isinstance(t, str)):
        units = coerce_time(t, order.unit)
        if units is NOT_A_VALUE:
            raise ConfigError(f"advance({t!r}): {time_problem(t, order.unit)}")
        t = units
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
        raise ConfigError(f"advance() takes an integer time or a timestamp, not {t!r}")
    t = int(t)
    if order.last is not None and t < order.last:
        raise EventError(f"advance({t}) is before the last event's time {order.last}",
                         field=order.attribute)
    return t
