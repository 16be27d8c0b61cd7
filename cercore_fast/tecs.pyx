# distutils: language = c++
# cython: language_level=3
"""tECS arena kernels: growth, compaction, and a Python-facing ``NodeArena`` for tests.

See ``tecs.pxd`` for the node layout and the inline constructors / union-list operations.
"""

cimport cython
from libc.stdint cimport int8_t, int64_t
from libc.stdlib cimport free, malloc, realloc
from libcpp.vector cimport vector

import numpy as np

from cercore.interface.state import NODE_DTYPE, NODE_FIELDS

cdef int64_t MIN_CAPACITY = 1024

# Node must be NODE_DTYPE, field for field and byte for byte: the arena is copied as one array
cdef Node _layout_probe
if np.asarray(<Node[:1]> &_layout_probe).dtype != NODE_DTYPE:
    raise ImportError("cercore_fast.tecs: the Node struct does not match "
                      "cercore.interface.state.NODE_DTYPE; rebuild the extension")


cdef int arena_reserve(Arena* a, int64_t extra) noexcept nogil:
    """Make room for ``extra`` more nodes (capacity doubling). 0 on success, -1 when out of
    memory (the arena is then unchanged)."""
    cdef int64_t need = a.size + extra
    cdef int64_t cap = a.capacity
    cdef Node* p
    if need <= cap:
        return 0
    if cap < MIN_CAPACITY:
        cap = MIN_CAPACITY
    while cap < need:
        cap *= 2
    p = <Node*>realloc(a.nodes, <size_t>cap * sizeof(Node))
    if p == NULL:
        return -1
    a.nodes = p
    a.capacity = cap
    return 0


cdef void arena_free(Arena* a) noexcept nogil:
    free(a.nodes)
    a.nodes = NULL
    a.size = 0
    a.capacity = 0


cdef int compact(Arena* a, vector[UList*]& lists, int64_t tau, int64_t keep) noexcept nogil:
    """Keep only nodes reachable from ``lists`` (left children always, right children only when
    their max-start is >= tau), renumber them in creation order, cut right children below tau,
    and rewrite the lists. Same rule as the reference ``NodeArena.compact``. The memory left
    over goes back to the system, down to room for ``keep`` nodes: what the arena grows back
    to before its next compaction (shrinking and regrowing the same memory every compaction
    costs page faults and, while other threads of the process run, a TLB shootdown on each
    of their cores per realloc: measured 27 us a realloc on two threads, 4 us on one). -1
    when out of memory."""
    cdef int64_t n = a.size
    cdef int64_t i, j, x, r, cnt = 0
    cdef size_t li, e
    cdef Node* nodes = a.nodes
    cdef UList* ul
    cdef vector[int64_t] stack
    cdef int64_t* remap = <int64_t*>malloc(<size_t>(n if n > 0 else 1) * sizeof(int64_t))
    cdef Node* p
    if remap == NULL:
        return -1
    for i in range(n):
        remap[i] = -1
    for li in range(lists.size()):
        ul = lists[li]
        for e in range(ul.size()):
            stack.push_back(ul[0][e])
    while stack.size():
        x = stack.back()
        stack.pop_back()
        if remap[x] != -1:
            continue
        remap[x] = -2
        if nodes[x].left != NIL:
            stack.push_back(nodes[x].left)
        r = nodes[x].right
        if r >= 0 and nodes[r].maxs >= tau:  # (an OUTPUT node's label is negative)
            stack.push_back(r)
    # pass 1: new ids in creation order; children (older, already numbered) rewritten in place
    for i in range(n):
        if remap[i] != -2:
            continue
        remap[i] = cnt
        cnt += 1
        if nodes[i].left != NIL:
            nodes[i].left = remap[nodes[i].left]
        r = nodes[i].right
        if r >= 0:
            nodes[i].right = remap[r] if nodes[r].maxs >= tau else NIL
    # pass 2: move (new id <= old id, so increasing order never overwrites an unread node)
    for i in range(n):
        j = remap[i]
        if j >= 0 and j != i:
            nodes[j] = nodes[i]
    a.size = cnt
    for li in range(lists.size()):
        ul = lists[li]
        for e in range(ul.size()):
            ul[0][e] = remap[ul[0][e]]
    free(remap)
    # give memory back after a large shrink
    keep = max(keep, cnt)
    if a.capacity > MIN_CAPACITY and a.capacity > 8 * keep:
        i = a.capacity
        while i > MIN_CAPACITY and i > 4 * keep:
            i //= 2
        p = <Node*>realloc(a.nodes, <size_t>i * sizeof(Node))
        if p != NULL:
            a.nodes = p
            a.capacity = i
    return 0


