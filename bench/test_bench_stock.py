"""pytest-benchmark suite: the demo queries over the stock trace, fresh engine per round.

Run with ``python -m pytest bench`` (``--benchmark-only``, ``--benchmark-compare`` etc. work).
"""

from __future__ import annotations

import pytest

from cercore.cli.demo import DEMO_QUERIES


@pytest.mark.parametrize("name", DEMO_QUERIES)
def test_process(benchmark, compiled, stock, backend, name):
    """Evaluate and enumerate (positions only)."""
    _, table = stock
    query = compiled[name]

    def setup():
        return (query.engine(backend=backend),), {}

    def process(engine):
        return sum(1 for _ in engine.process(table))

    count = benchmark.pedantic(process, setup=setup, rounds=3, warmup_rounds=1)
    if benchmark.stats:  # None under --benchmark-disable
        benchmark.extra_info.update(events=table.num_rows, complex_events=count,
                                    events_per_second=table.num_rows / benchmark.stats["min"])
    assert count > 0


@pytest.mark.parametrize("name", DEMO_QUERIES)
def test_process_and_materialise(benchmark, compiled, stock, backend, name):
    """Evaluate, enumerate and build ``ce.events`` for every output."""
    _, table = stock
    query = compiled[name]

    def setup():
        return (query.engine(backend=backend),), {}

    def run(engine):
        return sum(len(ce.events) for ce in engine.process(table))

    benchmark.pedantic(run, setup=setup, rounds=3, warmup_rounds=1)
