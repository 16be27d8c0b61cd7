"""Letters: each event's type plus the bit vector of the query's atomic predicates, interned to a
small int (CORE §4.4). Predicates run once per event, vectorised over the batch; the evaluator
only ever sees letters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cercore.ceql.analysis import AnalysedQuery
from cercore.ceql.guards import eval_guard
from cercore.ceql.normal import has_contiguity
from cercore.ceql.printer import format_pred
from cercore.input import Batch, ReadFilter
from cercore.input.columns import Columns, StringColumn
from cercore.interface.constants import NO_PARTITION, NOT_READ
from cercore.interface.letters import LettersKernel
from cercore.predicates import attributes_read, evaluate_leaf, scalar_leaf
from cercore.schema import Schema
from cercore.types import AttrType

DENSE_BITS = 16  # key spaces up to 2^16 keys intern through a dense lookup table
STRING_BITS_CACHE = 1 << 16  # distinct strings whose leaf bits one record-path cache keeps


@dataclass(frozen=True)
class Alphabet:
    """What a query's letters are made of: its atomic predicates (``leaves``), its atoms
    (each an id, the event types it reads and its guard over the leaves), the types and
    streams it reads, the labels satisfied when no branch is (NOT, ABSENT) and the bits of the
    absence spans' atoms. A CEQL query's (``of_query``) or a trend query's (one atom per
    variable, ``cercore.trends.engine``)."""

    schema: Schema
    leaves: list
    atoms: list
    visible_types: frozenset[int]
    from_streams: frozenset[int] | None
    negations: tuple = ()
    absence_bits: int = 0

    @classmethod
    def of_query(cls, analysed: AnalysedQuery) -> Alphabet:
        """The alphabet of an analysed CEQL query."""
        # the bits an inert letter may still have: an event that satisfies no atom satisfies
        # every absence label, and only loops in the gaps they label (as in any gap); the
        # atoms of a deadline's ψ label no transition (the engine reads them, not the automaton)
        spans = (analysed.deadline, analysed.lookback)
        absence_bits = sum(1 << n.id for n in analysed.absences) | sum(
            span.psi_bits for span in spans if span is not None)
        return cls(analysed.schema, analysed.leaves, analysed.atoms, analysed.visible_types,
                   analysed.from_streams, tuple(analysed.negations + analysed.absences),
                   absence_bits)


class LetterEncoder:
    """Interns (type id, predicate bits) into letters; knows which atoms each letter satisfies.
    The batch passes run the backend's letters kernel when given one (``kernel``: the same
    keys and letters as the numpy code here, the reference)."""

    def __init__(self, alphabet: Alphabet) -> None:
        self.leaves = alphabet.leaves
        self.leaf_texts = [_leaf_text(p) for p in self.leaves]  # identity across queries
        # leaves that read one string attribute only run once per distinct string of a batch
        # (grouped by attribute); the others run over the events
        types = alphabet.schema.attribute_types()
        groups: dict[str, list[int]] = {}
        self.other_leaves: list[int] = []
        for k, p in enumerate(self.leaves):
            names = attributes_read(p)
            if len(names) == 1 and types.get(next(iter(names))) is AttrType.STRING:
                groups.setdefault(next(iter(names)), []).append(k)
            else:
                self.other_leaves.append(k)
        self.string_groups = sorted(groups.items())
        self.atoms = alphabet.atoms
        # NOT(...) and ABSENT(...) labels: satisfied when no branch is
        self.negations = list(alphabet.negations)
        self.absence_bits = alphabet.absence_bits
        n_types = max(len(alphabet.schema.event_types), 1)
        self.reads = ReadFilter(n_types, alphabet.visible_types, len(alphabet.schema.streams),
                                alphabet.from_streams)
        self.letter_of_key: dict[int, int] = {}
        self.atom_masks: list[int] = []  # letter -> bitmask over atom ids
        self.relevant: list[bool] = []  # letter -> satisfies some atom or NOT (not inert)
        self.keys: list[int] = []  # letter -> key, for explain and pickling
        self.type_shift = len(self.leaves)
        self.type_bits = int(n_types).bit_length()
        # the key carries the event's stream tag only if some atom is qualified (S>E)
        self.stream_keyed = any(a.streams is not None for a in self.atoms)
        stream_bits = len(alphabet.schema.streams).bit_length() + 1 if self.stream_keyed else 0
        self.stream_shift = self.type_shift + self.type_bits
        self.vectorised_keys = self.stream_shift + stream_bits <= 62
        # small key spaces intern through a dense table (key -> letter, -1: not seen yet):
        # one gather per batch instead of a sort
        key_bits = self.stream_shift + stream_bits
        self.dense = np.full(1 << key_bits, -1, dtype=np.int32) if key_bits <= DENSE_BITS \
            else None

    # ---- one event at a time (the record path) ------------------------------------------------
    def record_letter(self, tid: int, row: dict, stream: int) -> int:
        """The letter of one read event: type ``tid``, validated attributes ``row``, stream id
        ``stream`` (-1: untagged). The same key as ``encode`` builds for the event in a
        batch, from the scalar form of each leaf (``cercore.predicates.scalar_leaf``); a
        string group's bits are cached per distinct string, as a batch computes them per
        distinct value. When one string attribute decides every leaf, the letter itself is
        cached per (type, string)."""
        try:
            groups, others, by_string = self._record
        except AttributeError:
            groups, others, by_string = self._record = self._record_plan()
        if by_string is not None:
            attr, letters = by_string
            value = (tid, row.get(attr))
            letter = letters.get(value)
            if letter is None:
                if len(letters) >= STRING_BITS_CACHE:
                    letters.clear()
                letter = letters[value] = self._record_key_letter(tid, row, stream, groups,
                                                                  others)
            return letter
        return self._record_key_letter(tid, row, stream, groups, others)

    def _record_key_letter(self, tid: int, row: dict, stream: int, groups: list,
                           others: list) -> int:
        key = tid << self.type_shift
        for attr, cache, leaves in groups:
            s = row.get(attr)
            if s is not None:
                bits = cache.get(s)
                if bits is None:
                    if len(cache) >= STRING_BITS_CACHE:
                        cache.clear()
                    bits = cache[s] = sum(1 << k for k, fn in leaves if fn(row))
                key |= bits
        for bit, fn in others:
            if fn(row):
                key |= bit
        if self.stream_keyed and stream >= 0:
            key |= (stream + 1) << self.stream_shift
        letter = self.letter_of_key.get(key)
        return self.letter(key) if letter is None else letter

    def _record_plan(self) -> tuple[list, list, tuple[str, dict] | None]:
        """The scalar leaves: per string group (attribute, its bits per string, its leaves),
        the other leaves as (bit, leaf), and (attribute, letters per (type, string)) when that
        attribute's group is all there is (no other leaf, no stream in the key)."""
        groups = [(attr, {}, [(k, scalar_leaf(self.leaves[k])) for k in leaves])
                  for attr, leaves in self.string_groups]
        others = [(1 << k, scalar_leaf(self.leaves[k])) for k in self.other_leaves]
        by_string = (groups[0][0], {}) if len(groups) == 1 and not others \
            and not self.stream_keyed else None
        return groups, others, by_string

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_record", None)  # closures: rebuilt on first use
        return state

    def key_mask(self, key: int) -> int:
        tid = (key >> self.type_shift) & ((1 << self.type_bits) - 1)
        bits = key & ((1 << self.type_shift) - 1)
        stream = (key >> self.stream_shift) - 1  # -1: untagged, in every stream of its type
        mask = 0
        for a in self.atoms:
            if tid in a.types and eval_guard(a.guard, bits) and (
                    a.streams is None or stream < 0 or stream in a.streams):
                mask |= 1 << a.id
        for neg in self.negations:  # NOT(...), ABSENT(...): satisfied when no branch is
            if not any((mask >> b.id) & 1 for b in neg.branches):
                mask |= 1 << neg.id
        return mask

    def letter(self, key: int) -> int:
        letter = self.letter_of_key.get(key)
        if letter is None:
            letter = self.letter_of_key[key] = len(self.atom_masks)
            mask = self.key_mask(key)
            self.atom_masks.append(mask)
            self.relevant.append(mask & ~self.absence_bits != 0)
            self.keys.append(key)
        return letter

    def letters_satisfying(self, bits: int) -> np.ndarray:
        """letter -> satisfies one of the labels in ``bits`` (bool; cached per ``bits`` until a
        new letter appears)."""
        cache = self.__dict__.setdefault("_satisfying", {})
        table = cache.get(bits)
        if table is None or len(table) != len(self.atom_masks):
            table = cache[bits] = np.array([m & bits != 0 for m in self.atom_masks], dtype=bool)
        return table

    def _relevant_table(self) -> np.ndarray:
        """letter -> not inert (uint8)."""
        table = getattr(self, "_relevant_u8", None)
        if table is None or len(table) != len(self.atom_masks):
            table = self._relevant_u8 = np.array(self.relevant, dtype=np.uint8)
        return table

    def active(self, read: np.ndarray, letters: np.ndarray, pids: np.ndarray | None,
               skip_inert: bool, kernel: LettersKernel | None = None) -> np.ndarray:
        """Offsets of the events the evaluator steps (int64, in order): read, in a partition
        (``pids`` not NO_PARTITION, when given) and, with ``skip_inert``, whose letter
        satisfies some atom (inert letters can be skipped when ``inert_letters_skippable``
        holds)."""
        relevant = self._relevant_table() if skip_inert else None
        if kernel is not None:
            return kernel.active_events(_bytes(read), letters, relevant, pids)
        active = np.flatnonzero(read if pids is None else read & (pids != NO_PARTITION))
        if relevant is not None:
            active = active[relevant[letters[active]].astype(bool)]
        return active

    def read_mask(self, batch: Batch, shared: dict | None = None) -> np.ndarray:
        """Which events of the batch the query reads: a type it mentions, from a stream in
        its FROM (or untagged). ``shared``: the per-batch cache of queries run together."""
        if shared is None:
            return self.reads.mask(batch)
        key = ("read", self.reads.key)
        read = shared.get(key)
        if read is None:
            read = shared[key] = self.reads.mask(batch)
        return read.copy()  # callers unmark late events in their copy

    def encode(self, batch: Batch, shared: dict | None = None, read: np.ndarray | None = None,
               kernel: LettersKernel | None = None) -> np.ndarray:
        """Letters of a batch (int32); NOT_READ for events the query does not read (``read``,
        default ``read_mask(batch)``). ``shared`` caches leaf results by predicate text for
        this batch, so queries that run together evaluate a predicate they share once."""
        n = batch.n
        letters = np.full(n, NOT_READ, dtype=np.int32)
        if read is None:
            read = self.read_mask(batch)
        if not read.any():
            return letters
        if not self.vectorised_keys:
            self._encode_rows(batch, read, letters, shared)
            return letters
        if kernel is not None and self.dense is not None:
            self._encode_compiled(batch, shared, read, letters, kernel)
            return letters
        keys = batch.type_ids.astype(np.int64) << self.type_shift
        cols = batch.columns
        for attr, col, part in self._group_parts(cols, shared):
            keys |= np.where(cols.valid[attr], part[col.codes], 0)
        for k in self.other_leaves:
            keys |= self._leaf(k, cols, shared).astype(np.int64) << k
        if self.stream_keyed and batch.streams is not None:
            keys |= (batch.streams.astype(np.int64) + 1) << self.stream_shift
        keys = keys[read]
        if self.dense is not None:
            got = self.dense[keys]
            if (got < 0).any():
                self._intern(keys[got < 0])
                got = self.dense[keys]
            letters[read] = got
        else:
            uniq, inverse = np.unique(keys, return_inverse=True)
            lut = np.array([self.letter(int(u)) for u in uniq.tolist()], dtype=np.int32)
            letters[read] = lut[inverse]
        return letters

    def _group_parts(self, cols: Columns, shared: dict | None):
        """Per string group: (attribute, column, the group's key bits for each distinct
        string) -- a leaf over one string runs once per distinct value; an event's bits are
        ``part[code]`` (a null string satisfies no leaf)."""
        for attr, leaves in self.string_groups:
            col = cols.values[attr]
            per_value = _dictionary_columns(attr, col)
            part = np.zeros(len(col.dictionary), dtype=np.int64)
            for k in leaves:
                part |= self._leaf(k, per_value, shared, attr).astype(np.int64) << k
            yield attr, col, part

    def _intern(self, keys: np.ndarray) -> None:
        """Letters for keys the dense table has not seen."""
        for u in np.unique(keys).tolist():
            self.dense[u] = self.letter(u)

    def _encode_compiled(self, batch: Batch, shared: dict | None, read: np.ndarray,
                         letters: np.ndarray, fast: LettersKernel) -> None:
        """``encode`` through the letters kernel: the same keys and letters, no temporaries."""
        cols = batch.columns
        groups = [(np.ascontiguousarray(col.codes, dtype=np.int32), _bytes(cols.valid[attr]),
                   part) for attr, col, part in self._group_parts(cols, shared)]
        leaves = [(_bytes(self._leaf(k, cols, shared)), k) for k in self.other_leaves]
        streams = np.ascontiguousarray(batch.streams, dtype=np.int16) \
            if self.stream_keyed and batch.streams is not None else None
        keys = np.empty(batch.n, dtype=np.int64)
        fast.letter_keys(np.ascontiguousarray(batch.type_ids, dtype=np.int32), self.type_shift,
                         groups, leaves, streams, self.stream_shift, keys)
        read8 = _bytes(read)
        if fast.lookup_letters(read8, keys, self.dense, letters):
            self._intern(keys[read & (letters < 0)])
            fast.lookup_letters(read8, keys, self.dense, letters)

    def _leaf(self, k: int, cols: Columns, shared: dict | None, scope=None) -> np.ndarray:
        """Leaf ``k`` over ``cols``, through the shared cache when there is one."""
        if shared is None:
            return evaluate_leaf(self.leaves[k], cols)
        key = (scope, self.leaf_texts[k])
        bits = shared.get(key)
        if bits is None:
            bits = shared[key] = evaluate_leaf(self.leaves[k], cols)
        return bits

    def _encode_rows(self, batch: Batch, read: np.ndarray, letters: np.ndarray,
                     shared: dict | None) -> None:
        """More predicates than fit in 62 bits: Python int keys, row by row."""
        leaf_bits = [self._leaf(k, batch.columns, shared) for k in range(len(self.leaves))]
        tagged = batch.streams
        for i in np.flatnonzero(read):
            key = int(batch.type_ids[i]) << self.type_shift
            for k, bits in enumerate(leaf_bits):
                if bits[i]:
                    key |= 1 << k
            if self.stream_keyed and tagged is not None:
                key |= (int(tagged[i]) + 1) << self.stream_shift
            letters[i] = self.letter(key)

    @property
    def n_letters(self) -> int:
        return len(self.atom_masks)


