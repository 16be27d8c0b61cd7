"""Letters: each event's type plus the bit vector of the query's atomic predicates, interned to a
small int (CORE §4.4). Predicates run once per event, vectorised over the batch; the evaluator
only ever sees letters.
"""

from __future__ import annotations

import numpy as np

from cercore.ceql.analysis import AnalysedQuery
from cercore.predicates import eval_guard, evaluate_leaf
from cercore.runtime.events import Batch

NOT_READ = -1  # letter of an event the query does not read (other stream, skipped)


class LetterEncoder:
    """Interns (type id, predicate bits) into letters; knows which atoms each letter satisfies."""

    def __init__(self, analysed: AnalysedQuery) -> None:
        self.leaves = analysed.leaves
        self.atoms = analysed.atoms
        self.negations = analysed.negations
        self.visible = np.array(sorted(analysed.visible_types), dtype=np.int32)
        self.letter_of_key: dict[int, int] = {}
        self.atom_masks: list[int] = []  # letter -> bitmask over atom ids
        self.keys: list[int] = []  # letter -> key, for explain and pickling
        n_types = max(len(analysed.schema.event_types), 1)
        self.type_shift = len(self.leaves)
        self.type_bits = int(n_types).bit_length()
        # the key carries the event's stream tag only if some atom is qualified (S>E)
        self.stream_keyed = any(a.streams is not None for a in self.atoms)
        stream_bits = len(analysed.schema.streams).bit_length() + 1 if self.stream_keyed else 0
        self.stream_shift = self.type_shift + self.type_bits
        self.vectorised_keys = self.stream_shift + stream_bits <= 62
        self.from_streams = (None if analysed.from_streams is None
                             else np.array(sorted(analysed.from_streams), dtype=np.int16))

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

    def encode(self, batch: Batch) -> np.ndarray:
        """Letters of a batch (int32); NOT_READ for events the query does not read."""
        n = batch.n
        letters = np.full(n, NOT_READ, dtype=np.int32)
        read = np.isin(batch.type_ids, self.visible)
        tagged = batch.streams
        if tagged is not None and self.from_streams is not None:
            # FROM: events tagged with another stream never reach the query
            read &= (tagged < 0) | np.isin(tagged, self.from_streams)
        if not read.any():
            return letters
        leaf_bits = [evaluate_leaf(p, batch.columns) for p in self.leaves]
        if self.vectorised_keys:
            keys = batch.type_ids.astype(np.int64) << self.type_shift
            for k, bits in enumerate(leaf_bits):
                keys |= bits.astype(np.int64) << k
            if self.stream_keyed and tagged is not None:
                keys |= (tagged.astype(np.int64) + 1) << self.stream_shift
            uniq, inverse = np.unique(keys[read], return_inverse=True)
            lut = np.array([self.letter(int(u)) for u in uniq], dtype=np.int32)
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
