"""Helpers shared by the Spark tests: the local engine's answer, and events as rows."""

from __future__ import annotations

import os
import random
from collections import Counter

import cercore

COLUMNS = ["event_type", "v", "w", "s", "b", "k", "g", "ts", "seq"]
DDL = ("event_type string, v long, w double, s string, b boolean, k long, g long, ts long, "
       "seq long")


def local_complex_events(query: str, schema, events) -> Counter:
    """The local engine's complex events over ``events`` (already in (ts, seq) order), as a
    multiset of (start, end, positions)."""
    engine = cercore.compile(query, schema).engine()
    return Counter((ce.start, ce.end, tuple(ce.positions)) for ce in engine.process(events))


def spark_complex_events(rows) -> Counter:
    return Counter((r["start"], r["end"], tuple(r["positions"])) for r in rows)


def event_rows(events, seed: int = 0, time_offset: int = 0, shuffle: bool = True
               ) -> list[tuple]:
    """``(type, attrs)`` events as DataFrame rows with seq = stream index, shuffled (so a test
    fails if anything trusts Spark's row order) unless ``shuffle`` is false."""
    rows = []
    for i, (t, attrs) in enumerate(events):
        a = dict(attrs)
        if a.get("ts") is not None:
            a["ts"] += time_offset
        rows.append((t, a.get("v"), a.get("w"), a.get("s"), a.get("b"), a.get("k"), a.get("g"),
                     a.get("ts"), i))
    if shuffle:
        random.Random(seed).shuffle(rows)
    return rows


def write_file(spark, folder: str, name: str, rows: list[tuple], ddl: str) -> None:
    """One Parquet file of ``rows`` (schema ``ddl``) for a streaming file source, moved in
    atomically (the source may list the folder while we write)."""
    tmp = os.path.join(os.path.dirname(folder), "tmp-" + name)
    spark.createDataFrame(rows, ddl).coalesce(1).write.mode("overwrite").parquet(tmp)
    part = next(f for f in os.listdir(tmp) if f.endswith(".parquet"))
    os.rename(os.path.join(tmp, part), os.path.join(folder, name + ".parquet"))
