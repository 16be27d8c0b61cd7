"""CEQL queries over DataFrames: ``find`` and ``explain`` (``front``; a streaming DataFrame is
handed to ``cercore.spark.streaming``), the batch jobs (``batch``) and the check whether the
input is in event order already (``read_order``)."""

from cercore.spark.ceql.front import explain, find, output_schema

__all__ = ["explain", "find", "output_schema"]
