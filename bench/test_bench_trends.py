"""pytest-benchmark: trend aggregation (COGRA), Python reference vs Cython aggregators, one
generated stock stream (50 companies in 5 sectors, a price random walk per company):

* q3-like queries at each granularity: type-grained (ANY, no adjacent predicate), mixed
  (ANY with ``S.price > NEXT(S).price``, and with arithmetic on both sides), exact
  skip-till-next-match with that predicate (waiting set), contiguous -- sliding windows of
  20 ticks, slide 10;
* type-grained under windows of 20 .. 320 ticks (slide = size / 2): the per-event cost
  does not depend on the window, only on ``size / slide``.

Events/second in ``extra_info``; compare the rows of one run for the ratios.

    python -m pytest bench/test_bench_trends.py --benchmark-columns=min,mean,rounds
"""

from __future__ import annotations

import random

import pytest
from conftest import BACKENDS

from cercore.trends import compile_trend

SCHEMA = ("CREATE STREAM Market { EVENT Stock { company:int, sector:int, price:int, "
          "ts:primary_time } }")
QUERY = ("RETURN sector, COUNT(*), SUM(S.price) PATTERN Stock S+ SEMANTICS {semantics} "
         "WHERE [company, sector] {theta} GROUP-BY sector WITHIN {size} SLIDE {slide}")
GRANULARITIES = {
    "type-grained": ("skip-till-any-match", ""),
    "mixed": ("skip-till-any-match", "AND S.price > NEXT(S).price"),
    # arithmetic on the sides: computed by the compiled kernel too (it ran on the reference)
    "mixed, arithmetic": ("skip-till-any-match", "AND S.price * 1.001 > NEXT(S).price + 0.05"),
    "next-waiting-set": ("skip-till-next-match", "AND S.price > NEXT(S).price"),
    "contiguous": ("contiguous", "AND S.price > NEXT(S).price"),
}


@pytest.fixture(scope="module")
def stocks() -> list:
    rng = random.Random(1)
    prices, events = [100] * 50, []
    for t in range(1000):
        for c in range(50):
            prices[c] += rng.choice((-1, 1))
            events.append(("Stock", {"company": c, "sector": c % 5, "price": prices[c],
                                      "ts": t}))
    return events


def _run(benchmark, text: str, events: list, backend: str) -> list:
    query = compile_trend(text, SCHEMA)
    rows = benchmark.pedantic(lambda: query.run(events, backend=backend), rounds=3,
                              warmup_rounds=1)
    benchmark.extra_info.update(backend=backend, events=len(events), rows=len(rows))
    if benchmark.stats:  # None under --benchmark-disable
        benchmark.extra_info["events_per_second"] = len(events) / benchmark.stats["min"]
    return rows


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("granularity", list(GRANULARITIES))
def test_granularity(benchmark, stocks, granularity, backend):
    semantics, theta = GRANULARITIES[granularity]
    rows = _run(benchmark, QUERY.format(semantics=semantics, theta=theta, size=20, slide=10),
                stocks, backend)
    assert rows and all(r["COUNT(*)"] > 0 for r in rows)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("size", [20, 80, 320])
def test_window_size(benchmark, stocks, size, backend):
    text = QUERY.format(semantics="skip-till-any-match", theta="", size=size, slide=size // 2)
    assert _run(benchmark, text, stocks, backend)
