"""PARTITION BY: each read event's key -> a partition id, computed per batch.

Keys are resolved once per distinct key of a batch (numpy ``unique`` over the key columns, or
over a string column's dictionary codes), never once per event. Ids are handed out in
first-seen order and forgotten when the evaluator no longer holds the partition.
"""

from __future__ import annotations

import numpy as np

from cercore.input.columns import Columns, StringColumn
from cercore.schema import Schema

NO_PARTITION = -1


class PartitionIndex:
    """Partition keys -> ids for one query."""

    def __init__(self, schema: Schema, groups: list[tuple[str, ...]]) -> None:
        # per event type id: the attribute keying each group, or None when the type lacks
        # one of them (its events belong to no partition)
        self.plan: list[tuple[str, ...] | None] | None = None
        if groups:
            self.plan = []
            for name in schema.type_names:
                et = schema.event_types[name]
                attrs = tuple(next((a for a in g if et.has(a)), None) for g in groups)
                self.plan.append(None if None in attrs else attrs)
        self.ids: dict[tuple, int] = {}
        self.next_id = 0

    @property
    def partitioned(self) -> bool:
        return self.plan is not None

    def assign(self, type_ids: np.ndarray, columns: Columns, read: np.ndarray) -> np.ndarray:
        """Partition id of each event (int64): NO_PARTITION where not read, or where a key
        attribute is missing or null; 0 for every read event without PARTITION BY."""
        n = len(type_ids)
        if self.plan is None:
            return np.zeros(n, dtype=np.int64)
        pids = np.full(n, NO_PARTITION, dtype=np.int64)
        keys_seen = []  # (first row, key, lut, index in lut) of every distinct key
        fills = []  # (rows, lut, each row's index in lut), filled once ids are known
        for tid in np.unique(type_ids[read]).tolist():
            attrs = self.plan[tid]
            if attrs is None:
                continue
            mask = read & (type_ids == tid)
            for a in attrs:
                mask &= columns.valid[a]
            rows = np.flatnonzero(mask)
            if not rows.size:
                continue
            keys, first, inverse = _distinct_keys([columns.values[a] for a in attrs], rows)
            lut = np.empty(len(keys), dtype=np.int64)
            keys_seen.extend((int(rows[f]), key, lut, j)
                             for j, (key, f) in enumerate(zip(keys, first.tolist())))
            fills.append((rows, lut, inverse))
        ids = self.ids
        keys_seen.sort(key=lambda x: x[0])  # new ids in first-seen order across types
        for _, key, lut, j in keys_seen:
            pid = ids.get(key)
            if pid is None:
                pid = ids[key] = self.next_id
                self.next_id += 1
            lut[j] = pid
        for rows, lut, inverse in fills:
            pids[rows] = lut[inverse]
        return pids

    def forget(self, live: set[int] | frozenset[int]) -> None:
        """Drop the keys of partitions the evaluator no longer holds."""
        if self.plan is not None:
            self.ids = {k: v for k, v in self.ids.items() if v in live}


def _distinct_keys(columns: list, rows: np.ndarray) -> tuple[list[tuple], np.ndarray, np.ndarray]:
    """The distinct key tuples of ``rows`` (as Python values), the row index (into ``rows``)
    where each first occurs, and each row's index into them."""
    combined = None
    parts = []
    for col in columns:
        if isinstance(col, StringColumn):
            uniq, inverse = np.unique(col.codes[rows], return_inverse=True)
            values = col.dictionary[uniq].tolist()
        else:
            uniq, inverse = np.unique(col[rows], return_inverse=True)
            values = uniq.tolist()
        parts.append((values, inverse))
        inverse = inverse.astype(np.int64)
        combined = inverse if combined is None else combined * len(uniq) + inverse
        if combined is not inverse:  # keep the combined code dense (no overflow)
            combined = np.unique(combined, return_inverse=True)[1].astype(np.int64)
    uniq, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    keys = [tuple(values[inv[f]] for values, inv in parts) for f in first.tolist()]
    return keys, first, inverse
