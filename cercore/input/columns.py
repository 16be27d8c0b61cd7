"""A batch of events as columns, the form every engine reads.

Numeric and bool attributes are numpy arrays (int64 / float64 / bool). String attributes are
dictionary-encoded (``StringColumn``): int32 codes into a small array of distinct strings, so
a predicate on a string runs once per distinct value and the per-event work is an integer
lookup. Strings become Python objects only when an event is materialised for output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

_EMPTY = np.array([""], dtype=object)


class StringColumn:
    """A string column as ``codes`` (int32, one per event) into ``dictionary`` (object array of
    distinct strings, never empty). A null's code is arbitrary: the column's validity mask
    tells nulls apart."""

    __slots__ = ("codes", "dictionary")

    def __init__(self, codes: np.ndarray, dictionary: np.ndarray) -> None:
        self.codes = codes
        self.dictionary = dictionary if len(dictionary) else _EMPTY

    @classmethod
    def encode(cls, values: list) -> StringColumn:
        """Dictionary-encode a list of Python strings (None allowed: a null)."""
        index: dict[Any, int] = {}
        setdefault = index.setdefault
        codes = np.fromiter((setdefault(v, len(index)) for v in values), dtype=np.int32,
                            count=len(values))
        dictionary = np.empty(len(index), dtype=object)
        dictionary[:] = ["" if v is None else v for v in index]
        return cls(codes, dictionary)

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, k):
        if isinstance(k, (int, np.integer)):
            return self.dictionary[self.codes[k]]
        return StringColumn(self.codes[k], self.dictionary)

    def decode(self) -> np.ndarray:
        """The strings as an object array (slow path: attribute-to-attribute comparisons)."""
        return self.dictionary[self.codes]

    def tolist(self) -> list[str]:
        return self.dictionary[self.codes].tolist()

    def map(self, fn: Callable[[str], bool]) -> np.ndarray:
        """``fn`` over every event's string, evaluated once per distinct value."""
        lut = np.fromiter((bool(fn(s)) for s in self.dictionary), dtype=bool,
                          count=len(self.dictionary))
        return lut[self.codes]


@dataclass
class Columns:
    """A batch of events as columns: ``values[attr]`` (int64 / float64 / bool arrays, or a
    ``StringColumn``; nulls hold a placeholder) and ``valid[attr]`` (False where the attribute
    is missing or null)."""

    n: int
    values: dict[str, np.ndarray | StringColumn]
    valid: dict[str, np.ndarray]

    def head(self, n: int) -> Columns:
        """The first ``n`` events."""
        return Columns(n, {a: v[:n] for a, v in self.values.items()},
                       {a: v[:n] for a, v in self.valid.items()})

    def tail(self, k: int) -> Columns:
        """The events from the ``k``-th on."""
        return Columns(self.n - k, {a: v[k:] for a, v in self.values.items()},
                       {a: v[k:] for a, v in self.valid.items()})
