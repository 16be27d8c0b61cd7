"""CONSUME BY and LIMIT, asserted after every event (in the style of CORE's own tests)."""

from __future__ import annotations

import pytest

import cercore

DECL = "CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int }, EVENT C { k:int } }"


def per_event(query: str, word: str, keys: list[int] | None, backend: str):
    engine = cercore.compile("SELECT * FROM S WHERE " + query, DECL).engine(backend)
    keys = keys or [0] * len(word)
    return [[(ce.start, ce.positions) for ce in engine.push(c, {"k": k})]
            for c, k in zip(word, keys, strict=True)]


@pytest.mark.parametrize("query, word, keys, expected", [
    # NONE (default): every match
    ("A ; B", "AABB", None, [[], [], [(1, (1, 2)), (0, (0, 2))], [(1, (1, 3)), (0, (0, 3))]]),
    ("A ; B CONSUME BY NONE", "AAB", None, [[], [], [(1, (1, 2)), (0, (0, 2))]]),
    # ANY: after an event that completes a match, every partial match is gone
    ("A ; B CONSUME BY ANY", "AABB", None, [[], [], [(1, (1, 2)), (0, (0, 2))], []]),
    ("A ; B CONSUME BY ANY", "AABAB", None,
     [[], [], [(1, (1, 2)), (0, (0, 2))], [], [(3, (3, 4))]]),
    # ... including runs the consuming event itself starts: B ; B on "BBB"
    ("B ; B CONSUME BY ANY", "BBBB", None, [[], [(0, (0, 1))], [], [(2, (2, 3))]]),
    # ... and in every partition
    ("A ; B PARTITION BY [k] CONSUME BY ANY", "AABB", [1, 2, 1, 2],
     [[], [], [(0, (0, 2))], []]),
    # PARTITION: only the partition of the consuming event
    ("A ; B PARTITION BY [k] CONSUME BY PARTITION", "AABB", [1, 2, 1, 2],
     [[], [], [(0, (0, 2))], [(1, (1, 3))]]),
    ("A ; B PARTITION BY [k] CONSUME BY PARTITION", "AABAB", [1, 2, 1, 1, 1],
     [[], [], [(0, (0, 2))], [], [(3, (3, 4))]]),
    # without PARTITION BY, PARTITION equals ANY
    ("A ; B CONSUME BY PARTITION", "AABB", None, [[], [], [(1, (1, 2)), (0, (0, 2))], []]),
    # a match outside the window does not consume
    ("A ; B WITHIN 1 EVENTS CONSUME BY ANY", "ACBAB", None, [[], [], [], [], [(3, (3, 4))]]),
    ("A ; C ; B WITHIN 2 EVENTS CONSUME BY ANY", "ACBCB", None, [[], [], [(0, (0, 1, 2))], [], []]),
    # LIMIT: the first n of the enumeration order (latest start first)
    ("A ; B LIMIT 1", "AABB", None, [[], [], [(1, (1, 2))], [(1, (1, 3))]]),
    ("A ; B LIMIT 0", "AABB", None, [[], [], [], []]),
    ("A+ ; B LIMIT 2", "AAB", None, [[], [], [(1, (1, 2)), (0, (0, 1, 2))]]),
    ("A ; B PARTITION BY [k] LIMIT 1", "AABB", [1, 1, 2, 1], [[], [], [], [(1, (1, 3))]]),
    # LIMIT 0 reports nothing, but the match still consumes
    ("A ; B CONSUME BY ANY LIMIT 0", "AABAB", None, [[], [], [], [], []]),
    ("A ; B CONSUME BY ANY LIMIT 1", "AABAB", None, [[], [], [(1, (1, 2))], [], [(3, (3, 4))]]),
])
def test_consume_and_limit(query, word, keys, expected, backend):
    assert per_event(query, word, keys, backend) == expected


def test_limit_must_be_non_negative():
    with pytest.raises(cercore.CEQLSyntaxError):
        cercore.compile("SELECT * FROM S WHERE A LIMIT -1", DECL)
