"""The attribute values that predicates between events read, by stream position.

Checking ``b.price > s.price`` while the enumerator walks the tECS (cercore.runtime.
event_predicates) reads one attribute of one event per term, millions of times: a lookup in
the event store (entries, bisection, an Event per read) would cost more than the check. This
is a position-indexed copy of just those attributes, fed where the store is fed (a batch's
columns, one pushed event's validated row) and cut where the store is pruned, so memory stays
bounded by the window:

- ``lists[a]``: Python values (None for null or an event without the attribute) -- what the
  scalar closures of the predicate layer read;
- ``numbers[a]`` / ``valid[a]``: the same values as a typed array and a uint8 validity mask
  -- what the Cython kernel reads without the GIL: int64 or float64 for a number, an int64
  code for a string (equal strings, equal codes: ``codes[a]`` interns the live ones, and is
  rebuilt from them when old positions go, so it stays bounded by the window). Kept only
  when ``typed`` is set (the Cython backend).

Index ``i`` holds position ``base + i``; positions with no stored event hold null.
"""

from __future__ import annotations

import numpy as np

from cercore.input import Batch
from cercore.input.columns import StringColumn
from cercore.types import AttrType

_DTYPES = {AttrType.INT: np.int64, AttrType.DOUBLE: np.float64, AttrType.STRING: np.int64}


class TermValues:
    """Values of ``attributes`` by stream position."""

    def __init__(self, types: dict[str, AttrType], attributes: list[str],
                 typed: bool) -> None:
        self.attributes = list(attributes)
        self.types = {a: types[a] for a in self.attributes}
        self.base = 0  # the position of index 0
        self.lists: dict[str, list] = {a: [] for a in self.attributes}
        self.typed = typed
        numeric = [a for a in self.attributes if self.types[a] in _DTYPES] if typed else []
        self.numbers = {a: np.zeros(16, dtype=_DTYPES[self.types[a]]) for a in numeric}
        self.valid = {a: np.zeros(16, dtype=np.uint8) for a in numeric}
        # string attribute -> {string: code} of the strings held (typed only)
        self.codes: dict[str, dict[str, int]] = {
            a: {} for a in numeric if self.types[a] is AttrType.STRING}
        self.size = 0  # entries in use (the typed arrays are capacity-doubled)
        self.version = 0  # changes when the typed arrays move (the kernel's pointers)

    def __len__(self) -> int:
        return self.size

    @property
    def end(self) -> int:
        """The position after the last one held."""
        return self.base + self.size

    def _pad_to(self, position: int) -> None:
        """Nulls for the positions before ``position`` that nothing stored."""
        if self.size == 0 and self.base < position:
            self.base = position  # nothing held yet: start here
            return
        gap = position - self.end
        if gap > 0:
            for values in self.lists.values():
                values.extend([None] * gap)
            self._grow(gap)
            for a in self.numbers:
                self.valid[a][self.size - gap:self.size] = 0

    def _grow(self, extra: int) -> None:
        self.size += extra
        for a, arr in self.numbers.items():
            if self.size > len(arr):
                self.version += 1
                cap = max(2 * len(arr), self.size)
                grown = np.zeros(cap, dtype=arr.dtype)
                grown[:len(arr)] = arr
                self.numbers[a] = grown
                valid = np.zeros(cap, dtype=np.uint8)
                valid[:len(arr)] = self.valid[a]
                self.valid[a] = valid

    def add_batch(self, batch: Batch) -> None:
        """Every event of a batch (its positions follow what is held)."""
        self._pad_to(batch.first_position)
        n = batch.n
        at = self.size
        cols = batch.columns
        self._grow(n)
        for a in self.attributes:
            values, ok = cols.values[a], cols.valid[a]
            column = values
            if isinstance(values, StringColumn):
                values = values.decode()
            items = np.asarray(values)[:n].tolist()
            if not ok[:n].all():
                items = [v if k else None for v, k in zip(items, ok[:n].tolist())]
            self.lists[a].extend(items)
            if a in self.numbers:
                if a in self.codes:
                    self.numbers[a][at:at + n] = self._string_codes(a, column, items, n)
                else:
                    self.numbers[a][at:at + n] = np.asarray(values)[:n]
                self.valid[a][at:at + n] = ok[:n]

    def add_row(self, position: int, row: dict) -> None:
        """One event evaluated on its own."""
        self._pad_to(position)
        at = self.size
        self._grow(1)
        for a in self.attributes:
            v = row.get(a)
            self.lists[a].append(v)
            if a in self.numbers:
                self.valid[a][at] = v is not None
                if v is not None:
                    self.numbers[a][at] = self._intern(a, v) if a in self.codes else v

    def _intern(self, attribute: str, s: str) -> int:
        codes = self.codes[attribute]
        code = codes.get(s)
        if code is None:
            code = codes[s] = len(codes)
        return code

    def _string_codes(self, attribute: str, column, items: list, n: int) -> np.ndarray:
        """The codes of a batch's strings (a dictionary-encoded column: once per distinct
        string)."""
        if isinstance(column, StringColumn):
            lut = np.fromiter((self._intern(attribute, v) for v in column.dictionary.tolist()),
                              dtype=np.int64, count=len(column.dictionary))
            return lut[np.asarray(column.codes)[:n]] if len(lut) else np.zeros(n, np.int64)
        return np.fromiter((0 if v is None else self._intern(attribute, v) for v in items),
                           dtype=np.int64, count=n)

    def value(self, attribute: str, position: int):
        """The attribute of the event at ``position`` (None: null)."""
        return self.lists[attribute][position - self.base]

    def drop_before(self, position: int) -> None:
        """Forget the positions before ``position`` (no complex event can reach them): done
        once the dead prefix is as long as what lives, so the cost per event stays O(1)."""
        dead = min(position - self.base, self.size)
        if dead <= 0 or 2 * dead < self.size:
            return
        for a in self.attributes:
            del self.lists[a][:dead]
        for a in self.numbers:
            live = self.size - dead
            self.numbers[a][:live] = self.numbers[a][dead:self.size].copy()
            self.valid[a][:live] = self.valid[a][dead:self.size].copy()
        self.size -= dead
        self.base += dead
        self.version += 1
        for a, codes in self.codes.items():  # forget the strings only dead positions held
            codes.clear()
            self.numbers[a][:self.size] = [0 if v is None else self._intern(a, v)
                                           for v in self.lists[a]]
