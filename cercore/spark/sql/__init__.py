"""CER in Spark SQL: the table functions ``cer_find`` and ``cer_aggregate`` (``functions``) and
the typed ``cer_find`` (``typed``: an Arrow UDTF for tables of known columns); registered by
``cercore.spark.register``, which loads this room when called."""
