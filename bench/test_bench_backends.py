"""pytest-benchmark: Cython vs Python backend on S3 and its no-output variant (fresh engine per
round), and Cython throughput vs window size. Run ``python -m pytest bench/test_bench_backends.py``.
"""

from __future__ import annotations

import pytest
from bench_backends import S3, S3_NO_OUTPUT, T

import cercore

QUERIES = {"S3": S3.format(w=T), "S3-no-output": S3_NO_OUTPUT.format(w=T)}


def _run(benchmark, query, table, backend):
    def setup():
        return (query.engine(backend=backend),), {}

    def process(engine):
        return sum(1 for _ in engine.process(table))

    count = benchmark.pedantic(process, setup=setup, rounds=3, warmup_rounds=1)
    benchmark.extra_info.update(backend=backend, events=table.num_rows, complex_events=count)
    if benchmark.stats:  # None under --benchmark-disable
        benchmark.extra_info["events_per_second"] = table.num_rows / benchmark.stats["min"]
    return count


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_backends(benchmark, stock, backend, name):
    schema, table = stock
    count = _run(benchmark, cercore.compile(QUERIES[name], schema), table, backend)
    assert (count > 0) == (name == "S3")


@pytest.mark.parametrize("k", [1, 2, 4])
def test_cython_window_scaling(benchmark, stock, k):
    pytest.importorskip("cercore_fast.evaluator")
    schema, table = stock
    _run(benchmark, cercore.compile(S3.format(w=k * T), schema), table, "cython")
