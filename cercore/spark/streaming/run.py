"""Structured Streaming: one cercore engine per key inside ``transformWithStateInPandas``. This
module wires a streaming ``find`` on the driver (``run_streaming``); the processor that runs in
the tasks is ``stream_processor.py``, a started query's late count and stop
``stream_lifecycle.py``.

Per key (the PARTITION BY key for the keyed plan, the slice index k for T-CER, one constant key
for the single plan) the state is

* ``engine`` — a ValueState ``(version, offset, blob)``: ``offset`` counts the key's events fed
  to engines that were evicted; ``version`` is ``STATE_VERSION`` (a checkpoint written by
  another format is refused, never misread); ``blob`` pickles a ``KeyState``: the engine with
  the key's rows a complex event may still report (``stream_rows.KeyRun``), the reorder buffer
  — the rows the watermark has not passed yet, sorted by (time, sequence), as one Arrow IPC
  stream, not one state row per event — and the event-time timer set for the key.
* ``late`` — a ValueState ``(count,)``: the key's late rows, kept in state so that the total
  survives a restart (``late_events`` sums it from the checkpoint).

Each micro-batch hands a key's rows over as pandas frames; they become one Arrow table with the
declared types (``stream_rows.InputLayout``). Rows at or below the watermark are late: counted
and dropped. (The operator's input carries no watermarked column, so Spark does not drop them
itself; the watermark still advances, and timers follow it.) The others join the buffer; the
buffered rows the watermark has passed can never be preceded by a row still to come (it would
be late), so they are released, in (time, sequence) order, into the engine in one
``process_arrays`` call — on arrival of the key's next rows or, on a quiet key, by an
event-time timer at the earliest buffered time. When ``find``'s watermark is the stream's only
one, a key does not wait for the next micro-batch either: Spark will set the next watermark to
at least the newest time it saw (these rows included) − the delay, so the rows at or below
the key's newest time − the delay are released in the micro-batch that brings them
(``release_bound``), and only the last delay's worth of rows crosses micro-batches in state.
When the query has a time window on the ordering time, its strategy keeps no history (no
NEXT/LAST/MAX) and the watermark has passed the last evaluated time + ε, no future event can
complete a partial match, so the engine is dropped (only ``offset`` stays, so positions keep
counting).

Absences with a span: a deadline (``φ ; ABSENT(ψ) WITHIN T``) passes when the watermark does.
After evaluating what it released, a key fires the complex events whose deadline is at or
before the latest time the watermark has passed (``reached``: every row of the key up to it has
been evaluated, and one arriving now would be late), as the local engine's ``advance`` past it
would; the rest stay pending in the pickled engine (``Engine.post.deadlines``, with the rows they
report, ``HeldRows``), across micro-batches and restarts, and an event-time timer wakes a quiet
key when the watermark passes the earliest pending deadline. So streaming reports a deadline
the allowed lateness after event time passes it, and one after the last watermark stays
pending. A key's engine is kept until the watermark passes its last time + max(ε, T) (a
pending deadline can still fire or be ruled out, and a leading ``ABSENT(ψ) WITHIN T ; φ`` can
still look back to its ψ events); T-CER slices grow by the spans (``SparkPlan.slice_size``).

Positions in streaming output count the events of the key (of the whole stream for the
single plan) in (time, sequence) order — a global numbering would need a global sort. A T-CER
slice k holds the events of [k·WA, k·WA + WS); it reports the complex events ending in its
part of the stream (``kept_by_slice``), names itself in ``partition`` ("slice k"), and its state
is cleared once the watermark passes its last time (a row of it would be late by then).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.types import StructType

from cercore.errors import CercoreError
from cercore.spark.base.job import (
    GROUP,
    KEY,
    TIME,
    US,
    WM,
)
from cercore.spark.streaming.processor import CerProcessor
from cercore.spark.streaming.rows import (
    NULL_MASK,
    InputColumn,
    InputLayout,
)


def watermark_column(time_col, unit: str):
    """Event time as a timestamp for ``withWatermark`` (integer times in ``unit``)."""
    from pyspark.sql import functions as F

    if unit == "s":
        return F.timestamp_seconds(time_col)
    if unit == "ms":
        return F.timestamp_millis(time_col)
    if unit == "us":
        return F.timestamp_micros(time_col)
    return F.timestamp_micros(F.floor(time_col / F.lit(1000)).cast("long"))


def with_event_time(df, time_column: str, unit: str, watermark: str):
    """``df`` without the rows that have no time, with the time as a watermarked timestamp
    (``WM``, ``watermark`` = the allowed lateness) and in microseconds (``US``)."""
    from pyspark.sql import functions as F

    df = df.filter(F.col(time_column).isNotNull())
    df = df.withColumn(WM, watermark_column(F.col(time_column), unit))
    df = df.withColumn(US, F.unix_micros(F.col(WM)))
    return df.withWatermark(WM, watermark)


NUMERIC_TYPES = ("ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType")


def input_layout(schema: StructType) -> InputLayout:
    """Where the processor finds each column of a DataFrame with Spark ``schema`` once
    ``operator_input`` has added the null masks (one per numeric column, after the rest)."""
    from pyspark.sql.pandas.types import to_arrow_type

    columns, masks = [], 0
    for i, f in enumerate(schema.fields):
        mask = None
        if type(f.dataType).__name__ in NUMERIC_TYPES:
            mask = len(schema.fields) + masks
            masks += 1
        columns.append(InputColumn(f.name, to_arrow_type(f.dataType), i, mask))
    return InputLayout(tuple(columns))


def operator_input(df) -> tuple[Any, InputLayout]:
    """``df`` as the pandas processor receives it exactly: each numeric column with its nulls
    filled, plus a null-mask column (pandas would turn a nullable long into float64), and
    where the processor finds each column."""
    from pyspark.sql import functions as F

    from cercore.spark.base.hidden import _quote

    layout = input_layout(df.schema)
    values, masks = [], []
    for c, f in zip(layout.columns, df.schema.fields):
        col = F.col(_quote(f.name))
        if c.mask is not None:
            masks.append(col.isNull().alias(f"{NULL_MASK}{len(masks)}"))
            col = F.coalesce(col, F.lit(0).cast(f.dataType)).alias(f.name)
        values.append(col)
    return df.select(*values, *masks), layout


STREAM_SLICE_SPANS = 4  # default T-CER slice advance WA, in span limits D_C


def eviction_span(analysed, time: str) -> int | None:
    """How long after a key's last evaluated time (on ``time``, the stream's event time) its
    engine can be dropped once the watermark has passed it, or None: never. Once the watermark
    passes the last time + ε, no partial match can complete (a time window on ``time``, no
    NEXT/LAST/MAX); + T, no pending deadline (``φ ; ABSENT(ψ) WITHIN T``) can be ruled out and
    no later complex event looks back to a ψ event (``ABSENT(ψ) WITHIN T ; φ``)."""
    spans = [a for a in (analysed.deadline, analysed.lookback)
             if a is not None]
    for a in spans:
        if a.attribute != time:
            raise CercoreError(f"the span of ABSENT(...) WITHIN is measured on {a.attribute!r}, "
                               f"but the stream's event time (its watermark) is {time!r}: "
                               f"pass time={a.attribute!r}")
    w = analysed.window
    if (w.kind in ("time", "attr") and w.attribute == time
            and analysed.strategy not in ("NEXT", "LAST", "MAX")):
        return max([int(w.epsilon)] + [int(a.span) for a in spans])
    return None


DELAY_KEY = "spark.watermarkDelayMs"  # the metadata Spark puts on a watermarked column


def run_streaming(prep, plan, out_struct, watermark: str, slice_advance: int | None = None):
    """The streaming complex events of ``prep`` under the keyed, T-CER (by event time) or
    single ``plan``. T-CER slices advance by ``slice_advance`` (default
    ``STREAM_SLICE_SPANS`` × D_C: an event is in at most two slices)."""
    from pyspark.sql import functions as F

    from cercore.spark.base.partitions import slices_of
    from cercore.spark.base.plan import KEYED, TCER

    if prep.time is None:
        raise CercoreError("streaming needs an event-time column: pass time= or declare a "
                           "primary_time attribute")
    analysed = prep.job.compiled().analysed
    evict_after = eviction_span(analysed, prep.time)
    df = prep.df
    slices = None
    if plan.kind == KEYED:
        df = df.filter(F.col(KEY).isNotNull())
        group = KEY
    elif plan.kind == TCER:  # one state per slice; `partition` names it
        advance = slice_advance or STREAM_SLICE_SPANS * (plan.span_limit + plan.reach
                                                         + plan.lookback)
        size = plan.slice_size(advance)
        slices = (advance, size, plan.keep_offset)
        group = GROUP
        df = df.withColumn(GROUP, slices_of(TIME, size, advance))
        df = df.withColumn(KEY, F.concat(F.lit("slice "), F.col(GROUP).cast("string")))
    else:
        group = GROUP
        df = df.withColumn(group, F.lit(""))
    # without the watermarked column the operator's input has no event-time attribute, so
    # Spark does not drop late rows before the processor (which counts them in its state);
    # the watermark node stays in the plan: the watermark advances and timers follow it
    df = with_event_time(df, TIME, prep.schema.time_unit, watermark)
    release_delay = None
    if not any(DELAY_KEY in f.metadata for f in prep.df.schema.fields):  # ours is the only one
        release_delay = int(df.schema[WM].metadata[DELAY_KEY])
    df, layout = operator_input(df.drop(WM))
    processor = CerProcessor(prep.job, layout, out_struct, evict_after=evict_after,
                             slices=slices, deadlines=analysed.deadline is not None,
                             release_delay_ms=release_delay)
    return df.groupBy(group).transformWithStateInPandas(processor, out_struct, "Append",
                                                        "EventTime")


