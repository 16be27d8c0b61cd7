"""A streaming ``find``: the driver's wiring (``run``: ``transformWithStateInPandas``, the
watermark, the state layout), the stateful processor (``processor``) and its columnar rows
(``rows``), and a query's life after it starts (``lifecycle``: ``late_events``,
``stop_query``). pyspark is imported with these modules: the room is loaded when used."""