def _bytes(mask: np.ndarray) -> np.ndarray:
    """A bool mask as contiguous uint8, the form the Cython passes read (no copy)."""
    return np.ascontiguousarray(mask, dtype=bool).view(np.uint8)


def _leaf_text(p) -> str:
    """A leaf predicate's text: equal texts evaluate equally on any batch (the leaf reads
    attributes by name, whatever the event type)."""
    try:
        return format_pred(p)
    except ValueError:  # a constant with no CEQL text (NaN): never shared
        return f"#{id(p)}"


def _dictionary_columns(attr: str, col: StringColumn) -> Columns:
    """One row per distinct string of ``col``: a leaf over ``attr`` evaluated on it gives
    its value for every event holding that string."""
    d = len(col.dictionary)
    return Columns(d, {attr: StringColumn(np.arange(d, dtype=np.int32), col.dictionary)},
                   {attr: np.ones(d, dtype=bool)})


def inert_letters_skippable(analysed: AnalysedQuery) -> bool:
    """True when an event whose letter satisfies no atom cannot change the evaluation, so the
    evaluator need not step it: every run that survives such an event waits in a gap
    (``;`` and ``+`` are skip-till-any-match, whose gaps loop on any event), no run can start,
    complete or be consumed on it. Not so with ``:`` / ``:+`` (any event breaks adjacency),
    ``NOT`` (its event is consumed) or a selection strategy (its history ranks every event).
    Nor with LIMIT: skipping can reorder the complex events that end at one event (runs wait
    in more deterministic states), and LIMIT keeps the first ones of that order, as CORE's
    engine does."""
    if analysed.strategy is not None or analysed.negations or analysed.query.limit is not None:
        return False
    return not has_contiguity(analysed.formula)
