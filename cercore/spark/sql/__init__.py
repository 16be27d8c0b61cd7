"""CER in Spark SQL: the table functions ``cer_find`` and ``cer_aggregate`` (``functions``;
registered by ``cercore.spark.register``, which loads this room when called)."""
