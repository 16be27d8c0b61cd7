"""The Spark batch path of trend aggregation equals the local engine (window assignment,
per-(partition, window) aggregation, roll-up to GROUP BY)."""

from __future__ import annotations

import random

import pytest

from cercore.trends import compile_trend

pytestmark = pytest.mark.spark

SCHEMA = ("CREATE STREAM S { EVENT A { v:int, g:int, h:int, t:primary_time }, "
          "EVENT B { v:int, g:int, h:int, t:primary_time }, "
          "EVENT C { v:int, g:int, h:int, t:primary_time } }")
QUERIES = [
    "RETURN g, COUNT(*), SUM(A.v), MIN(A.v), AVG(B.v) PATTERN (SEQ(A+, B))+ "
    "SEMANTICS skip-till-any-match WHERE [h] GROUP-BY g WITHIN 6 SLIDE 2",
    "RETURN g, COUNT(*), MAX(A.v) PATTERN SEQ(A+, B) SEMANTICS skip-till-next-match "
    "WHERE [h] AND A.v < NEXT(A).v GROUP-BY g WITHIN 5 SLIDE 5",
    "RETURN COUNT(*), COUNT(A) PATTERN SEQ(A, B+) SEMANTICS contiguous WHERE A.v > 0",
    "RETURN COUNT(*) PATTERN A+ WITHIN 80 SLIDE 80",  # 2^k counts beyond int64
]


def events(n: int, seed: int):
    import pandas as pd

    rng = random.Random(seed)
    t, rows = 0, []
    for _ in range(n):
        t += rng.choice([0, 1, 1, 2])
        rows.append({"event_type": rng.choice("AABC"), "v": rng.randint(0, 5),
                     "g": rng.randint(0, 1), "h": rng.randint(0, 2), "t": t})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("text", QUERIES)
def test_spark_equals_local(spark, text):
    from cercore.trends.spark import run_spark

    q = compile_trend(text, SCHEMA)
    pdf = events(120, seed=len(text))
    local = q.run(pdf)
    assert local  # the stream has trends, so the comparison means something
    assert run_spark(q, pdf, spark) == local
