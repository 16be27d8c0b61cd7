# cython: language_level=3
"""Letters of a batch in single passes over typed memoryviews: the compiled twin of the numpy
path in ``cercore.runtime.letters.LetterEncoder.encode`` (same keys, same letters).

Per batch and query the numpy path makes about ten array temporaries (shift, gather, where, or,
compress, gather, scatter, ...); here each step is one loop without temporaries, which is what
makes many queries over one stream cheap (``cercore.multi_engine``).
"""

from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t

import numpy as np

from cercore.interface import constants

cdef int32_t NOT_READ = constants.NOT_READ
cdef int64_t NO_PARTITION = constants.NO_PARTITION


def letter_keys(const int32_t[::1] type_ids, int type_shift, list groups, list leaves,
                streams, int stream_shift, int64_t[::1] keys):
    """``keys[i]`` = type id << ``type_shift`` | the bits of the string groups
    (``(codes int32, valid uint8, part int64)``: ``part[codes[i]]`` where valid) | the bits of
    the other leaves (``(bits uint8, k)``: ``1 << k`` where set) | (stream id + 1) <<
    ``stream_shift`` when ``streams`` (int16) is given."""
    cdef Py_ssize_t i, n = type_ids.shape[0]
    cdef const int32_t[::1] codes
    cdef const uint8_t[::1] valid
    cdef const int64_t[::1] part
    cdef const uint8_t[::1] bits
    cdef const int16_t[::1] tags
    cdef int64_t bit
    for i in range(n):
        keys[i] = (<int64_t>type_ids[i]) << type_shift
    for group in groups:
        codes, valid, part = group
        for i in range(n):
            if valid[i]:
                keys[i] |= part[codes[i]]
    for leaf in leaves:
        bits = leaf[0]
        bit = (<int64_t>1) << <int>leaf[1]
        for i in range(n):
            if bits[i]:
                keys[i] |= bit
    if streams is not None:
        tags = streams
        for i in range(n):
            keys[i] |= (<int64_t>tags[i] + 1) << stream_shift


def lookup_letters(const uint8_t[::1] read, const int64_t[::1] keys, const int32_t[::1] dense,
                   int32_t[::1] letters) -> Py_ssize_t:
    """``letters[i]`` = ``dense[keys[i]]`` where read, NOT_READ elsewhere; returns how many
    read events have a key not interned yet (``dense`` -1: the caller interns and retries)."""
    cdef Py_ssize_t i, misses = 0, n = read.shape[0]
    cdef int32_t letter
    for i in range(n):
        if read[i]:
            letter = dense[keys[i]]
            letters[i] = letter
            if letter < 0:
                misses += 1
        else:
            letters[i] = NOT_READ
    return misses


def active_events(const uint8_t[::1] read, const int32_t[::1] letters, relevant, pids):
    """Offsets of the events the evaluator steps (int64, in order): read, with a partition
    (``pids`` int64 not -1, when given) and a relevant letter (``relevant[letter]`` uint8,
    when given)."""
    cdef Py_ssize_t i, m = 0, n = read.shape[0]
    cdef const uint8_t[::1] rel
    cdef const int64_t[::1] pid
    cdef bint check_rel = relevant is not None, check_pid = pids is not None
    if check_rel:
        rel = relevant
    if check_pid:
        pid = pids
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] active = out
    for i in range(n):
        if not read[i]:
            continue
        if check_pid and pid[i] == NO_PARTITION:
            continue
        if check_rel and not rel[letters[i]]:
            continue
        active[m] = i
        m += 1
    return out[:m]
