"""The queries and events of the cluster tests (test_cluster.py, cluster_child.py) and their
local engine's answers, computed without Spark."""

from __future__ import annotations

import os
import random
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq

import cercore
from cercore.trends import compile_trend

DECL = ("CREATE STREAM S { EVENT A { id:int, v:int, ts:primary_time }, "
        "EVENT B { id:int, v:int, ts:primary_time }, EVENT C { id:int, v:int, ts:primary_time } }")
QUERIES = {
    "keyed": "SELECT * FROM S WHERE A; B+; C FILTER B[v >= 0] PARTITION BY [id] WITHIN 10 [ts]",
    "tcer": "SELECT * FROM S WHERE A; B; C WITHIN 6 [ts]",
}
SQL_QUERY = "SELECT * FROM S WHERE A; B; C FILTER C[v > 0] WITHIN 8 [ts]"
TREND_SCHEMA = ("CREATE STREAM S { EVENT A { v:int, g:int, h:int, t:primary_time }, "
                "EVENT B { v:int, g:int, h:int, t:primary_time }, "
                "EVENT C { v:int, g:int, h:int, t:primary_time } }")
TREND_QUERY = ("RETURN g, COUNT(*), SUM(A.v), MIN(A.v), AVG(B.v) PATTERN (SEQ(A+, B))+ "
               "SEMANTICS skip-till-any-match WHERE [h] GROUP-BY g WITHIN 6 SLIDE 2")
COLUMNS = ("event_type", "id", "v", "ts", "seq")


def make_events(n: int, seed: int, keys: int = 2) -> list[tuple]:
    """(event_type, id, v, ts, seq) rows in (ts, seq) order."""
    rng = random.Random(seed)
    ts, out = 100, []
    for i in range(n):
        ts += rng.choice([0, 1, 1, 2])
        out.append((rng.choice("AABBC"), rng.randrange(keys), rng.randrange(-1, 3), ts, i))
    return out


def write_parquet(rows: list[tuple], path: str, *, shuffle_seed: int | None = 0) -> None:
    """``rows`` as one Parquet file (shuffled: nothing may trust the row order), written
    under another name and renamed in (a streaming source may list the folder meanwhile)."""
    rows = list(rows)
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(rows)
    table = pa.table({c: [r[i] for r in rows] for i, c in enumerate(COLUMNS)},
                     schema=pa.schema([("event_type", pa.string()), ("id", pa.int64()),
                                       ("v", pa.int64()), ("ts", pa.int64()),
                                       ("seq", pa.int64())]))
    tmp = path + ".tmp"
    pq.write_table(table, tmp)
    os.rename(tmp, path)


def local_by_positions(query: str, rows: list[tuple]) -> Counter:
    """The local engine's complex events over ``rows`` as (start, end, positions)."""
    engine = cercore.compile(query, cercore.Schema.parse(DECL)).engine()
    return Counter((ce.start, ce.end, tuple(ce.positions))
                   for ce in engine.process(_events(rows)))


def local_by_seq(query: str, rows: list[tuple]) -> Counter:
    """The local engine's complex events over ``rows`` as their events' seq (streaming
    positions are per key, so streams are compared by the events themselves)."""
    engine = cercore.compile(query, cercore.Schema.parse(DECL)).engine()
    ordered = sorted(rows, key=lambda r: (r[3], r[4]))
    return Counter(tuple(ordered[p][4] for p in ce.positions)
                   for ce in engine.process(_events(ordered)))


def _events(rows: list[tuple]):
    for t, i, v, ts, _ in sorted(rows, key=lambda r: (r[3], r[4])):
        yield t, {"id": i, "v": v, "ts": ts}


def spark_by_positions(rows: list[dict]) -> Counter:
    return Counter((r["start"], r["end"], tuple(r["positions"])) for r in rows)


def spark_by_seq(rows: list[dict]) -> Counter:
    return Counter(tuple(e["seq"] for e in r["events"]) for r in rows)


def trend_events(n: int, seed: int) -> pa.Table:
    rng = random.Random(seed)
    t, rows = 0, []
    for i in range(n):
        t += rng.choice([0, 1, 1, 2])
        rows.append({"event_type": rng.choice("AABC"), "v": rng.randint(0, 5),
                     "g": rng.randint(0, 1), "h": rng.randint(0, 2), "t": t, "seq": i})
    return pa.Table.from_pylist(rows)


def local_trend(table: pa.Table) -> list[dict]:
    return compile_trend(TREND_QUERY, TREND_SCHEMA).run(table.drop_columns(["seq"]).to_pandas())
