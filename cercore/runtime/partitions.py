"""PARTITION BY: each read event's key -> a partition id, computed per batch.

Ids are handed out in first-seen order and forgotten when the evaluator no longer holds the
partition. Two ways, with the same ids:

* one key attribute of one type (int, bool or string; the common case): every key is an
  int64 code (the value; a string's interned code), and the batch's distinct codes are looked
  up in a sorted array of the known ones -- numpy only, no Python per key;
* composite keys and double keys: a dict from the key tuple, visited once per distinct key of
  the batch (numpy ``unique`` over the key columns finds them).
"""

from __future__ import annotations

import numpy as np

from cercore.input.columns import Columns, StringColumn
from cercore.interface.constants import NO_PARTITION
from cercore.schema import Schema
from cercore.types import AttrType

# every NaN in a key is this one object, so that the dict of keys finds a NaN key again
# (NaN != NaN: two NaN objects would be two keys, and which one an event brings would decide
# its partition -- one per pushed event, one per batch)
_NAN = float("nan")


def _canonical(key: tuple) -> tuple:
    """``key`` with each NaN replaced by ``_NAN`` (all NaNs are one key value)."""
    return tuple(_NAN if v != v else v for v in key)


def key_attributes(schema: Schema, groups) -> dict[str, tuple[str, ...] | None]:
    """PARTITION BY's meaning, one home for CEQL and trend queries: per event type, the
    attribute keying each group -- ``[a], [b]`` is the composite key (a, b); inside one
    bracket, ``[plug, household]`` is one key that types name differently, each type keyed by
    the listed attribute it has (the analyses refuse a type with several) -- or None when the
    type has none of a group's attributes (its events belong to no partition)."""
    out: dict[str, tuple[str, ...] | None] = {}
    for name in schema.type_names:
        et = schema.event_types[name]
        attrs = tuple(next((a for a in g if et.has(a)), None) for g in groups)
        out[name] = None if None in attrs else attrs
    return out


def describe_keys(schema: Schema, groups, types) -> str:
    """``explain``'s line of the key attributes of each event type in ``types`` (names, in
    alphabetical order):
    ``LOAD: plug; ALARM: household`` (``(no key: never matches)`` for a type without one)."""
    keys = key_attributes(schema, groups)
    return "; ".join(f"{t}: " + (", ".join(keys[t]) if keys[t] is not None
                                   else "(no key: in no partition)") for t in sorted(types))


