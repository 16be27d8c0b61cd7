# cython: language_level=3
"""C API of the tECS arena (CORE §4.1-4.2): node structs in one growable array, int64 indices.

The layout mirrors ``cercore.runtime.tecs.NodeArena`` (the pure-Python reference): the same
three constructors, the same union gadgets (Figure 5 (a)-(d)), the same union-list insert and
merge (Figure 5 (e)), and the same compaction rule, so both backends build identical node
arrays from identical operations. ``Node`` is ``cercore.interface.state.NODE_DTYPE`` (checked when
``cercore_fast.tecs`` is imported), so the arena is saved and loaded as one numpy array.

Allocation: ``arena_reserve`` grows the array (doubling, ``realloc``) ahead of a batch of
constructor calls; the constructors themselves never allocate, so they are ``noexcept nogil``
and cannot fail. Callers reserve an upper bound on the nodes they may create.
"""

from libc.stdint cimport int8_t, int64_t
from libcpp.vector cimport vector

from cercore_fast.constants cimport BOTTOM, NIL, OUTPUT, UNION

# field order and types: cercore.interface.state.NODE_DTYPE
cdef struct Node:
    int64_t pos     # BOTTOM: start position; OUTPUT: marked position; UNION: -1
    int64_t maxs    # max-start: largest start time of any complex event below
    int64_t left    # OUTPUT: next node; UNION: left child; NIL otherwise
    int64_t right   # UNION: right child (NIL once cut by compaction); OUTPUT: NIL or its
                    # binding label, encoded as -2 - label (cercore_fast/between.pyx)
    int8_t kind     # BOTTOM / OUTPUT / UNION

cdef struct Arena:
    Node* nodes
    int64_t size
    int64_t capacity

# A union list: node ids sorted by decreasing max-start, the first one a non-union node.
ctypedef vector[int64_t] UList

cdef int arena_reserve(Arena* a, int64_t extra) noexcept nogil
cdef void arena_free(Arena* a) noexcept nogil
cdef int compact(Arena* a, vector[UList*]& lists, int64_t tau, int64_t keep) noexcept nogil
cdef object arena_to_array(Arena* a)
cdef int arena_from_array(Arena* a, object nodes) except -1


# ---- constructors (callers must have reserved room) ------------------------------------------
cdef inline int64_t new_node(Arena* a, int8_t kind, int64_t pos, int64_t maxs, int64_t left,
                             int64_t right) noexcept nogil:
    cdef int64_t i = a.size
    cdef Node* n = &a.nodes[i]
    n.kind = kind
    n.pos = pos
    n.maxs = maxs
    n.left = left
    n.right = right
    a.size = i + 1
    return i


cdef inline int64_t new_bottom(Arena* a, int64_t pos, int64_t time) noexcept nogil:
    return new_node(a, BOTTOM, pos, time, NIL, NIL)


cdef inline int64_t extend(Arena* a, int64_t node, int64_t pos) noexcept nogil:
    return new_node(a, OUTPUT, pos, a.nodes[node].maxs, node, NIL)


cdef inline int64_t union_nodes(Arena* a, int64_t n1, int64_t n2) noexcept nogil:
    """Union of two safe nodes of equal max-start (Figure 5 (a)-(d)); at most 3 new nodes."""
    cdef Node* nodes = a.nodes
    cdef int64_t m = nodes[n1].maxs
    cdef int64_t r1, r2, u2, u1
    if nodes[n1].kind != UNION:  # (a)
        return new_node(a, UNION, -1, m, n1, n2)
    if nodes[n2].kind != UNION:  # (b)
        return new_node(a, UNION, -1, m, n2, n1)
    r1 = nodes[n1].right
    r2 = nodes[n2].right
    if nodes[r1].maxs >= nodes[r2].maxs:  # (c)
        u2 = new_node(a, UNION, -1, nodes[r1].maxs, r1, r2)
    else:  # (d)
        u2 = new_node(a, UNION, -1, nodes[r2].maxs, r2, r1)
    u1 = new_node(a, UNION, -1, m, a.nodes[n2].left, u2)
    return new_node(a, UNION, -1, m, a.nodes[n1].left, u1)


# ---- union lists -----------------------------------------------------------------------------
cdef inline void ul_insert(Arena* a, UList& ul, int64_t node) noexcept nogil:
    """Insert a safe node whose max-start is <= that of ul[0], keeping the order (<= 3 nodes)."""
    cdef int64_t m = a.nodes[node].maxs
    cdef int64_t mi
    cdef size_t i, n = ul.size()
    for i in range(1, n):
        mi = a.nodes[ul[i]].maxs
        if mi == m:
            ul[i] = union_nodes(a, ul[i], node)
            return
        if mi < m:
            ul.insert(ul.begin() + i, node)
            return
    ul.push_back(node)


cdef inline int64_t ul_merge(Arena* a, UList& ul) noexcept nogil:
    """One node for the whole union list (Figure 5 (e)); len(ul) - 1 new nodes."""
    cdef Py_ssize_t i, n = <Py_ssize_t>ul.size()
    cdef int64_t node
    if n == 1:
        return ul[0]
    node = ul[n - 1]
    for i in range(n - 2, -1, -1):
        node = new_node(a, UNION, -1, a.nodes[ul[i]].maxs, ul[i], node)
    return node


cdef class NodeArena:
    """Python-facing wrapper over an Arena (tests, inspection); mirrors the reference NodeArena."""
    cdef Arena arena
