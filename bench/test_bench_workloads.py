"""pytest-benchmark suite: the CORE paper's workloads (cercore.bench.workloads) on each dataset,
every backend, fresh engine per round, with the paper's methodology (CONSUME BY ANY, LIMIT 1000).

    python -m pytest bench/test_bench_workloads.py --benchmark-only
"""

from __future__ import annotations

import pytest

import cercore
from cercore.bench import datasets, workloads

EVENTS = 20_000
CASES = [(ds, w.name) for ds in ("stock_trace", "smart_homes", "taxis")
         for w in workloads.workloads(ds) if w.n <= 12]


@pytest.fixture(scope="module")
def tables():
    return {ds: datasets.load(ds, EVENTS, seed=0) for ds in ("stock_trace", "smart_homes",
                                                             "taxis")}


@pytest.mark.parametrize("dataset, name", CASES)
def test_workload(benchmark, tables, backend, dataset, name):
    (w,) = workloads.select(dataset, [name])
    query = cercore.compile(w.text(), datasets.schema(dataset))
    table = tables[dataset]

    def setup():
        return (query.engine(backend=backend),), {}

    def run(engine):
        return sum(1 for _ in engine.process(table, workers=1))

    count = benchmark.pedantic(run, setup=setup, rounds=3, warmup_rounds=1)
    if benchmark.stats:  # None under --benchmark-disable
        benchmark.extra_info.update(dataset=dataset, workload=name, events=table.num_rows,
                                    complex_events=count,
                                    events_per_second=table.num_rows / benchmark.stats["min"])