cdef object arena_to_array(Arena* a):
    """A copy of the arena's nodes, as one NODE_DTYPE array."""
    if a.size == 0:
        return np.empty(0, dtype=NODE_DTYPE)
    return np.asarray(<Node[:a.size]> a.nodes).copy()


cdef int arena_from_array(Arena* a, object nodes) except -1:
    """Replace the arena's nodes with ``nodes`` (a NODE_DTYPE array)."""
    cdef int64_t n = len(nodes)
    arena_free(a)
    if arena_reserve(a, n) < 0:
        raise MemoryError("cercore_fast: tECS arena")
    if n:
        np.asarray(<Node[:n]> a.nodes)[:] = nodes
    a.size = n
    return 0


cdef UList _to_ulist(list ul):
    cdef UList out
    for x in ul:
        out.push_back(x)
    return out


@cython.final
cdef class NodeArena:
    """The tECS arena with the reference ``cercore.runtime.tecs.NodeArena``'s Python interface
    (constructors, union-list ``insert``/``merge`` on Python lists, ``compact``), for tests."""

    def __dealloc__(self):
        arena_free(&self.arena)

    def __len__(self):
        return self.arena.size

    def _reserve(self, int64_t extra):
        if arena_reserve(&self.arena, extra) < 0:
            raise MemoryError("tECS arena")

    def _check(self, int64_t node):
        if node < 0 or node >= self.arena.size:
            raise IndexError(f"node {node} out of range")

    def new_bottom(self, int64_t pos, int64_t time):
        self._reserve(1)
        return new_bottom(&self.arena, pos, time)

    def extend(self, int64_t node, int64_t pos):
        self._check(node)
        self._reserve(1)
        return extend(&self.arena, node, pos)

    def union(self, int64_t n1, int64_t n2):
        self._check(n1)
        self._check(n2)
        self._reserve(3)
        return union_nodes(&self.arena, n1, n2)

    def insert(self, list ul, int64_t node):
        """Insert into the Python list ``ul`` in place."""
        cdef UList c = _to_ulist(ul)
        self._check(node)
        self._reserve(3)
        ul_insert(&self.arena, c, node)
        ul[:] = c

    def merge(self, list ul):
        cdef UList c = _to_ulist(ul)
        self._reserve(<int64_t>c.size())
        return ul_merge(&self.arena, c)

    def compact(self, list lists, int64_t tau):
        """Compact keeping what ``lists`` (Python lists, rewritten in place) reach."""
        cdef vector[UList] cl
        cdef vector[UList*] ptrs
        cdef size_t i
        for ul in lists:
            cl.push_back(_to_ulist(ul))
        for i in range(cl.size()):
            ptrs.push_back(&cl[i])
        if compact(&self.arena, ptrs, tau, 0) < 0:
            raise MemoryError("tECS arena")
        for i in range(cl.size()):
            lists[i][:] = cl[i]

    def __getattr__(self, name):
        """A node field as a list (``kind``, ``pos``, ... as the reference has them)."""
        if name in NODE_FIELDS:
            return arena_to_array(&self.arena)[name].tolist()
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def capacity(self):
        return self.arena.capacity
