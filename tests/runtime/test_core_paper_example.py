"""CORE's running example (Figures 1, 3, 4, 6): query Q1 over a stock stream, asserted after
every event, plus the tECS shape properties the paper relies on (§4.1-4.2)."""

from __future__ import annotations

from support import STOCK_DECL

import cercore
from cercore.runtime.tecs import BOTTOM, NIL, OUTPUT, UNION

Q1 = """SELECT * FROM Stock
WHERE SELL AS msft ; SELL AS intel ; SELL AS amzn
FILTER msft[name = 'MSFT'] AND msft[price > 100]
   AND intel[name = 'INTC']
   AND amzn[name = 'AMZN'] AND amzn[price < 2000]
WITHIN 6 EVENTS"""


def ev(kind, name, price, t):
    return kind, {"id": t, "name": name, "volume": 100, "price": price, "stock_time": t}


# Positions 0..6 as in Figure 3: two MSFT sales over 100, INTC at 2 and 5, AMZN at 4 and 6,
# and an irrelevant BUY at 3.
STREAM = [ev("SELL", "MSFT", 101.0, 0), ev("SELL", "MSFT", 102.0, 1), ev("SELL", "INTC", 80.0, 2),
          ev("BUY", "INTC", 80.0, 3), ev("SELL", "AMZN", 1900.0, 4), ev("SELL", "INTC", 81.0, 5),
          ev("SELL", "AMZN", 1920.0, 6)]

EXPECTED_AFTER = {  # Figure 4 / Example 2: [[4]] and [[6]]
    4: {(0, (0, 2, 4)), (1, (1, 2, 4))},
    6: {(0, (0, 2, 6)), (0, (0, 5, 6)), (1, (1, 2, 6)), (1, (1, 5, 6))},
}


def test_outputs_after_every_event(backend):
    engine = cercore.compile(Q1, STOCK_DECL).engine(backend)
    for j, (kind, attrs) in enumerate(STREAM):
        got = engine.push(kind, attrs)
        assert {(ce.start, ce.positions) for ce in got} == EXPECTED_AFTER.get(j, set()), j
        assert all(ce.end == j for ce in got)
        assert len(got) == len({ce.positions for ce in got})


def test_enumeration_starts_with_the_latest_start():
    """Algorithm 2 is a left-first DFS over max-start-ordered unions: the first complex event
    has the latest start, the rest follow depth-first."""
    engine = cercore.compile(Q1, STOCK_DECL).engine("python")
    for kind, attrs in STREAM[:6]:
        engine.push(kind, attrs)
    starts = [ce.start for ce in engine.push(*STREAM[6])]
    assert starts[0] == max(starts) and sorted(starts) == [0, 0, 1, 1]


def test_window_cuts_old_starts():
    """Example 3 uses ε = 6; with WITHIN 4 EVENTS only runs starting at 2 or later survive at 6."""
    q = Q1.replace("WITHIN 6 EVENTS", "WITHIN 4 EVENTS")
    engine = cercore.compile(q, STOCK_DECL).engine("python")
    got = [ce for kind, attrs in STREAM for ce in engine.push(kind, attrs)]
    assert {(ce.start, ce.end) for ce in got} == {(0, 4), (1, 4)}


def test_complex_event_carries_the_events():
    ces = cercore.run(Q1, STOCK_DECL, STREAM)
    first = next(ce for ce in ces if ce.positions == (0, 2, 4))
    assert [(e.type, e.attributes["name"]) for e in first.events] == [
        ("SELL", "MSFT"), ("SELL", "INTC"), ("SELL", "AMZN")]
    assert first.to_dict()["events"][2]["attributes"]["price"] == 1900.0


# ---- tECS properties (§4.1): time-ordered, 3-bounded, duplicate-free ----------------------
def odepth(arena, n):
    d = 0
    while arena.kind[n] == UNION:
        n = arena.left[n]
        d += 1
    return d


def check_tecs(evaluator):
    arena = evaluator.arena
    for n in range(len(arena)):
        k = arena.kind[n]
        if k == UNION:
            left, right = arena.left[n], arena.right[n]
            assert arena.maxs[n] == arena.maxs[left]
            if right != NIL:
                assert arena.maxs[left] >= arena.maxs[right], "time-ordered"
        elif k == OUTPUT:
            assert arena.maxs[n] == arena.maxs[arena.left[n]]
        else:
            assert k == BOTTOM
        assert odepth(arena, n) <= 3, "3-bounded"
    for table in evaluator.partitions.values():
        for ul in table.values():
            assert arena.kind[ul[0]] != UNION
            m = [arena.maxs[x] for x in ul]
            assert all(m[0] >= x for x in m[1:])
            assert all(a > b for a, b in zip(m[1:], m[2:])), "strictly decreasing after n0"
            assert len(ul) <= max(1, len(table)) + 1


def test_tecs_invariants_hold_on_a_busy_stream():
    q = "SELECT * FROM Stock WHERE (SELL OR BUY)+ ; SELL ; (BUY)+ WITHIN 5 EVENTS"
    engine = cercore.compile(q, STOCK_DECL).engine("python")
    names = ["MSFT", "INTC", "AMZN"]
    for i in range(60):
        kind = "SELL" if (i * 7) % 3 else "BUY"
        outs = engine.push(kind, {"id": i, "name": names[i % 3], "volume": 1, "price": 1.0,
                                  "stock_time": i})
        assert len(outs) == len({ce.positions for ce in outs})
        check_tecs(engine.evaluator)
