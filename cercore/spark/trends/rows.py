"""Trend aggregation result rows as Spark sees them: the row schema (exact integers as
``decimal(38,0)`` or text) and the conversion of one exact integer, shared by the batch
(``cercore.spark.trends.batch``) and streaming (``cercore.spark.trends.streaming``) paths."""

from __future__ import annotations

import decimal

from cercore.errors import CercoreError
from cercore.trends.query import CompiledTrendQuery
from cercore.types import AttrType


def _spark_types():
    from pyspark.sql import types as T

    return {AttrType.INT: T.LongType(), AttrType.DOUBLE: T.DoubleType(),
            AttrType.STRING: T.StringType(), AttrType.BOOL: T.BooleanType()}


def row_schema(query: CompiledTrendQuery, exact: str):
    """(the Spark schema of a result row, the names of its exact-integer columns)."""
    from pyspark.sql import types as T

    plan = query.plan
    types = plan.schema.attribute_types()
    spark_types = _spark_types()
    exact_type = T.DecimalType(38, 0) if exact == "decimal" else T.StringType()
    fields, exact_columns = [], []
    if plan.window is not None:
        fields += [("window_start", T.LongType()), ("window_end", T.LongType())]
    fields += [(a, spark_types[types[a]]) for a in plan.group_by]
    for agg, slot, _ in plan.aggregates:
        kind = "cnt" if slot == 0 else plan.fields[slot - 1].kind
        if agg.func == "AVG":
            fields.append((str(agg), T.DoubleType()))
        elif kind == "cnt" or (kind == "sum" and types[agg.attr] is AttrType.INT):
            fields.append((str(agg), exact_type))
            exact_columns.append(str(agg))
        elif kind == "sum":
            fields.append((str(agg), T.DoubleType()))
        else:
            fields.append((str(agg), spark_types[types[agg.attr]]))
    return T.StructType([T.StructField(n, t, nullable=True) for n, t in fields]), exact_columns


def exact_value(column: str, v: int, exact: str):
    """An exact integer as Spark gets it: ``decimal(38,0)`` (an error beyond 38 digits) or
    its decimal text."""
    if exact == "string":
        return str(v)
    if abs(v) >= 10 ** 38:
        raise CercoreError(f"{column} = {v} has more than 38 digits, beyond Spark's "
                           "decimal(38,0): use aggregate(..., exact='string')")
    return decimal.Decimal(v)
