"""A stateful processor that does nothing: the floor of a ``transformWithStateInPandas``
streaming query (``bench/bench_spark_streaming.py`` runs it beside ``find`` on the same input).
Its own module so Spark's Python workers can import it (a class in ``__main__`` cannot be
unpickled there)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql.streaming import StatefulProcessor


class EmptyProcessor(StatefulProcessor):
    """Reads each key's rows (Spark converts them to pandas either way) and emits nothing."""

    def init(self, handle) -> None:
        self.handle = handle

    def handleInputRows(self, key, rows, timerValues) -> Iterator[Any]:
        for _ in rows:
            pass
        return iter(())

    def close(self) -> None:
        pass
