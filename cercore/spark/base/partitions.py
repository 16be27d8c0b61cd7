"""How many Spark partitions the engine runs of a plan get, and which partition each T-CER slice
lands in, and the Spark columns that put rows there (``into_partitions``, ``slices_of``; they
import pyspark when called: the rest is pure Python, tested anywhere).

Spark's own default, ``spark.sql.shuffle.partitions`` (200 unless set), is never used: a
do-nothing ``mapInArrow`` over 200 partitions costs seconds even when 190 of them are empty.
The count follows the work instead: at most ``PER_CORE`` partitions per core
(Spark's ``defaultParallelism``, read from the session's conf by
``cercore.spark.base.session.parallelism``, so Spark Connect too) — enough for the scheduler to even
out runs of unequal size — and never more than there are runs (keys or slices).

T-CER slices are numbered k = first, first + 1, ...; slice k goes to partition
(k − first) mod n, so every partition holds the same number of slices (± 1). Spark assigns a row
to partition pmod(murmur3(v, seed 42), n) of the value v it is repartitioned by, so each
partition j gets a value ``bucket_values(n)[j]`` that hashes to j (the same hash
``spark_hash_int`` computes here). If Spark ever hashed differently, only the balance would
suffer: every row of a slice still has one value, so each slice stays whole in one partition.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

from cercore.spark.base.plan import SINGLE
from cercore.spark.base.session import parallelism as session_parallelism

PER_CORE = 3  # partitions per core when there are more runs than that

_M32 = 0xFFFFFFFF


def partition_cap(parallelism: int) -> int:
    """The most partitions worth having on ``parallelism`` cores: PER_CORE × parallelism."""
    return PER_CORE * max(int(parallelism), 1)


def partition_count(kind: str, parallelism: int, runs: int | None = None) -> int:
    """Partitions for a plan of ``kind`` on a cluster of ``parallelism`` cores when there are
    ``runs`` engine runs (keys or slices; None: not known): 1 for the single pass, else
    min(runs, PER_CORE × parallelism), at least 1."""
    if kind == SINGLE:
        return 1
    if runs is None:
        return partition_cap(parallelism)
    return max(1, min(int(runs), partition_cap(parallelism)))


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def spark_hash_int(value: int, seed: int = 42) -> int:
    """Spark's ``hash()`` of a 32-bit integer (Murmur3_x86_32.hashInt), as a signed int."""
    k1 = (value & _M32) * 0xCC9E2D51 & _M32
    k1 = _rotl(k1, 15) * 0x1B873593 & _M32
    h1 = (seed & _M32) ^ k1
    h1 = (_rotl(h1, 13) * 5 + 0xE6546B64) & _M32
    h1 ^= 4  # length in bytes
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _M32
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _M32
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def hash_partition(value: int, n: int) -> int:
    """The partition (of ``n``) ``repartition(n, col)`` sends an integer ``value`` to."""
    return spark_hash_int(value) % n  # Python's % is Spark's pmod for n > 0


def bucket_values(n: int) -> list[int]:
    """For each partition j < n, the smallest integer ≥ 0 that Spark's hash partitioning over
    ``n`` partitions sends to j."""
    found: dict[int, int] = {}
    v = 0
    while len(found) < n:
        found.setdefault(hash_partition(v, n), v)
        v += 1
    return [found[j] for j in range(n)]


SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"


@contextmanager
def state_partitions(spark, n: int | None = None):
    """Streaming queries started inside this block keep their state in ``n`` partitions
    (default PER_CORE × the session's ``parallelism``), not in ``spark.sql.shuffle.partitions``::

        with cercore.spark.state_partitions(spark):
            query = find(stream_df, text, ...).writeStream....start()

    A stateful operator's partition count is the session's ``spark.sql.shuffle.partitions``
    when the query first starts; Spark then keeps it in the checkpoint (a restart uses the
    checkpoint's number, whatever the session says), and a ``repartition`` before the operator
    would only add a second shuffle. So the setting is changed for ``start()`` and restored
    afterwards (the query has copied it by then). Yields ``n``."""
    if n is None:
        n = partition_cap(session_parallelism(spark))
    if int(n) < 1:
        raise ValueError("the number of state partitions must be a positive integer")
    before = spark.conf.getAll.get(SHUFFLE_PARTITIONS)  # None: not set, Spark's default
    spark.conf.set(SHUFFLE_PARTITIONS, str(int(n)))
    try:
        yield int(n)
    finally:
        if before is None:
            spark.conf.unset(SHUFFLE_PARTITIONS)
        else:
            spark.conf.set(SHUFFLE_PARTITIONS, before)


def warn_default_state_partitions(spark, what: str) -> None:
    """Warn when a streaming ``what`` would freeze Spark's default 200 state partitions into
    its checkpoint on a cluster that needs far fewer (nothing when the user set the number)."""
    if SHUFFLE_PARTITIONS in spark.conf.getAll:
        return
    n = int(spark.conf.get(SHUFFLE_PARTITIONS))
    cores = session_parallelism(spark)
    if n > partition_cap(cores):
        warnings.warn(
            f"cercore.spark: streaming {what} keeps its state in spark.sql.shuffle.partitions = "
            f"{n} partitions (Spark's default, never set here), a number its checkpoint keeps "
            f"from the first start; {cores} core(s) need about "
            f"{partition_cap(cores)}. Start the query inside "
            "`with cercore.spark.state_partitions(spark):` (or set the number yourself)",
            stacklevel=3)


def into_partitions(df, n: int, index):
    """``df`` in ``n`` partitions, the row of ``index`` (an int column, 0 ≤ index < n) in
    partition ``index``: by a value Spark's hash sends there (``bucket_values``)."""
    from pyspark.sql import functions as F

    values = F.array(*[F.lit(v) for v in bucket_values(n)])
    return df.repartition(n, F.element_at(values, index.cast("int") + F.lit(1)))


def slices_of(coord: str, size: int, advance: int):
    """One row per T-CER slice k holding the row, slices [k·WA, k·WA + WS) of the long column
    ``coord`` (WS = ``size``, WA = ``advance``): k·WA > c − WS and k·WA ≤ c."""
    from pyspark.sql import functions as F

    first = F.expr(floor_div(f"{coord} - {size}", advance) + " + 1")
    return F.explode(F.sequence(first, F.expr(floor_div(coord, advance))))


def floor_div(sql: str, divisor: int) -> str:
    """SQL for ⌊sql / divisor⌋ in exact long arithmetic (no doubles: times may be
    nanoseconds); ``sql`` is a SQL expression (column names quoted where they need it)."""
    return f"((({sql}) - pmod({sql}, {int(divisor)}L)) div {int(divisor)}L)"
