"""What Spark ships to its Python workers: the query, the schema and the column mapping
(``EngineJob``), and the worker-side functions that turn sorted Arrow batches into complex
events with the cercore engine. Pure pyarrow/numpy here, no pyspark, so it runs (and is
tested) without a JVM.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cercore.errors import CercoreError, EventError
from cercore.input.options import EngineOptions
from cercore.runtime.output import MatchArrays
from cercore.schema import Schema
from cercore.spark.base.match_id import match_ids
from cercore.types import TIME_UNITS_PER_SECOND

# hidden columns the adapter adds to the user's DataFrame (never part of the output events)
PREFIX = "__cer_"
TYPE = PREFIX + "type"      # event type the engine reads (inferred schema: unknown -> OTHER)
TIME = PREFIX + "t"         # ordering time, integer in the schema's time unit
SEQ = PREFIX + "seq"        # tie-breaker among equal times
KEY = PREFIX + "key"        # PARTITION BY key as text (null: the event is in no partition)
POS = PREFIX + "pos"        # global position in (time, seq) order
GROUP = PREFIX + "grp"      # the engine run the row belongs to (key, slice or 0)
COORD = PREFIX + "coord"    # T-CER slice coordinate (time or position)
WM = PREFIX + "wm"          # streaming: event time as a timestamp, for the watermark
US = PREFIX + "us"          # streaming: that timestamp in microseconds
UNTIL = PREFIX + "until"    # cer_find's advance => column, as an integer time



@dataclass
class EngineJob:
    """Everything a worker needs to run the engine over a group of prepared rows."""

    query: str
    schema: Schema
    engine_sources: tuple[tuple[str, str], ...]  # (attribute, prepared column holding it)
    event_columns: tuple[str, ...]  # the user's columns, nested into each complex event
    options: EngineOptions = EngineOptions.DEFAULT  # the user's (type_column: their column)
    has_time: bool = True
    type_source: str = TYPE  # the column holding the event type (the user's, when usable)
    # the Spark type of the time column when it holds timestamps ("timestamp" or
    # "timestamp_ntz"; None: integers): complex events report their times in it
    time_type: str | None = None
    # the partition key text's description (``hidden.KeyText``): a worker whose rows come
    # without the KEY column writes it for the end rows of its complex events only
    key: Any = None
    # the compiled query: on the driver, the one ``frames.hidden_columns`` made; a worker
    # receives the text and compiles it again (``__getstate__``)
    _compiled: Any = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_compiled"] = None  # compiled again on the worker (milliseconds)
        return state

    def compiled(self):
        if self._compiled is None:
            from cercore.query import CompiledQuery

            self._compiled = CompiledQuery(self.query, self.schema)
        return self._compiled

    @property
    def on_error(self) -> str:
        return self.options.on_error

    @property
    def stream_column(self) -> str | None:
        return self.options.stream_column

    def engine(self):
        # the engine reads the type from the prepared table's TYPE column (engine_table)
        return self.compiled().engine(options=dataclasses.replace(self.options,
                                                                  type_column=TYPE))

    def engine_table(self, table: pa.Table) -> pa.Table:
        """The columns the engine reads, named as the schema declares them."""
        cols = {TYPE: table.column(self.type_source)}
        for attr, src in self.engine_sources:
            col = table.column(src)
            if pa.types.is_decimal(col.type):  # the decoder reads ints and doubles
                col = col.cast(pa.float64())
            # the engine's decoder reads the values by cercore.types' rule, as it reads any
            # table: a double that is no whole number in an int attribute is a wrong-type
            # event (raised or skipped), not a failed cast
            cols[attr] = col
        if self.stream_column is not None:
            cols[self.stream_column] = table.column(self.stream_column)
        return pa.table(cols)


def group_runs(values: pa.Array) -> list[tuple[int, int]]:
    """[(begin, end)) runs of equal consecutive values."""
    n = len(values)
    if n == 0:
        return []
    if n == 1:
        return [(0, 1)]
    change = pc.not_equal(values.slice(1), values.slice(0, n - 1))
    change = pc.fill_null(change, True)
    same_null = pc.and_(pc.is_null(values.slice(1)), pc.is_null(values.slice(0, n - 1)))
    change = pc.and_(change, pc.invert(same_null))
    cuts = (np.flatnonzero(change.to_numpy(zero_copy_only=False)) + 1).tolist()
    bounds = [0, *cuts, n]
    return list(zip(bounds[:-1], bounds[1:]))


@dataclass(frozen=True)
class ReadPartitions:
    """What the in-place plan (``plan`` module doc) keeps of each engine run. GROUP is the
    read partition p (in place) or the boundary before it (the boundary stage), and
    ``bounds[p]`` = (p's first global position, the previous read partition's last time or
    None for the first). A complex event depends on the events up to ``offset`` (K) before
    its end, so it *crosses* the boundary when end time − K ≤ that last time: the in-place
    run of p keeps what does not cross, the boundary run keeps what crosses and ends in p."""

    offset: int
    bounds: dict[int, tuple[int, int | None]]
    crossing: bool = False  # the boundary stage
    # in place, the layout from the Parquet footers (``ceql.footers``): each read partition's
    # (rows, first time, last time), which its task checks
    expected: dict[int, tuple[int, int, int]] | None = None

    def kept(self, group: int, end_position: np.ndarray, end_time: np.ndarray) -> np.ndarray:
        """Which complex events (their end rows' POS and TIME) the run of ``group`` reports."""
        first, previous_last = self.bounds[group]
        if previous_last is None:
            crosses = np.zeros(len(end_time), dtype=bool)
        else:
            crosses = end_time - self.offset <= previous_last
        return crosses & (end_position >= first) if self.crossing else ~crosses

    def verify(self, group: int, seen: tuple[int, int, int]) -> None:
        """The read partition ``group`` had ``seen`` (rows, first time, last time): what the
        Parquet footers said it holds, or the files changed since ``find`` read them (or were
        split otherwise), and the complex events found before would not be these rows'."""
        if self.expected is None or self.expected.get(group) == seen:
            return
        rows, first, last = self.expected.get(group, (0, None, None))
        raise CercoreError(f"read partition {group} of the Parquet input holds {seen[0]} rows "
                           f"at times {seen[1]}..{seen[2]}, but its files' footers said "
                           f"{rows} rows at times {first}..{last} when find planned the job: "
                           "the files changed since; call find again")


class InOrder:
    """Checks that a read partition's rows come in event order (``ordered=True`` is the
    user's word; a row out of order is an error, never a wrong answer): (TIME, ``sequence``)
    never decreases. ``footers``: the layout came from the Parquet footers, so a row out of
    order may also be a file rewritten since ``find`` read them, and the error says so."""

    def __init__(self, sequence: str | None, footers: bool = False) -> None:
        self.sequence = sequence
        self.footers = footers
        self.last: tuple[int, int] | None = None

    def check(self, rows: pa.RecordBatch) -> None:
        t = rows.column(TIME)
        s = rows.column(self.sequence) if self.sequence is not None else None
        if t.null_count or s is not None and s.null_count:
            raise EventError("ordered=True: a row has no time or sequence value; find orders "
                             "events by them", field=TIME)
        t = t.to_numpy().astype(np.int64, copy=False)
        s = None if s is None else s.to_numpy().astype(np.int64, copy=False)
        if self.last is not None:
            t = np.concatenate([[self.last[0]], t])
            s = None if s is None else np.concatenate([[self.last[1]], s])
        back = t[1:] < t[:-1]
        if s is not None:
            back |= (t[1:] == t[:-1]) & (s[1:] < s[:-1])
        if back.any():
            i = int(np.flatnonzero(back)[0])
            pos = rows.column(POS)[i - (self.last is not None) + 1].as_py()
            changed = (", or the files changed since find read their footers (then call "
                       "find again)" if self.footers else "")
            raise EventError(f"ordered=True, but the input is not in event order: the row at "
                             f"position {pos} has time {int(t[i + 1])}, before the row read "
                             f"just before it (time {int(t[i])}){changed}; drop ordered=True "
                             "and find sorts the events", field=TIME)
        self.last = (int(t[-1]), 0 if s is None else int(s[-1]))


def run_sorted_groups(batches: Iterator[pa.RecordBatch], job: EngineJob,
                      slices: tuple[int, int] | None, out_schema: pa.Schema,
                      starts: dict[int, int] | None = None,
                      until: int | None = None, read_partitions: ReadPartitions | None = None,
                      in_order: str | None | bool = False) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: the input is sorted by GROUP, then in event order, within the Spark
    partition; one fresh engine per run of equal GROUP values, fed batch by batch as Spark
    hands them over (a group is never held whole), its complex events emitted after each
    batch. The rows carry their global position POS, or ``starts`` gives each group's first
    position (its rows are a contiguous stretch of the global order) and the rows are numbered
    here. With ``slices`` = (WA, ε) (T-CER) GROUP is the slice index k and a complex event is
    kept only if ⌊(coord(end) − ε) / WA⌋ = k: the one slice holding the whole window before
    its end, [end − ε, end], so all it depends on (with a leading ``ABSENT(ψ) WITHIN T``, ε
    here is ε + T: the slice holds the T before the window too; ``SparkPlan.keep_offset``).

    ``until`` (a query with a deadline, ``φ ; ABSENT(ψ) WITHIN T``): the latest time of the
    events the query reads in the whole input. A group sees only its own events, while the
    local engine reports a pending complex event on a later event of any partition; so at the
    end of each group its engine fires the deadlines before ``until`` (``GroupRun.finish``):
    exactly those some read event of the input passes.

    ``read_partitions``: the in-place plan's rule for what each run keeps (``ReadPartitions``).
    ``in_order``: the rows are checked to come in event order (``InOrder``): False for no
    check, else the sequence column (None: times only)."""
    run: GroupRun | None = None
    order: InOrder | None = None
    tally = Tally() if read_partitions is not None and read_partitions.expected else None
    for g, rows in group_slices(batches):
        if run is None or g != run.group:
            if run is not None:
                if tally is not None:
                    read_partitions.verify(run.group, tally.take())
                out = run.finish(until)
                if out is not None:
                    yield out
            run = GroupRun(job, g, slices, out_schema, None if starts is None else starts[g],
                           read_partitions)
            order = None if in_order is False else InOrder(in_order, tally is not None)
        if order is not None:
            order.check(rows)
        if tally is not None:
            tally.add(rows.column(TIME))
        out = run.feed(rows)
        if out is not None:
            yield out
    if run is not None:
        if tally is not None:
            read_partitions.verify(run.group, tally.take())
        out = run.finish(until)
        if out is not None:
            yield out


class Tally:
    """Rows, first and last time of a group's rows, fed in order (``ReadPartitions.verify``)."""

    def __init__(self) -> None:
        self.rows, self.first, self.last = 0, None, None

    def add(self, times: pa.Array) -> None:
        if len(times):
            self.first = times[0].as_py() if self.first is None else self.first
            self.last = times[-1].as_py()
            self.rows += len(times)

    def take(self) -> tuple[int, int, int]:
        seen = (self.rows, self.first, self.last)
        self.__init__()
        return seen


def group_slices(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[Any, pa.RecordBatch]]:
    """(GROUP value, rows) for each run of equal GROUP values in each batch, in order: a
    group that spans batches comes as consecutive pieces with the same value."""
    for rb in batches:
        if rb.num_rows == 0:
            continue
        grp = rb.column(rb.schema.get_field_index(GROUP))
        for lo, hi in group_runs(grp):
            yield grp[lo].as_py(), rb.slice(lo, hi - lo)


class HeldRows:
    """The rows a later complex event may still report, addressed by engine position: record
    batches in stream order, dropped from the front once the engine's store (which it prunes
    by the window) no longer reaches them. Gathering takes only the rows asked for, so its
    cost follows the output, not what is held. Pickles as one Arrow IPC stream."""

    def __init__(self) -> None:
        self.parts: deque[tuple[int, pa.RecordBatch]] = deque()  # (engine position, rows)
        self.count = 0

    def add(self, first: int, rows: pa.Table | pa.RecordBatch) -> None:
        """Hold ``rows``, the engine's events from position ``first`` on."""
        for rb in rows.to_batches() if isinstance(rows, pa.Table) else [rows]:
            if rb.num_rows:
                self.parts.append((first, rb))
                first += rb.num_rows
                self.count += rb.num_rows

    def gather(self, positions: np.ndarray) -> pa.Table:
        """The rows at the sorted, distinct engine ``positions``, in that order."""
        firsts = np.fromiter((f for f, _ in self.parts), np.int64, len(self.parts))
        which = np.searchsorted(firsts, positions, side="right") - 1
        cuts = np.flatnonzero(np.diff(which)) + 1
        pieces = [self.parts[which[lo]][1].take(pa.array(positions[lo:hi] - firsts[which[lo]]))
                  for lo, hi in zip([0, *cuts], [*cuts, len(positions)])]
        return pa.Table.from_batches(pieces).combine_chunks()

    def prune(self, engine) -> None:
        """Drop the batches before the engine's oldest stored event (or the oldest start of a
        complex event waiting for its deadline)."""
        oldest = engine.store.starts[0] if engine.store.starts else engine.position
        oldest = min(oldest, oldest_pending_start(engine, oldest))
        while self.parts and self.parts[0][0] + self.parts[0][1].num_rows <= oldest:
            self.count -= self.parts.popleft()[1].num_rows

    def __getstate__(self) -> dict[str, Any]:
        table = pa.Table.from_batches([rb for _, rb in self.parts]) if self.parts else None
        return {"first": self.parts[0][0] if self.parts else 0, "rows": table_bytes(table)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()
        rows = table_from_bytes(state["rows"])
        if rows is not None:
            self.add(state["first"], rows.combine_chunks())


def evaluate(engine, table: pa.Table) -> MatchArrays:
    """The complex events ``engine`` reports over ``table`` (the engine's columns) as arrays
    (``process_arrays``; under an absence with a span, what ``process`` reports)."""
    return engine.process_arrays(table, workers=1)  # (Spark runs a task per core)


def latest(until: int | None, times: pa.Array | pa.ChunkedArray) -> int | None:
    """The greater of ``until`` and the largest of ``times`` (None: neither has a value): how
    far event time gets, over the batches seen so far (``cer_find``'s ``advance =>``)."""
    top = pc.max(times).as_py()
    return until if top is None or until is not None and until >= top else top


def fire_deadlines(engine, t: int | None) -> MatchArrays | None:
    """Event time has reached ``t``: the complex events pending in ``engine`` whose deadline is
    before ``t`` (as ``Engine.advance(t)`` fires them, without making events before ``t``
    late; None: no deadline, or ``t`` is None)."""
    if engine.post.deadlines is None or t is None:
        return None
    due = engine.fire_deadlines(int(t))
    return MatchArrays.of(due) if due else None


def oldest_pending_start(engine, default: int) -> int:
    """The first position of the oldest complex event waiting for its deadline in ``engine``
    (``default`` when none waits): its rows must stay held until it is reported or dropped."""
    queue = engine.post.deadlines
    start = None if queue is None else queue.oldest_start()
    return default if start is None else start


def first_pending_deadline(engine) -> int | None:
    """The earliest deadline pending in ``engine`` (None: none): the time the watermark must
    pass before anything more can fire."""
    return None if engine.post.deadlines is None else engine.post.deadlines.next_deadline()


def table_bytes(table: pa.Table | None) -> bytes | None:
    """``table`` as an Arrow IPC stream (None: no rows). IPC, not pickle: a slice is written
    without the rest of its buffers."""
    if table is None or table.num_rows == 0:
        return None
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table.combine_chunks())
    return sink.getvalue().to_pybytes()


def table_from_bytes(data: bytes | None) -> pa.Table | None:
    if data is None:
        return None
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def reported_rows(held: HeldRows, matches) -> tuple[pa.Table, np.ndarray, np.ndarray,
                                                    np.ndarray, np.ndarray]:
    """The rows the complex events of ``matches`` report, their engine positions, and the
    complex events' start, end and positions as indices into those rows."""
    need = np.unique(np.concatenate([matches.start, matches.end, matches.positions]))
    start, end, local = (np.searchsorted(need, x) for x in
                         (matches.start, matches.end, matches.positions))
    return held.gather(need), need, start, end, local


class GroupRun:
    """One engine over the rows of one group, fed in (time, seq) order one record batch at a
    time. It holds only the rows a later complex event may still report (``HeldRows``), so
    with a WITHIN window its memory is bounded by the window and one batch, whatever the
    group's length."""

    def __init__(self, job: EngineJob, group: Any, slices: tuple[int, int] | None,
                 out_schema: pa.Schema, first_position: int | None = None,
                 read_partitions: ReadPartitions | None = None) -> None:
        self.job = job
        self.read_partitions = read_partitions  # the in-place plan's rule, or None
        self.next_position = first_position  # None: the rows carry POS
        self.group = group
        self.slices = slices  # T-CER (WA, ε [+ a leading absence's T]), or None
        self.out_schema = out_schema
        self.engine = job.engine()
        self.held = HeldRows()

    @property
    def held_rows(self) -> int:
        return self.held.count

    def feed(self, rows: pa.RecordBatch) -> pa.RecordBatch | None:
        """Evaluate the next rows of the group; their complex events as one output batch
        (None: none)."""
        if self.next_position is not None:
            numbers = pa.array(np.arange(self.next_position, self.next_position + rows.num_rows,
                                         dtype=np.int64))
            rows = rows.append_column(POS, numbers)
            self.next_position += rows.num_rows
        self.held.add(self.engine.position, rows)
        matches = evaluate(self.engine, self.job.engine_table(pa.Table.from_batches([rows])))
        out = self._output(matches)
        self.held.prune(self.engine)
        return out

    def finish(self, until: int | None) -> pa.RecordBatch | None:
        """The group has ended and event time has reached ``until`` (the input's latest read
        time, or None): the complex events whose deadline is before it (None: none)."""
        matches = fire_deadlines(self.engine, until)
        out = None if matches is None else self._output(matches)
        self.held.prune(self.engine)
        return out

    def _output(self, matches) -> pa.RecordBatch | None:
        if not len(matches.start):
            return None
        table, _, start, end, local = reported_rows(self.held, matches)
        offsets = matches.offsets
        if self.slices is not None:
            start, end, offsets, local = kept_by_slice(
                table.column(COORD).to_numpy(), self.slices, self.group,
                start, end, offsets, local)
            if not len(start):
                return None
        if self.read_partitions is not None:
            keep = self.read_partitions.kept(self.group, table.column(POS).to_numpy()[end],
                                             table.column(TIME).to_numpy()[end])
            if not keep.all():
                start, end, offsets, local = _select(keep, start, end, offsets, local)
            if not len(start):
                return None
        return complex_event_batch(table, self.job, start, end, offsets, local,
                                   self.out_schema)


def kept_by_slice(coord: np.ndarray, slices: tuple[int, int], k: int, start, end, offsets,
                  local):
    """The complex events (``start``, ``end``, ``offsets``, ``local``: indices into rows whose
    slice coordinate is ``coord``) that T-CER slice ``k`` reports, with ``slices`` = (WA, ε):
    those with ⌊(coord(end) − ε) / WA⌋ = k, the one slice holding [end − ε, end] (ε: the
    plan's ``keep_offset``, which adds a leading absence's span)."""
    advance, epsilon = slices
    keep = np.floor_divide(coord[end] - epsilon, advance) == k
    if keep.all():
        return start, end, offsets, local
    return _select(keep, start, end, offsets, local)


def _select(keep, start, end, offsets, positions):
    lengths = np.diff(offsets)[keep]
    idx = np.repeat(keep, np.diff(offsets))
    new_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return start[keep], end[keep], new_offsets, positions[idx]


def complex_event_batch(table: pa.Table, job: EngineJob, start, end, offsets, local,
                        out_schema: pa.Schema) -> pa.RecordBatch:
    """Complex events (engine-local indices into ``table``) as one output record batch."""
    pos = table.column(POS).to_numpy()
    take = pa.array(local, pa.int64())
    if job.has_time:
        t = table.column(TIME)
        start_time, end_time = t.take(pa.array(start)), t.take(pa.array(end))
    else:
        start_time = end_time = pa.nulls(len(start), pa.int64())
    events_type = out_schema.field("events").type.value_type
    struct = pa.StructArray.from_arrays(
        [table.column(c).combine_chunks().cast(events_type.field(c).type)
         for c in job.event_columns], fields=list(events_type))
    offsets32 = pa.array(offsets, pa.int32())
    if KEY in table.column_names:
        partition = table.column(KEY).take(pa.array(end)).cast(pa.string())
    else:  # (the in-place plan: Spark need not write it for every row)
        ends = table.select(job.key.sources).take(pa.array(end))
        partition = job.key.arrow({c: ends.column(c).combine_chunks()
                                   for c in ends.column_names}, "UTC")
    cols = {
        "partition": partition,
        "start": pa.array(pos[start], pa.int64()),
        "end": pa.array(pos[end], pa.int64()),
        "start_time": _reported_time(start_time, out_schema.field("start_time").type,
                                     job.schema.time_unit),
        "end_time": _reported_time(end_time, out_schema.field("end_time").type,
                                   job.schema.time_unit),
        "positions": pa.ListArray.from_arrays(offsets32, pa.array(pos[local], pa.int64()),
                                              type=out_schema.field("positions").type),
        "events": pa.ListArray.from_arrays(offsets32, struct.take(take),
                                           type=out_schema.field("events").type),
    }
    if "match_id" in out_schema.names:
        cols["match_id"] = pa.array(match_ids(partition.to_pylist(), pos[start], pos[end],
                                              offsets, pos[local]), pa.int64())
    arrays = [cols[f.name].combine_chunks() if isinstance(cols[f.name], pa.ChunkedArray)
              else cols[f.name] for f in out_schema]
    return pa.RecordBatch.from_arrays(arrays, schema=out_schema)


def _reported_time(times, target, unit: str):
    """Event times (integers in ``unit``) as the output column's type: integers as they are,
    or -- for a timestamp time column -- Arrow timestamps (microseconds, as Spark's are)."""
    times = times.cast(pa.int64())
    if not pa.types.is_timestamp(target):
        return times
    per_second = TIME_UNITS_PER_SECOND[unit]
    micros = (pc.multiply(times, 1_000_000 // per_second) if per_second <= 1_000_000
              else pc.divide(times, per_second // 1_000_000))
    return micros.cast(pa.timestamp("us")).cast(target)


LOW_BITS = 33  # monotonically_increasing_id(): partition index << 33 | row in partition
