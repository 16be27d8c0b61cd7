"""cercore on Spark: CEQL queries, trend aggregation and PrePP plans over DataFrames, one
calling convention ``(df, query, *, options)``.

    from cercore.spark import aggregate, explain, find, run_plan
    matches = find(events_df, "SELECT * FROM S WHERE BUY AS b; SELL AS s "
                              "PARTITION BY [name] WITHIN 10 SECONDS", time="ts")
    rows_df = aggregate(events_df, "RETURN COUNT(*) PATTERN SEQ(A+, B) WITHIN 10 SLIDE 5",
                        schema=decl)
    run = run_plan(events_df, prepp_query, plan=plan, network=net)

Rooms, by what a user does (each imports only the rooms below it and ``base``):

    cercore/spark/
      ceql/       find, explain: CEQL over a DataFrame (front.py), the batch jobs (batch.py,
                  read_order.py); a streaming DataFrame goes on to streaming/
      streaming/  a streaming find: run.py (transformWithStateInPandas), processor.py,
                  rows.py, lifecycle.py (late_events, stop_query)
      trends/     aggregate, aggregate_rows: batch.py, job.py (workers), rows.py, streaming.py
      sql/        functions.py: cer_find, cer_aggregate for spark.sql (register); typed.py:
                  the typed cer_find, an Arrow UDTF (register(spark, events=...))
      network/    plans.py: PrePP run_plan as semi joins, estimate_rates, estimate_pairwise
      base/       shared: session.py, shipping.py (spark-pack's archive, the executor check),
                  errors.py (cercore_errors), frames.py (hidden columns,
                  infer_schema), job.py (EngineJob), plan.py (T-CER / keyed / single),
                  partitions.py, match_id.py, columns.py (predicates as Spark columns)

* CEQL: the engine inside Spark is the cercore engine (Cython when available); Spark only
  decides which events each engine sees and in what order (``base/plan.py``): one engine per
  PARTITION BY key, T-CER overlapping time slices for WITHIN queries without keys, or one
  ordered pass for history-dependent queries. ``explain`` prints the choice and the reason.
  Streaming DataFrames run through ``transformWithStateInPandas``, whole Arrow batches per key.
* Trend aggregation: ``aggregate`` gives the result rows as a DataFrame, ``aggregate_rows``
  collects them.
* SQL: ``register(spark)`` adds the table functions ``cer_find`` and ``cer_aggregate`` for
  ``spark.sql``; ``register(spark, events=...)`` the typed ``cer_find`` (output schema fixed
  at registration, record batches in and out: as fast as ``find``).
* Errors cercore raises in the workers: ``with cercore_errors(): df.collect()`` gives them
  back as the ``CercoreError`` they are; ``aggregate_rows`` does.
* Every function works on a classic and on a Spark Connect session
  (``SparkSession.builder.remote(...)``; ``base/session.py``).
* PrePP: ``run_plan`` realises a push-pull plan as semi-join reductions; ``estimate_rates`` /
  ``estimate_pairwise`` estimate the network's statistics.

pyspark is imported only when a function is called. Needs ``pip install 'cercore[spark]'``
(pyspark ≥ 4.3, protobuf, pandas < 3) and Java 17+; the executors need cercore: installed, or
shipped as the archive ``cercore spark-pack`` builds (``base/shipping.py``, docs/deploying.md);
``find``, ``aggregate`` and ``register`` check that once per session, before the first job.
"""

from cercore.errors import CercoreError
from cercore.spark.base.errors import cercore_errors
from cercore.spark.base.frames import infer_schema
from cercore.spark.base.partitions import state_partitions
from cercore.spark.base.plan import KEYED, SINGLE, TCER, SparkPlan, choose_plan
from cercore.spark.ceql import explain, find, output_schema
from cercore.spark.network import (
    SparkPlanRun,
    estimate_pairwise,
    estimate_rates,
    events_dataframe,
    run_plan,
)
from cercore.spark.trends import aggregate, aggregate_rows

__all__ = ["KEYED", "SINGLE", "TCER", "SparkPlan", "SparkPlanRun", "aggregate",
           "aggregate_rows", "cercore_errors", "choose_plan", "estimate_pairwise", "estimate_rates",
           "events_dataframe", "explain", "find", "infer_schema", "late_events",
           "output_schema", "register", "register_aggregate", "run_plan", "state_partitions",
           "stop_query"]


def register(spark, *, events=None, time: str | None = None, find: str = "cer_find",
             aggregate: str = "cer_aggregate") -> None:
    """Register the SQL table functions ``cer_find`` and ``cer_aggregate`` on ``spark``
    (classic or Spark Connect), for ``spark.sql`` (see ``cercore.spark.sql.functions``)::

        cercore.spark.register(spark)
        spark.sql("SELECT * FROM cer_find(TABLE(trades) PARTITION BY name "
                  "ORDER BY (ts, seq), '<CEQL query>', '<declaration>')")

    ``events`` (the Spark schema of the tables ``cer_find`` will read: a StructType, a
    DataFrame or DDL text) registers the typed ``cer_find`` instead, an Arrow UDTF with a
    fixed output schema, as fast as ``find`` (``cercore.spark.sql.typed``); ``time``: its
    time column, when that holds timestamps (times are then reported as timestamps)."""
    from cercore.spark.base.shipping import require_cercore
    from cercore.spark.sql.functions import register as register_functions

    if events is None and time is not None:
        raise CercoreError("time= describes the events of a typed cer_find: give events= too")
    require_cercore(spark)  # the functions run on the executors: is cercore there?
    register_functions(spark, find=None if events is not None else find, aggregate=aggregate)
    if events is not None:
        from cercore.spark.sql.typed import register_find

        register_find(spark, events, time=time, name=find)


def register_aggregate(spark, name: str, query: str, declaration: str, *, events,
                       sequence: str | None = None, exact: str | None = None,
                       **options) -> None:
    """Register ``name`` as a typed ``cer_aggregate`` for one trend ``query`` (the output
    columns depend on the query): an Arrow UDTF over tables of ``events`` (a StructType, a
    DataFrame or DDL text), compiled now; ``sequence`` orders equal times (else the rows'
    order), ``exact`` and the engine options as for ``aggregate``::

        cercore.spark.register_aggregate(spark, "runs", query, declaration, events=df)
        spark.sql("SELECT * FROM runs(TABLE(readings) PARTITION BY g ORDER BY (t, seq))")

    (see ``cercore.spark.sql.typed``)."""
    from cercore.spark.base.shipping import require_cercore
    from cercore.spark.sql.typed import register_aggregate as register_typed

    require_cercore(spark)
    register_typed(spark, name, query, declaration, events=events, sequence=sequence,
                   exact=exact, **options)


def stop_query(query, timeout: float = 60.0) -> None:
    """Stop a streaming query without the ERRORs Spark logs for a cancelled micro-batch (see
    ``cercore.spark.streaming.lifecycle.stop_query``)."""
    from cercore.spark.streaming.lifecycle import stop_query as stop

    stop(query, timeout)


def late_events(query_or_checkpoint, spark=None) -> int:
    """Late rows a streaming ``find`` counted over its whole life, restarts included, read
    from its checkpoint (see ``cercore.spark.streaming.lifecycle.late_events``)."""
    from cercore.spark.streaming.lifecycle import late_events as count

    return count(query_or_checkpoint, spark)
