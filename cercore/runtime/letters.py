"""Letters: each event's type plus the bit vector of the query's atomic predicates, interned to a
small int (CORE §4.4). Predicates run once per event, vectorised over the batch; the evaluator
only ever sees letters.
"""

from __future__ import annotations

import numpy as np

from cercore.ceql.analysis import AnalysedQuery
from cercore.ceql.printer import format_pred
from cercore.input import Batch
from cercore.predicates import eval_guard, evaluate_leaf

NOT_READ = -1  # letter of an event the query does not read (other stream, skipped)
DENSE_BITS = 16  # key spaces up to 2^16 keys intern through a dense lookup table


class LetterEncoder:
    """Interns (type id, predicate bits) into letters; knows which atoms each letter satisfies."""

    def __init__(self, analysed: AnalysedQuery) -> None:
        self.leaves = analysed.leaves
        self.leaf_texts = [_leaf_text(p) for p in self.leaves]  # identity across queries
        self.atoms = analysed.atoms
        self.negations = analysed.negations
        n_types = max(len(analysed.schema.event_types), 1)
        # type id -> the query reads it (the extra last entry: SKIPPED, never read)
        self.visible = np.zeros(n_types + 1, dtype=bool)
        self.visible[sorted(analysed.visible_types)] = True
        self.letter_of_key: dict[int, int] = {}
        self.atom_masks: list[int] = []  # letter -> bitmask over atom ids
        self.keys: list[int] = []  # letter -> key, for explain and pickling
        self.type_shift = len(self.leaves)
        self.type_bits = int(n_types).bit_length()
        # the key carries the event's stream tag only if some atom is qualified (S>E)
        self.stream_keyed = any(a.streams is not None for a in self.atoms)
        stream_bits = len(analysed.schema.streams).bit_length() + 1 if self.stream_keyed else 0
        self.stream_shift = self.type_shift + self.type_bits
        self.vectorised_keys = self.stream_shift + stream_bits <= 62
        # stream id + 1 -> FROM reads it (entry 0: untagged events, always read)
        self.from_streams = None
        if analysed.from_streams is not None:
            self.from_streams = np.zeros(len(analysed.schema.streams) + 1, dtype=bool)
            self.from_streams[0] = True
            self.from_streams[[s + 1 for s in analysed.from_streams]] = True
        # small key spaces intern through a dense table (key -> letter, -1: not seen yet):
        # one gather per batch instead of a sort
        key_bits = self.stream_shift + stream_bits
        self.dense = np.full(1 << key_bits, -1, dtype=np.int32) if key_bits <= DENSE_BITS \
            else None

    def key_mask(self, key: int) -> int:
        tid = (key >> self.type_shift) & ((1 << self.type_bits) - 1)
        bits = key & ((1 << self.type_shift) - 1)
        stream = (key >> self.stream_shift) - 1  # -1: untagged, in every stream of its type
        mask = 0
        for a in self.atoms:
            if tid in a.types and eval_guard(a.guard, bits) and (
                    a.streams is None or stream < 0 or stream in a.streams):
                mask |= 1 << a.id
        for neg in self.negations:  # NOT(...): satisfied when no branch is
            if not any((mask >> b.id) & 1 for b in neg.branches):
                mask |= 1 << neg.id
        return mask

    def letter(self, key: int) -> int:
        letter = self.letter_of_key.get(key)
        if letter is None:
            letter = self.letter_of_key[key] = len(self.atom_masks)
            self.atom_masks.append(self.key_mask(key))
            self.keys.append(key)
        return letter

    def read_mask(self, batch: Batch) -> np.ndarray:
        """Which events of the batch the query reads: a type it mentions, from a stream in
        its FROM (or untagged)."""
        read = self.visible[batch.type_ids]
        if batch.streams is not None and self.from_streams is not None:
            # FROM: events tagged with another stream never reach the query
            read &= self.from_streams[batch.streams + 1]
        return read

    def encode(self, batch: Batch, shared: dict | None = None) -> np.ndarray:
        """Letters of a batch (int32); NOT_READ for events the query does not read.
        ``shared`` caches leaf results by predicate text for this batch, so queries that run
        together evaluate a predicate they share once."""
        n = batch.n
        letters = np.full(n, NOT_READ, dtype=np.int32)
        read = self.read_mask(batch)
        tagged = batch.streams
        if not read.any():
            return letters
        if shared is None:
            leaf_bits = [evaluate_leaf(p, batch.columns) for p in self.leaves]
        else:
            leaf_bits = []
            for p, text in zip(self.leaves, self.leaf_texts):
                bits = shared.get(text)
                if bits is None:
                    bits = shared[text] = evaluate_leaf(p, batch.columns)
                leaf_bits.append(bits)
        if self.vectorised_keys:
            keys = batch.type_ids.astype(np.int64) << self.type_shift
            for k, bits in enumerate(leaf_bits):
                keys |= bits.astype(np.int64) << k
            if self.stream_keyed and tagged is not None:
                keys |= (tagged.astype(np.int64) + 1) << self.stream_shift
            keys = keys[read]
            if self.dense is not None:
                got = self.dense[keys]
                if (got < 0).any():
                    for u in np.unique(keys[got < 0]).tolist():
                        self.dense[u] = self.letter(u)
                    got = self.dense[keys]
                letters[read] = got
            else:
                uniq, inverse = np.unique(keys, return_inverse=True)
                lut = np.array([self.letter(int(u)) for u in uniq.tolist()], dtype=np.int32)
                letters[read] = lut[inverse]
        else:  # more predicates than fit in 62 bits: Python ints, row by row
            for i in np.flatnonzero(read):
                key = int(batch.type_ids[i]) << self.type_shift
                for k, bits in enumerate(leaf_bits):
                    if bits[i]:
                        key |= 1 << k
                if self.stream_keyed and tagged is not None:
                    key |= (int(tagged[i]) + 1) << self.stream_shift
                letters[i] = self.letter(key)
        return letters

    @property
    def n_letters(self) -> int:
        return len(self.atom_masks)


def _leaf_text(p) -> str:
    """A leaf predicate's text: equal texts evaluate equally on any batch (the leaf reads
    attributes by name, whatever the event type)."""
    try:
        return format_pred(p)
    except ValueError:  # a constant with no CEQL text (NaN): never shared
        return f"#{id(p)}"
