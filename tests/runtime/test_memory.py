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
    """Largest arena and event store seen while processing, checked every 1,000 events."""
    engine = cercore.compile(query, DECL).engine("python")
    evs = list(events(n, **kw))
    most_nodes = most_batches = 0
    for i in range(0, n, 1000):
        for _ in engine.process(evs[i:i + 1000]):
            pass
        most_nodes = max(most_nodes, engine.evaluator.memory_nodes())
        most_batches = max(most_batches, len(engine.store.batches))
    return most_nodes, most_batches, engine.stats["partitions"]


def test_arena_is_bounded_under_a_window():
    # B never passes its filter: no output, but every A extends the partial matches.
    q = "SELECT * FROM S WHERE (A)+ ; B FILTER B[k < 0] WITHIN 20 EVENTS"
    short = peak(q, 20_000)
    long = peak(q, 80_000)
    assert long[0] <= 2 * max(short[0], 1 << 15)
    assert long[1] <= short[1] + 2


def test_idle_partitions_are_forgotten():
    """Every event opens a new partition; partitions idle for longer than the window are
    dropped at the next reclamation pass, so their number stays bounded by the pass size."""
    from cercore.runtime.evaluator import MIN_COMPACTION

    q = "SELECT * FROM S WHERE A ; A PARTITION BY [k] WITHIN 10 EVENTS"
    engine = cercore.compile(q, DECL).engine("python")
    evs = list(events(60_000, fresh_keys=True))
    most = 0
    for i in range(0, len(evs), 1000):
        for _ in engine.process(evs[i:i + 1000]):
            pass
        most = max(most, engine.stats["partitions"], len(engine.partitions))
    assert most <= MIN_COMPACTION


def test_without_window_nothing_is_reclaimed_and_explain_warns():
    q = cercore.compile("SELECT * FROM S WHERE A ; B", DECL)
    assert any("no WITHIN" in w for w in q.warnings)
    assert "no WITHIN" in q.explain()
