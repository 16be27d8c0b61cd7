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
        self.vectorised_keys = self.type_shift + int(n_types).bit_length() <= 62

    def key_mask(self, key: int) -> int:
        tid, bits = key >> self.type_shift, key & ((1 << self.type_shift) - 1)
        mask = 0
        for a in self.atoms:
            if tid in a.types and eval_guard(a.guard, bits):
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
        if not read.any():
            return letters
        leaf_bits = [evaluate_leaf(p, batch.columns) for p in self.leaves]
        if self.vectorised_keys:
            keys = batch.type_ids.astype(np.int64) << self.type_shift
            for k, bits in enumerate(leaf_bits):
                keys |= bits.astype(np.int64) << k
            uniq, inverse = np.unique(keys[read], return_inverse=True)
            lut = np.array([self.letter(int(u)) for u in uniq], dtype=np.int32)
            letters[read] = lut[inverse]
        else:  # more predicates than fit in 62 bits: Python ints, row by row
            for i in np.flatnonzero(read):
                key = int(batch.type_ids[i]) << self.type_shift
                for k, bits in enumerate(leaf_bits):
                    if bits[i]:
                        key |= 1 << k
                letters[i] = self.letter(key)
        return letters

    @property
    def n_letters(self) -> int:
        return len(self.atom_masks)