class PartitionIndex:
    """Partition keys -> ids for one query."""

    def __init__(self, schema: Schema, groups: list[tuple[str, ...]]) -> None:
        # per event type id: the attribute keying each group, or None when the type lacks
        # one of them (its events belong to no partition)
        self.plan: list[tuple[str, ...] | None] | None = None
        if groups:
            keys = key_attributes(schema, groups)
            self.plan = [keys[name] for name in schema.type_names]
        self.ids: dict[tuple, int] = {}
        self.next_id = 0
        # the coded way: one group whose key attributes all have one type, int/bool/string
        self.coded = None
        if groups and len(groups) == 1:
            kinds = {schema.attribute_types()[attrs[0]] for attrs in self.plan if attrs}
            if len(kinds) == 1 and next(iter(kinds)) is not AttrType.DOUBLE:
                self.coded = CodedKeys(next(iter(kinds)) is AttrType.STRING)
                self.coded_bools = next(iter(kinds)) is AttrType.BOOL  # (for key_of)
        self._keys: dict[int, tuple] = {}  # id -> key, built on demand (key_of)

    def __len__(self) -> int:
        """Partition keys known (of live partitions, after ``forget``)."""
        return len(self.coded) if self.coded is not None else len(self.ids)

    @property
    def partitioned(self) -> bool:
        return self.plan is not None

    def assign(self, type_ids: np.ndarray, columns: Columns, read: np.ndarray) -> np.ndarray:
        """Partition id of each event (int64): NO_PARTITION where not read, or where a key
        attribute is missing or null; 0 for every read event without PARTITION BY."""
        n = len(type_ids)
        if self.plan is None:
            return np.zeros(n, dtype=np.int64)
        if self.coded is not None:
            return self._assign_coded(type_ids, columns, read)
        pids = np.full(n, NO_PARTITION, dtype=np.int64)
        keys_seen = []  # (first row, key, lut, index in lut) of every distinct key
        fills = []  # (rows, lut, each row's index in lut), filled once ids are known
        for attrs, mask in self._keyed(type_ids, columns, read):
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
            key = _canonical(key)
            pid = ids.get(key)
            if pid is None:
                pid = ids[key] = self.next_id
                self.next_id += 1
            lut[j] = pid
        for rows, lut, inverse in fills:
            pids[rows] = lut[inverse]
        return pids

    def assign_one(self, tid: int, row: dict) -> int:
        """The partition id of one read event (type ``tid``, attributes ``row``): the id
        ``assign`` gives it in a batch."""
        plan = self.plan
        if plan is None:
            return 0
        attrs = plan[tid]
        if attrs is None:
            return NO_PARTITION
        if self.coded is not None:
            v = row.get(attrs[0])
            return NO_PARTITION if v is None else self.coded.id_of(v, self)
        key = _canonical(tuple(row.get(a) for a in attrs))
        if None in key:
            return NO_PARTITION
        pid = self.ids.get(key)
        if pid is None:
            pid = self.ids[key] = self.next_id
            self.next_id += 1
        return pid

    def key_of(self, pid: int) -> tuple:
        """The key of a known partition id: one Python value per PARTITION BY group (what
        trend aggregation reports per group)."""
        key = self._keys.get(pid)
        if key is None:  # ids handed out since the last look-up: one pass over the keys
            if self.plan is None:
                self._keys = {0: ()}
            elif self.coded is not None:
                coded = self.coded
                value = {c: s for s, c in coded.strings.items()}.get if coded.strings \
                    is not None else bool if self.coded_bools else int
                self._keys = {i: (value(c),) for c, i in coded.by_code.items()}
            else:
                self._keys = {i: k for k, i in self.ids.items()}
            key = self._keys[pid]
        return key

    def _keyed(self, type_ids: np.ndarray, columns: Columns, read: np.ndarray):
        """Per key (the attributes keying the groups) of the types read in the batch: the key
        attributes, and the mask of the read events of those types whose key attributes are
        all present. (Types sharing key attributes share one mask: one pass, not one per
        type.)"""
        present = np.bincount(type_ids[read], minlength=len(self.plan))
        by_attrs: dict[tuple[str, ...], list[int]] = {}
        for tid in np.flatnonzero(present).tolist():
            if self.plan[tid] is not None:
                by_attrs.setdefault(self.plan[tid], []).append(tid)
        for attrs, tids in by_attrs.items():
            of_types = np.zeros(len(self.plan) + 1, dtype=bool)  # (last entry: SKIPPED)
            of_types[tids] = True
            mask = read & of_types[type_ids]
            for a in attrs:
                mask &= columns.valid[a]
            yield attrs, mask

    def _assign_coded(self, type_ids: np.ndarray, columns: Columns,
                      read: np.ndarray) -> np.ndarray:
        n = len(type_ids)
        pids = np.full(n, NO_PARTITION, dtype=np.int64)
        codes = np.zeros(n, dtype=np.int64)
        keyed = np.zeros(n, dtype=bool)
        for (a,), mask in self._keyed(type_ids, columns, read):
            codes[mask] = self.coded.codes_of(columns.values[a], mask)
            keyed |= mask
        rows = np.flatnonzero(keyed)
        if rows.size:
            codes = codes[rows]
            self.coded.sync()
            found = self.coded.lookup(codes)  # a binary search per event, in bulk
            miss = found < 0
            if miss.any():
                # new partitions, numbered in the order their first events arrive
                uniq, first, inverse = _distinct(codes[miss])
                order = np.argsort(first, kind="stable")
                fresh = np.empty(len(uniq), dtype=np.int64)
                fresh[order] = self.next_id + np.arange(len(uniq), dtype=np.int64)
                self.next_id += len(uniq)
                self.coded.insert(uniq, fresh)
                found[miss] = fresh[inverse]
            pids[rows] = found
        return pids

    def forget(self, live: set[int] | frozenset[int]) -> None:
        """Drop the keys of partitions the evaluator no longer holds."""
        if self.coded is not None:
            self.coded.keep(live)
        elif self.plan is not None:
            self.ids = {k: v for k, v in self.ids.items() if v in live}


