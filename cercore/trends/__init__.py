"""Trend aggregation (COGRA, Poppe et al. SIGMOD 2019; where cercore departs
from the printed paper is in docs/trends.md):
COUNT/SUM/MIN/MAX/AVG over every trend a Kleene pattern matches, computed without building
the trends.

    q = cercore.trends.compile_trend(
        "RETURN COUNT(*), SUM(A.v) PATTERN (SEQ(A+, B))+ SEMANTICS skip-till-any-match", schema)
    print(q.explain())          # automaton, predicate classes, granularity and why
    rows = q.run(events)        # [{"COUNT(*)": 43, "SUM(A.v)": 388}]
"""

from cercore.trends.parse import is_trend_query, parse_trend_query
from cercore.trends.query import CompiledTrendQuery, compile_trend, run_trend

__all__ = ["CompiledTrendQuery", "compile_trend", "is_trend_query", "parse_trend_query",
           "run_trend"]
