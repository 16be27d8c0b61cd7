"""A complex event's ``match_id``: Spark's ``xxhash64(coalesce(partition, ''), start, end,
positions)`` (XXH64, seed 42, each value hashed with the hash so far as its seed, nulls
skipped), computed on the worker with numpy, so that ``find`` and the SQL table function
``cer_find`` give the same id without a Spark expression after the Python step. Pure numpy.

Spark hashes a long with ``XXH64.hashLong`` and a string with ``XXH64.hashUnsafeBytes`` of its
UTF-8 bytes: both are the standard XXH64 of the value's (little-endian) bytes.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

P1 = 0x9E3779B185EBCA87
P2 = 0xC2B2AE3D27D4EB4F
P3 = 0x165667B19E3779F9
P4 = 0x85EBCA77C2B2AE63
P5 = 0x27D4EB2F165667C5
SEED = 42
_M = (1 << 64) - 1


def _rotl(x, r: int):
    """Rotate left (Python int or uint64 array)."""
    if isinstance(x, np.ndarray):
        return (x << np.uint64(r)) | (x >> np.uint64(64 - r))
    return ((x << r) | (x >> (64 - r))) & _M


def _fmix(h):
    if isinstance(h, np.ndarray):
        h = h ^ (h >> np.uint64(33))
        h = h * np.uint64(P2)
        h = h ^ (h >> np.uint64(29))
        h = h * np.uint64(P3)
        return h ^ (h >> np.uint64(32))
    h ^= h >> 33
    h = h * P2 & _M
    h ^= h >> 29
    h = h * P3 & _M
    return h ^ (h >> 32)


def hash_longs(values: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """XXH64 of each int64 of ``values`` with the uint64 ``seeds`` (elementwise)."""
    with np.errstate(over="ignore"):
        v = values.astype(np.int64).view(np.uint64)
        h = seeds + np.uint64((P5 + 8) & _M)
        h = h ^ (_rotl(v * np.uint64(P2), 31) * np.uint64(P1))
        h = _rotl(h, 27) * np.uint64(P1) + np.uint64(P4)
        return _fmix(h)


@lru_cache(maxsize=4096)
def hash_text(text: str, seed: int = SEED) -> int:
    """XXH64 of ``text``'s UTF-8 bytes with ``seed`` (uint64 as a Python int)."""
    data = text.encode("utf-8")
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + P1 + P2) & _M, (seed + P2) & _M, seed & _M, (seed - P1) & _M]
        while i + 32 <= n:
            for j in range(4):
                lane = int.from_bytes(data[i + 8 * j:i + 8 * j + 8], "little")
                v[j] = _rotl((v[j] + lane * P2) & _M, 31) * P1 & _M
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M
        for lane in v:
            h ^= _rotl(lane * P2 & _M, 31) * P1 & _M
            h = (h * P1 + P4) & _M
    else:
        h = (seed + P5) & _M
    h = (h + n) & _M
    while i + 8 <= n:
        k = int.from_bytes(data[i:i + 8], "little")
        h ^= _rotl(k * P2 & _M, 31) * P1 & _M
        h = (_rotl(h, 27) * P1 + P4) & _M
        i += 8
    if i + 4 <= n:
        h ^= int.from_bytes(data[i:i + 4], "little") * P1 & _M
        h = (_rotl(h, 23) * P2 + P3) & _M
        i += 4
    while i < n:
        h ^= data[i] * P5 & _M
        h = _rotl(h, 11) * P1 & _M
        i += 1
    return _fmix(h)


def match_ids(partition: list[str | None], start: np.ndarray, end: np.ndarray,
              offsets: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The int64 match ids of complex events: ``partition`` text (None: null), ``start`` and
    ``end`` positions, and the positions of each, ``positions[offsets[i]:offsets[i + 1]]``."""
    h = np.fromiter((hash_text(p or "") for p in partition), np.uint64, len(partition))
    h = hash_longs(np.asarray(start), h)
    h = hash_longs(np.asarray(end), h)
    offsets = np.asarray(offsets, np.int64)
    lengths = np.diff(offsets)
    positions = np.asarray(positions, np.int64)
    for j in range(int(lengths.max(initial=0))):
        rows = np.flatnonzero(lengths > j)
        h[rows] = hash_longs(positions[offsets[rows] + j], h[rows])
    return h.view(np.int64)