class CodedKeys:
    """Partition keys as int64 codes (ints and bools as themselves, strings interned), kept
    sorted with their ids: a batch's keys are found by binary search, in bulk. One event's
    key is found in a dict (``id_of``); keys it adds reach the sorted arrays in one merge
    before the next batch (``sync``)."""

    def __init__(self, strings: bool) -> None:
        self.keys = np.empty(0, dtype=np.int64)  # sorted
        self.ids = np.empty(0, dtype=np.int64)
        self.strings: dict[str, int] | None = {} if strings else None  # string -> code
        self.next_code = 0
        self.by_code: dict[int, int] = {}  # code -> id, of every key (the arrays' twin)
        self.pending: list[tuple[int, int]] = []  # (code, id) added since the last sync

    # (lowest code, ids of codes lowest-1 .. highest+1, -1 where none) when the codes' range is
    # compact, False when not; None: to build (``lookup``). Rebuilt, not pickled (and absent
    # from an engine pickled before it existed: the class's None)
    _table: tuple[int, np.ndarray] | bool | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_table": None}

    def __len__(self) -> int:
        return len(self.by_code)

    def id_of(self, value, index: PartitionIndex) -> int:
        """The id of one key value, a new one (``index.next_id``) if it is new."""
        code = self._intern(value) if self.strings is not None else int(value)
        pid = self.by_code.get(code)
        if pid is None:
            pid = self.by_code[code] = index.next_id
            index.next_id += 1
            self.pending.append((code, pid))
        return pid

    def sync(self) -> None:
        """Merge the keys added one at a time into the sorted arrays."""
        if self.pending:
            codes, ids = zip(*sorted(self.pending))
            self.pending = []
            self.insert(np.array(codes, dtype=np.int64), np.array(ids, dtype=np.int64))

    def codes_of(self, column, mask: np.ndarray) -> np.ndarray:
        """The codes of ``column`` at ``mask``."""
        if self.strings is None:
            return column[mask].astype(np.int64)
        # intern each distinct string of the batch once
        lut = np.fromiter((self._intern(v) for v in column.dictionary), dtype=np.int64,
                          count=len(column.dictionary))
        return lut[column.codes[mask]]

    def _intern(self, s: str) -> int:
        code = self.strings.get(s)
        if code is None:
            code = self.strings[s] = self.next_code
            self.next_code += 1
        return code

    def lookup(self, codes: np.ndarray) -> np.ndarray:
        """Ids of ``codes`` (-1 where unknown): one gather from a table over the known codes'
        range when it is compact (interned strings, ids, bools), else a binary search."""
        if not len(self.keys):
            return np.full(len(codes), -1, dtype=np.int64)
        if self._table is None:
            self._table = _dense_table(self.keys, self.ids)
        if self._table is not False:
            lo, table = self._table
            # (codes out of the range land on the table's -1 ends; a difference that wraps
            # around int64 is beyond them too)
            return table[np.clip(codes - lo, -1, len(table) - 2) + 1]
        at = np.minimum(np.searchsorted(self.keys, codes), len(self.keys) - 1)
        return np.where(self.keys[at] == codes, self.ids[at], -1)

    def insert(self, codes: np.ndarray, ids: np.ndarray) -> None:
        """Add new distinct ``codes`` (sorted) with their ``ids``."""
        at = np.searchsorted(self.keys, codes)
        self.keys = np.insert(self.keys, at, codes)
        self.ids = np.insert(self.ids, at, ids)
        self.by_code.update(zip(codes.tolist(), ids.tolist()))
        self._table = None

    def keep(self, live) -> None:
        """Forget the keys of partitions not in ``live`` (and strings no key uses)."""
        self.sync()
        alive = np.isin(self.ids, np.fromiter(live, dtype=np.int64, count=len(live)))
        self.keys, self.ids = self.keys[alive], self.ids[alive]
        self._table = None
        self.by_code = dict(zip(self.keys.tolist(), self.ids.tolist()))
        if self.strings is not None and len(self.strings) > len(self.keys):
            used = set(self.keys.tolist())
            self.strings = {s: c for s, c in self.strings.items() if c in used}


# a table over a range of codes is used when the range holds at most this many slots per code
# in it, plus ``_SPARE_SLOTS`` (a binary search or a sort otherwise)
_SLOTS_PER_CODE, _SPARE_SLOTS = 4, 4096


def _compact(lo: int, hi: int, n: int) -> bool:
    """Whether codes ``lo .. hi``, ``n`` of them, are few enough for a table over the range."""
    return hi - lo < _SLOTS_PER_CODE * n + _SPARE_SLOTS


def _dense_table(keys: np.ndarray, ids: np.ndarray) -> tuple[int, np.ndarray] | bool:
    """``CodedKeys._table`` of the sorted ``keys`` and their ``ids``."""
    lo, hi = int(keys[0]), int(keys[-1])
    if not _compact(lo, hi, len(keys)):
        return False
    table = np.full(hi - lo + 3, -1, dtype=np.int64)
    table[keys - lo + 1] = ids
    return lo, table


def _distinct(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(codes, return_index=True, return_inverse=True)``: the sorted distinct codes,
    where each first occurs, each code's index into them -- over a table of the codes' range
    when it is compact (no sort: a batch's new keys are few distinct values, many events)."""
    lo, hi = int(codes.min()), int(codes.max())
    if not _compact(lo, hi, len(codes)):
        return np.unique(codes, return_index=True, return_inverse=True)
    offsets = codes - lo
    first = np.full(hi - lo + 1, len(codes), dtype=np.int64)
    np.minimum.at(first, offsets, np.arange(len(codes), dtype=np.int64))
    present = np.flatnonzero(first < len(codes))
    rank = np.empty(hi - lo + 1, dtype=np.int64)
    rank[present] = np.arange(len(present), dtype=np.int64)
    return present + lo, first[present], rank[offsets]


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
