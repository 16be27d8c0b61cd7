"""pytest-benchmark: the constant-cost-per-event checks of the Cython engine (fresh engine per
round), on the bundled stock trace and generated stocks:

* every backend on P3 / P'3 (compare the rows for the Cython / Python ratio);
* Cython on P'3 with the window T, 2T, 4T, 8T, 16T;
* Cython on P3 over generated streams of growing length (events/s in ``extra_info``);
* Cython's live tECS nodes sampled every 10,000 events over a long windowed stream
  (``extra_info["tecs_nodes"]``: flat).

    python -m pytest bench/test_bench_scaling.py --benchmark-columns=min,mean,rounds
"""

from __future__ import annotations

import pytest

import cercore
from cercore.bench import datasets, runner, workloads


def _query(name: str) -> cercore.CompiledQuery:
    (w,) = workloads.select("stocks", [name])
    return cercore.compile(w.text(), datasets.schema("stocks"))


def _run(benchmark, query, table, backend: str) -> int:
    def setup():
        return (query.engine(backend=backend),), {}

    def process(engine):
        return sum(1 for _ in engine.process(table))

    count = benchmark.pedantic(process, setup=setup, rounds=3, warmup_rounds=1)
    benchmark.extra_info.update(backend=backend, events=table.num_rows, complex_events=count)
    if benchmark.stats:  # None under --benchmark-disable
        benchmark.extra_info["events_per_second"] = table.num_rows / benchmark.stats["min"]
    return count


@pytest.mark.parametrize("name", ["P3", "P'3"])
def test_backends(benchmark, stock, backend, name):
    _, table = stock
    count = _run(benchmark, _query(name), table, backend)
    assert (count > 0) == (name == "P3")


@pytest.mark.parametrize("k", [1, 2, 4, 8, 16])
def test_cython_window(benchmark, stock, k):
    pytest.importorskip("cercore_fast.evaluator")
    _, table = stock
    assert _run(benchmark, _query(f"P'3@{k}T"), table, "cython") == 0


@pytest.mark.parametrize("events", [25_000, 100_000, 400_000])
def test_cython_stream_length(benchmark, events):
    pytest.importorskip("cercore_fast.evaluator")
    _run(benchmark, _query("P3"), datasets.stocks(events, seed=0), "cython")


def test_cython_memory_over_a_long_stream(benchmark):
    pytest.importorskip("cercore_fast.evaluator")
    query, table = _query("P3"), datasets.stocks(500_000, seed=0)
    samples = benchmark.pedantic(runner.memory_profile, args=(query, table, "cython"),
                                 rounds=1, iterations=1)
    nodes = [s.tecs_nodes for s in samples]
    benchmark.extra_info.update(tecs_nodes=nodes, rss_bytes=[s.rss_bytes for s in samples])
    # flat: the second half of the stream holds no more live nodes than a window's worth
    assert max(nodes[len(nodes) // 2:]) < 2 * max(nodes[: len(nodes) // 2]) + 1_000
