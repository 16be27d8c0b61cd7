"""The Cython tECS arena (``cercore_fast.tecs``) mirrors the reference ``NodeArena``: the same
operations build the same node arrays and union lists, and compaction keeps the same nodes."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

tecs_c = pytest.importorskip("cercore_fast.tecs")

from cercore.runtime.tecs import BOTTOM, NIL, OUTPUT, UNION, NodeArena  # noqa: E402


def arrays(a):
    return (list(a.kind), list(a.pos), list(a.maxs), list(a.left), list(a.right))


def both():
    return NodeArena(), tecs_c.NodeArena()


def test_constructors_and_gadgets():
    py, cy = both()
    for a in (py, cy):
        b0 = a.new_bottom(0, 10)
        b1 = a.new_bottom(1, 10)
        o0, o1 = a.extend(b0, 2), a.extend(b1, 3)
        u = a.union(o0, o1)  # (a)
        v = a.union(a.extend(b0, 4), u)  # (b)
        w = a.union(u, v)  # (c)/(d)
        a.union(w, u)
    assert arrays(py) == arrays(cy)
    assert set(cy.kind) == {BOTTOM, OUTPUT, UNION}
    assert len(py) == len(cy)


def test_union_gadget_d():
    py, cy = both()
    for a in (py, cy):
        x, y = a.new_bottom(0, 5), a.new_bottom(1, 7)
        lo, hi = a.new_bottom(2, 3), a.new_bottom(3, 4)
        u1 = a.union(a.extend(x, 8), lo)  # right child max-start 3
        u2 = a.union(a.extend(y, 9), hi)  # right child max-start 4
        a.maxs  # noqa: B018
        a.union(u1, u2)
    assert arrays(py) == arrays(cy)


def test_insert_and_merge_keep_order():
    py, cy = both()
    lists = []
    for a in (py, cy):
        nodes = [a.new_bottom(i, t) for i, t in enumerate([9, 7, 7, 5, 9, 3, 5])]
        ul = [nodes[0]]
        for n in nodes[1:]:
            a.insert(ul, n)
        lists.append(ul)
        a.merge(ul)
        a.merge([nodes[1]])
    assert lists[0] == lists[1]
    assert arrays(py) == arrays(cy)
    maxs = cy.maxs
    # equal max-starts merge (union gadget) except with the head, which stays a non-union node
    assert [maxs[n] for n in lists[1]] == [9, 9, 7, 5, 3]


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32), st.integers(5, 120))
def test_random_operation_sequences(seed, n_ops):
    """Random constructor / insert / merge / compact sequences give identical arenas."""
    py, cy = both()
    rnd = random.Random(seed)
    lists_py: list[list[int]] = []
    lists_cy: list[list[int]] = []
    t = 0
    for _ in range(n_ops):
        op = rnd.random()
        t += rnd.choice([0, 1, 2])
        if op < 0.25 or not lists_py:
            b = py.new_bottom(t, t)
            assert cy.new_bottom(t, t) == b
            lists_py.append([b])
            lists_cy.append([b])
        elif op < 0.5:
            i = rnd.randrange(len(lists_py))
            m = py.merge(lists_py[i])
            assert cy.merge(lists_cy[i]) == m
            e = py.extend(m, t)
            assert cy.extend(m, t) == e
            lists_py[i] = [e]
            lists_cy[i] = [e]
        elif op < 0.8 and len(lists_py) > 1:
            i, j = rnd.sample(range(len(lists_py)), 2)
            # insert the merge of j into i when it is not newer than i's head
            if py.maxs[lists_py[j][0]] <= py.maxs[lists_py[i][0]]:
                m = py.merge(lists_py[j])
                assert cy.merge(lists_cy[j]) == m
                py.insert(lists_py[i], m)
                cy.insert(lists_cy[i], m)
                del lists_py[j], lists_cy[j]
        else:
            tau = t - rnd.randrange(0, 6)
            keep_py = [ul for ul in lists_py if py.maxs[ul[0]] >= tau]
            for ul in keep_py:
                while py.maxs[ul[-1]] < tau:
                    ul.pop()
            keep_cy = [list(ul) for ul in keep_py]
            py.compact(keep_py, tau)
            cy.compact(keep_cy, tau)
            lists_py, lists_cy = keep_py, keep_cy
        assert lists_py == lists_cy
        assert arrays(py) == arrays(cy)


def test_compact_cuts_old_right_children():
    py, cy = both()
    for a in (py, cy):
        old = a.new_bottom(0, 1)
        new = a.new_bottom(1, 10)
        ul = [new]
        a.insert(ul, old)
        root = a.merge(ul)
        keep = [[root]]
        a.compact(keep, 5)
        assert keep == [[1]]
        assert a.right[1] == NIL  # the old branch is cut
    assert arrays(py) == arrays(cy)


def test_growth_doubles_and_survives_many_nodes():
    cy = tecs_c.NodeArena()
    b = cy.new_bottom(0, 0)
    n = b
    for i in range(100_000):
        n = cy.extend(n, i + 1)
    assert len(cy) == 100_001
    assert cy.capacity >= len(cy) and cy.capacity & (cy.capacity - 1) == 0
    keep = [[n]]
    cy.compact(keep, 0)
    assert len(cy) == 100_001 and keep == [[100_000]]
    cy.compact([], 0)
    assert len(cy) == 0 and cy.capacity <= 1024


def test_index_errors():
    cy = tecs_c.NodeArena()
    with pytest.raises(IndexError):
        cy.extend(0, 1)
