"""cercore on Spark: CEQL over DataFrames, batch and Structured Streaming.

    from cercore.spark import find, explain
    matches = find(events_df, "SELECT * FROM S WHERE BUY AS b; SELL AS s "
                              "PARTITION BY [name] WITHIN 10 SECONDS", time="ts")

The engine inside Spark is the cercore engine (Cython when available); Spark only decides
which events each engine sees and in what order (``cercore.spark.plan``): one engine per
PARTITION BY key, T-CER overlapping time slices for WITHIN queries without keys, or one
ordered pass for history-dependent queries. ``explain`` prints the choice and the reason.
Streaming DataFrames run through ``transformWithState`` (``cercore.spark.streaming``).

Needs ``pip install 'cercore[spark]'`` (pyspark ≥ 4.3, protobuf, pandas < 3) and Java 17+;
the workers need cercore installed (or shipped with ``--py-files``).
"""

from cercore.spark.api import explain, find, output_schema
from cercore.spark.frames import infer_schema
from cercore.spark.plan import KEYED, SINGLE, TCER, SparkPlan, choose_plan

__all__ = ["KEYED", "SINGLE", "TCER", "SparkPlan", "choose_plan", "explain", "find",
           "infer_schema", "late_events", "output_schema"]


def late_events(query) -> int:
    """Late rows a streaming ``find`` dropped (see ``cercore.spark.streaming.late_events``)."""
    from cercore.spark.streaming import late_events as count

    return count(query)
