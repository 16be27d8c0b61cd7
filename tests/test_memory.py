"""Bounded memory: under WITHIN, the tECS arena, the event store and the partition table stay
bounded on long streams; idle partitions are forgotten."""

from __future__ import annotations

import cercore

DECL = "CREATE STREAM S { EVENT A { k:int, ts:int }, EVENT B { k:int, ts:int } }"


def events(n: int, keys: int = 1, fresh_keys: bool = False):
    for i in range(n):
        k = i if fresh_keys else i % keys
        yield ("A" if i % 3 else "B"), {"k": k, "ts": i}


def peak(query: str, n: int, **kw) -> tuple[int, int, int]:
    engine = cercore.compile(query, DECL).engine("python")
    most_nodes = most_batches = 0
    for _ in engine.process(events(n, **kw)):
        pass
    most_nodes = max(most_nodes, engine.evaluator.memory_nodes())
    most_batches = max(most_batches, len(engine.store.batches))
    return most_nodes, most_batches, engine.stats["partitions"]


def test_arena_is_bounded_under_a_window():
    q = "SELECT * FROM S WHERE (A)+ ; B WITHIN 20 EVENTS"
    short = peak(q, 20_000)
    long = peak(q, 80_000)
    assert long[0] <= 2 * max(short[0], 1 << 15)
    assert long[1] <= 3


def test_idle_partitions_are_forgotten():
    q = "SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 10 EVENTS"
    engine = cercore.compile(q, DECL).engine("python")
    for _ in engine.process(events(60_000, fresh_keys=True)):
        pass
    assert engine.stats["partitions"] <= 2
    assert len(engine.partition_ids) < 20_000


def test_without_window_nothing_is_reclaimed_and_explain_warns():
    q = cercore.compile("SELECT * FROM S WHERE A ; B", DECL)
    assert any("no WITHIN" in w for w in q.warnings)
    assert "no WITHIN" in q.explain()
