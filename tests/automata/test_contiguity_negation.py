"""':' and ':+' (adjacent events of the stream the evaluator sees) and NOT(atom) (one event
that does not match, consumed but not reported), asserted after every event."""

from __future__ import annotations

import pytest

import cercore

DECL = ("CREATE STREAM S { EVENT A { v:int, k:int }, EVENT B { v:int, k:int }, "
        "EVENT C { v:int, k:int } } CREATE STREAM T { EVENT Z { v:int } }")


def per_event(query: str, word: str, backend: str, values=None, keys=None):
    """For each event, the sorted (start, positions) it completes."""
    engine = cercore.compile("SELECT * FROM S WHERE " + query, DECL).engine(backend)
    out = []
    for i, c in enumerate(word):
        attrs = {"v": (values or [0] * len(word))[i]}
        if c != "Z":
            attrs["k"] = (keys or [0] * len(word))[i]
        out.append(sorted((ce.start, ce.positions) for ce in engine.push(c, attrs)))
    return out


@pytest.mark.parametrize("query, word, expected", [
    ("A : B", "AB", [[], [(0, (0, 1))]]),
    ("A : B", "ACB", [[], [], []]),
    ("A : B", "AZB", [[], [], [(0, (0, 2))]]),  # Z is not read by the query: still adjacent
    ("A ; B : C", "ABCBC", [[], [], [(0, (0, 1, 2))], [], [(0, (0, 3, 4))]]),
    # ';' binds tighter than ':': A : (B ; C)
    ("A : B ; C", "ABACBC", [[], [], [], [(0, (0, 1, 3))], [], [(0, (0, 1, 5))]]),
    ("A:+ ; B", "AACAB", [[], [], [], [], [(0, (0, 1, 4)), (0, (0, 4)), (1, (1, 4)), (3, (3, 4))]]),
    ("(A ; B):+", "ABAB", [[], [(0, (0, 1))], [], [(0, (0, 1, 2, 3)), (0, (0, 3)), (2, (2, 3))]]),
])
def test_contiguity(query, word, expected, backend):
    assert per_event(query, word, backend) == expected


def test_contiguity_within_a_partition(backend):
    q = "A : B PARTITION BY [k]"
    # A(k=1) C(k=2) B(k=1): C belongs to another partition, so A and B are adjacent in k=1.
    assert per_event(q, "ACB", backend, keys=[1, 2, 1])[2] == [(0, (0, 2))]
    assert per_event(q, "ACB", backend, keys=[1, 1, 1])[2] == []


@pytest.mark.parametrize("query, word, expected", [
    ("A ; NOT(C) ; B", "ACB", [[], [], []]),
    ("A ; NOT(C) ; B", "AAB", [[], [], [(0, (0, 2))]]),
    ("NOT(C) ; B", "AB", [[], [(0, (1,))]]),          # a leading NOT defines the start
    ("A ; NOT(C)", "AB", [[], [(0, (0,))]]),          # a trailing NOT defines the end
    ("A ; NOT(C)", "AC", [[], []]),
    ("A : NOT(B) : C", "AACAC", [[], [], [(0, (0, 2))], [], []]),
    ("A ; NOT(B OR C) ; A", "ACAA", [[], [], [], [(0, (0, 3))]]),
    ("A ; NOT(B FILTER B[v > 5]) ; C", "ABC", [[], [], []]),
])
def test_not(query, word, expected, backend):
    values = [0, 1, 0, 0, 0] if "v > 5" not in query else [0, 9, 0]
    assert per_event(query, word, backend, values=values[:len(word)]) == expected


def test_not_with_filter_lets_other_events_of_that_type_through(backend):
    q = "A ; NOT(B FILTER B[v > 5]) ; C"
    assert per_event(q, "ABC", backend, values=[0, 1, 0])[2] == [(0, (0, 2))]


def test_not_inside_iteration(backend):
    q = "(A ; NOT(C))+ ; B"
    # Each iteration: an A, then one non-C event (consumed, not reported). Two runs give
    # {0, 3} (NOT at 1 or at 2): it is reported once.
    assert per_event(q, "AAAB", backend)[3] == [(0, (0, 3)), (1, (1, 3))]
    assert per_event(q, "AAAAB", backend)[4] == [(0, (0, 2, 4)), (0, (0, 4)), (1, (1, 4)),
                                                  (2, (2, 4))]
