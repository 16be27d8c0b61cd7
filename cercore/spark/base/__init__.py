"""What every room of ``cercore.spark`` builds on (no room above is imported here):

* ``session``: what cercore asks of a SparkSession, classic or Spark Connect;
* ``errors``: ``cercore_errors``, a worker's cercore error given back as itself;
* ``frames``: a user's DataFrame -> the hidden columns every plan runs on, the inferred schema,
  the front doors' option checks (``spark_options``, ``require_watermark``);
* ``hidden``: each hidden column's meaning, rendered as SQL and in Arrow (the typed SQL);
* ``job``: ``EngineJob``, what the workers receive, and the worker side of a CEQL run;
* ``plan``: how a CEQL query runs (T-CER slices, one engine per key, one ordered pass, in
  place over input in event order);
* ``partitions``: how many Spark partitions, which slice lands where, slice columns;
* ``match_id``: a complex event's ``match_id`` (Spark's ``xxhash64``, computed in Python);
* ``columns``: predicates as Spark columns, with cercore's meaning (imports pyspark).
"""
