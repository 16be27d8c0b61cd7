"""The letters kernel: the compiled passes that turn a batch's predicate results into letters
(``cercore_fast.letters``), what ``cercore.runtime.letters.LetterEncoder`` calls when its
backend has one. The numpy code of ``LetterEncoder`` is the reference: same keys, same letters.
``tests/runtime/test_letters_compiled.py`` checks the kernel against it."""

from __future__ import annotations

from typing import Protocol

import numpy as np


class LettersKernel(Protocol):
    """One pass per function over typed arrays; no Python object per event."""

    def letter_keys(self, type_ids: np.ndarray, type_shift: int, groups: list, leaves: list,
                    streams: np.ndarray | None, stream_shift: int, keys: np.ndarray) -> None:
        """``keys[i]`` = type id << ``type_shift`` | the predicate bits of event i: of the
        string groups (``(codes int32, valid uint8, bits-per-code int64)``) and of the other
        leaves (``(truth uint8, bit)``) | (stream tag + 1) << ``stream_shift``."""

    def lookup_letters(self, read: np.ndarray, keys: np.ndarray, dense: np.ndarray,
                       letters: np.ndarray) -> int:
        """``letters[i]`` = ``dense[keys[i]]`` where read, NOT_READ elsewhere; the number of
        read events whose key is not interned yet (the caller interns them and calls again)."""

    def active_events(self, read: np.ndarray, letters: np.ndarray, relevant: np.ndarray | None,
                      pids: np.ndarray | None) -> np.ndarray:
        """Offsets (int64, in order) of the events the evaluator steps: read, in a partition
        (``pids``, when given) and relevant (``relevant[letter]``, when given)."""
