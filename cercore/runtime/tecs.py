"""The timed Enumerable Compact Set (tECS, CORE §4.1–4.2), pure-Python reference.

Nodes live in a struct-of-arrays arena indexed by int (the layout the Cython arena uses):

- ``kind``: BOTTOM (a run starts here), OUTPUT (one marked position, ``left`` = next node),
  UNION (``left``/``right`` children, max-start of left ≥ max-start of right);
- ``pos``: stream position (BOTTOM: where the run starts; OUTPUT: the marked event);
- ``maxs``: maximum-start, the largest start *time* of any open complex event below the node;
- ``left``/``right``: child indices, NIL when absent or reclaimed; an OUTPUT node's ``right``
  is NIL or its binding label, encoded negative (``extend``).

Max-starts are window times (event ticks or timestamps), so enumeration can prune with one
comparison. Union lists (§4.2) are Python lists of node ids sorted by decreasing max-start, the
first one a non-union node.
"""

from __future__ import annotations

from cercore.interface.constants import BOTTOM, NIL, OUTPUT, UNION


class NodeArena:
    """Growable node store with tECS's three constructors and union-list operations."""

    __slots__ = ("kind", "left", "maxs", "pos", "right")

    def __init__(self) -> None:
        self.kind: list[int] = []
        self.pos: list[int] = []
        self.maxs: list[int] = []
        self.left: list[int] = []
        self.right: list[int] = []

    def __len__(self) -> int:
        return len(self.kind)

    def _new(self, kind: int, pos: int, maxs: int, left: int, right: int) -> int:
        self.kind.append(kind)
        self.pos.append(pos)
        self.maxs.append(maxs)
        self.left.append(left)
        self.right.append(right)
        return len(self.kind) - 1

    # ---- tECS constructors (§4.2) -------------------------------------------------------
    def new_bottom(self, pos: int, time: int) -> int:
        return self._new(BOTTOM, pos, time, NIL, NIL)

    def extend(self, node: int, pos: int, label: int = NIL) -> int:
        """An OUTPUT node; ``label`` (in ``right``, which OUTPUT nodes do not use otherwise):
        NIL, or the event's binding label encoded as ``-2 - label``
        (cercore.runtime.event_predicates)."""
        return self._new(OUTPUT, pos, self.maxs[node], node, label)

    def union(self, n1: int, n2: int) -> int:
        """A node for the union of two safe nodes of equal max-start (Figure 5 (a)–(d))."""
        kind, left, right, maxs = self.kind, self.left, self.right, self.maxs
        m = maxs[n1]
        if kind[n1] != UNION:  # (a)
            return self._new(UNION, -1, m, n1, n2)
        if kind[n2] != UNION:  # (b)
            return self._new(UNION, -1, m, n2, n1)
        r1, r2 = right[n1], right[n2]
        if maxs[r1] >= maxs[r2]:  # (c)
            u2 = self._new(UNION, -1, maxs[r1], r1, r2)
        else:  # (d)
            u2 = self._new(UNION, -1, maxs[r2], r2, r1)
        u1 = self._new(UNION, -1, m, left[n2], u2)
        return self._new(UNION, -1, m, left[n1], u1)

    # ---- union lists (§4.2) ---------------------------------------------------------------
    def insert(self, ul: list[int], node: int) -> None:
        """Insert a safe node whose max-start is ≤ that of ``ul[0]``, keeping the order."""
        maxs = self.maxs
        m = maxs[node]
        for i in range(1, len(ul)):
            mi = maxs[ul[i]]
            if mi == m:
                ul[i] = self.union(ul[i], node)
                return
            if mi < m:
                ul.insert(i, node)
                return
        ul.append(node)

    def merge(self, ul: list[int]) -> int:
        """One node representing the whole union list (Figure 5 (e))."""
        if len(ul) == 1:
            return ul[0]
        maxs = self.maxs
        node = ul[-1]
        for i in range(len(ul) - 2, -1, -1):
            node = self._new(UNION, -1, maxs[ul[i]], ul[i], node)
        return node

    # ---- reclamation ----------------------------------------------------------------------
    def compact(self, lists: list[list[int]], tau: int) -> None:
        """Keep only nodes reachable from ``lists`` whose max-start is ≥ ``tau`` (the oldest start
        any future output can have) and renumber them in place. Right children below ``tau`` are
        cut (set to NIL): enumeration would prune them anyway, since ``tau`` only grows.
        ``lists`` must already be free of entries below ``tau``."""
        kind, pos, maxs, left, right = self.kind, self.pos, self.maxs, self.left, self.right
        remap: dict[int, int] = {}
        order: list[int] = []
        stack = [n for ul in lists for n in ul]
        while stack:
            n = stack.pop()
            if n in remap:
                continue
            remap[n] = -2  # placeholder until numbering
            order.append(n)
            if left[n] != NIL:
                stack.append(left[n])
            r = right[n]
            if r >= 0 and maxs[r] >= tau:  # (an OUTPUT node's label is negative)
                stack.append(r)
        order.sort()  # children are older than parents: keep creation order
        for new, old in enumerate(order):
            remap[old] = new
        nk, np_, nm, nl, nr = [], [], [], [], []
        for old in order:
            nk.append(kind[old])
            np_.append(pos[old])
            nm.append(maxs[old])
            lo = left[old]
            nl.append(remap[lo] if lo != NIL else NIL)
            r = right[old]
            nr.append(r if r < NIL else remap[r] if r != NIL and maxs[r] >= tau else NIL)
        self.kind, self.pos, self.maxs, self.left, self.right = nk, np_, nm, nl, nr
        for ul in lists:
            ul[:] = [remap[n] for n in ul]
