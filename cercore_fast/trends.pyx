# cython: language_level=3
"""Compiled twin of ``cercore.trends.reference``: the same online aggregators (skip-till-any-
match type-grained and mixed, exact skip-till-next-match, contiguous), one per window of one
partition, with the same outputs. ``trends.pxd`` is its C API: the vector layout, the structs
and the declarations of the classes below.

``Kernel(plan)`` has the interface of ``reference.Aggregators``: ``prepare(group)`` turns one
timestamp group of a partition into C arrays once, ``new()`` starts a window aggregator,
whose ``update(prepared)`` / ``result()`` / ``stored_events()`` mirror the reference's.

Storage is C arrays owned by each window aggregator: ``rows``, ``nvars + 2`` vectors (one per
variable, then the predecessor accumulator PRED and the final vector FINAL) and a backup of
them, and a node arena, doubling on growth, for the event-grained nodes (stored T_e events under
ANY, waiting T_e events under NEXT, the previous timestamp's nodes under contiguous).

Counts and integer sums are int64 with checked arithmetic (``__builtin_*_overflow``). When an
update would overflow -- or a group holds an aggregated integer beyond int64 -- the window
restores its state from before the update and goes on in *object mode*: its vectors become
Python lists of exact numbers in the reference's format, updated by the same compiled loop
with Python arithmetic (never a silent wrap, never a replay). A group whose compared values
are integers beyond 2^53 (not exact as doubles) hands the window to the Python reference
itself. Double sums use the reference's operation order, so they are equal to the bit. Shapes
the kernel does not compile (predicates on adjacent events other than ``P.a op NEXT(S).b``
over numbers, more than 62 variables, and the paper's compatibility mode for
skip-till-next-match) run the Python reference.
"""

cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy, memset

from cercore.schema import AttrType
from cercore.ceql import ast as ceql
from cercore.trends import reference

cdef extern from *:
    """
    static inline int trends_add_ovf(int64_t a, int64_t b, int64_t *r) {
        return __builtin_add_overflow(a, b, r);
    }
    static inline int trends_mul_ovf(int64_t a, int64_t b, int64_t *r) {
        return __builtin_mul_overflow(a, b, r);
    }
    """
    bint trends_add_ovf(int64_t a, int64_t b, int64_t *r) nogil
    bint trends_mul_ovf(int64_t a, int64_t b, int64_t *r) nogil

_OPS = {"<": 0, "<=": 1, ">": 2, ">=": 3, "==": 4, "!=": 5}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_MAX_EXACT = 2 ** 53
_INT64_MIN = -2 ** 63
_INT64_MAX = 2 ** 63 - 1


def _clause(plan, adj):
    """(pred var, succ var, op, pred attr, succ attr) of ``P.a op NEXT(S).b``, or None."""
    c = adj.cond
    if not isinstance(c, ceql.Compare):
        return None
    left, right, op = c.left, c.right, c.op
    if not (isinstance(left, ceql.EventAttr) and isinstance(right, ceql.EventAttr)):
        return None
    if left.next and not right.next:
        left, right, op = right, left, _FLIP[op]
    if left.next or not right.next:
        return None
    types = plan.schema.attribute_types()
    if not (types[left.attr].is_numeric and types[right.attr].is_numeric):
        return None
    return (adj.pred_var, adj.succ_var, _OPS[op], left.attr, right.attr)


def uncompiled_reason(plan):
    """Why the kernel does not compile ``plan`` (the reference then runs it), or None."""
    if any(_clause(plan, a) is None for a in plan.adjacent):
        return ("a predicate on adjacent events other than P.a op NEXT(S).b over numbers")
    if len(plan.vars) > MAX_VARS:
        return f"more than {MAX_VARS} variables"
    if plan.semantics == "next" and plan.next_algorithm == "paper":
        return "the paper's algorithm for skip-till-next-match (next_algorithm='paper')"
    return None


def make_aggregators(plan):
    """The compiled ``Kernel`` of the plan; only for plans ``uncompiled_reason`` accepts."""
    return Kernel(plan, [_clause(plan, a) for a in plan.adjacent])


# ---- memory ----------------------------------------------------------------------------------
cdef int safe_realloc(realloc_ptr *p, size_t nelems) except -1:
    """``p[0]`` reallocated to ``nelems`` elements (storage for at least one); MemoryError
    instead of NULL or of a size that overflows."""
    cdef size_t size = sizeof(p[0][0])
    cdef size_t nbytes = nelems * size
    if nelems and nbytes // size != nelems:
        raise MemoryError(f"cannot allocate {nelems} elements of {size} bytes")
    cdef realloc_ptr q = <realloc_ptr>PyMem_Realloc(p[0], nbytes if nbytes else 1)
    if q == NULL:
        raise MemoryError()
    p[0] = q
    return 0


cdef int vectors_reserve(VectorArena *arena, Py_ssize_t n) except -1:
    """Room for ``n`` vectors (exactly ``n`` the first time, then doubling)."""
    if n <= arena.capacity:
        return 0
    cdef Py_ssize_t cap = max(n, 2 * arena.capacity)
    cdef size_t nelems = cap * arena.nslots
    safe_realloc(&arena.ints, nelems)
    safe_realloc(&arena.reals, nelems)
    safe_realloc(&arena.has, nelems)
    arena.capacity = cap
    return 0


cdef void vectors_free(VectorArena *arena) noexcept:
    PyMem_Free(arena.ints)
    PyMem_Free(arena.reals)
    PyMem_Free(arena.has)
    arena.ints = NULL
    arena.reals = NULL
    arena.has = NULL
    arena.capacity = 0


# ---- vectors: the algebra of reference.Vectors on C slots -----------------------------------
cdef inline void _zero(Vector v, Py_ssize_t nslots) noexcept nogil:
    """The zero vector: count 0, sums 0, min/max the identity (has = 0)."""
    memset(v.ints, 0, nslots * sizeof(int64_t))
    memset(v.reals, 0, nslots * sizeof(double))
    memset(v.has, 0, nslots)


cdef inline void _copy(Vector dst, Vector src, Py_ssize_t nslots) noexcept nogil:
    memcpy(dst.ints, src.ints, nslots * sizeof(int64_t))
    memcpy(dst.reals, src.reals, nslots * sizeof(double))
    memcpy(dst.has, src.has, nslots)


cdef inline void _keep_min(number *slot, bint slot_has, number x) noexcept nogil:
    if not slot_has or x < slot[0]:
        slot[0] = x


cdef inline void _keep_max(number *slot, bint slot_has, number x) noexcept nogil:
    if not slot_has or x > slot[0]:
        slot[0] = x


cdef inline int _add(Vector acc, Vector x, const int *kinds, int nslots) noexcept nogil:
    """acc ⊕= x (``reference.Vectors.add``); 1 on int64 overflow."""
    cdef int s, kind
    cdef int64_t r
    for s in range(nslots):
        kind = kinds[s]
        if kind == SLOT_COUNT or kind == SLOT_SUM_INT:
            if trends_add_ovf(acc.ints[s], x.ints[s], &r):
                return 1
            acc.ints[s] = r
        elif kind == SLOT_SUM_REAL:
            acc.reals[s] = acc.reals[s] + x.reals[s]
            acc.has[s] = acc.has[s] | x.has[s]   # holds a float: the reference's sum starts as 0
        elif x.has[s]:
            if kind == SLOT_MIN_INT:
                _keep_min(&acc.ints[s], acc.has[s], x.ints[s])
            elif kind == SLOT_MAX_INT:
                _keep_max(&acc.ints[s], acc.has[s], x.ints[s])
            elif kind == SLOT_MIN_REAL:
                _keep_min(&acc.reals[s], acc.has[s], x.reals[s])
            else:
                _keep_max(&acc.reals[s], acc.has[s], x.reals[s])
            acc.has[s] = 1
    return 0


cdef inline int _extend(Vector out, Vector pred, int var, bint is_start,
                        const int64_t *value_ints, const double *value_reals, const int *kinds,
                        const uint64_t *slot_vars, int nslots) noexcept nogil:
    """out = the node's vector from its predecessors' vector ``pred`` and its values
    (``reference.Vectors.extend``); 0 (count 0: no vector), 1 (written) or -1 (overflow)."""
    cdef int64_t count, r = 0, t = 0
    cdef int s, kind
    if trends_add_ovf(<int64_t>is_start, pred.ints[0], &count):
        return -1
    if count == 0:
        return 0
    out.ints[0] = count
    out.reals[0] = 0.0
    out.has[0] = 0
    for s in range(1, nslots):
        kind = kinds[s]
        out.ints[s] = pred.ints[s]
        out.reals[s] = pred.reals[s]
        out.has[s] = pred.has[s]
        if not (slot_vars[s] >> var) & 1:
            continue
        if kind == SLOT_COUNT:
            if trends_add_ovf(pred.ints[s], count, &r):
                return -1
            out.ints[s] = r
        elif kind == SLOT_SUM_INT:
            if (trends_mul_ovf(value_ints[s], count, &t)
                    or trends_add_ovf(pred.ints[s], t, &r)):
                return -1
            out.ints[s] = r
        elif kind == SLOT_SUM_REAL:
            out.reals[s] = pred.reals[s] + value_reals[s] * <double>count
            out.has[s] = 1
        else:
            # out's slot is pred's: keep the node's value where it wins
            if kind == SLOT_MIN_INT:
                _keep_min(&out.ints[s], pred.has[s], value_ints[s])
            elif kind == SLOT_MAX_INT:
                _keep_max(&out.ints[s], pred.has[s], value_ints[s])
            elif kind == SLOT_MIN_REAL:
                _keep_min(&out.reals[s], pred.has[s], value_reals[s])
            else:
                _keep_max(&out.reals[s], pred.has[s], value_reals[s])
            out.has[s] = 1
    return 1


cdef inline bint _cmp(int op, double a, double b) noexcept nogil:
    if op == 0:
        return a < b
    if op == 1:
        return a <= b
    if op == 2:
        return a > b
    if op == 3:
        return a >= b
    if op == 4:
        return a == b
    return a != b


@cython.final
cdef class Kernel:
    """The compiled aggregators of one plan: constants, and the scratch space of one update
    (one thread at a time). Declared in trends.pxd."""

    def __init__(self, plan, clauses):
        cdef int v, k, s
        self.plan = plan
        self.reference_cls = reference.aggregator_class(plan)
        self.semantics = {"any": SEM_ANY, "next": SEM_NEXT,
                          "contiguous": SEM_CONTIGUOUS}[plan.semantics]
        self.nvars = len(plan.vars)
        self.start = plan.start
        self.end = plan.end
        types = plan.schema.attribute_types()
        self.nslots = 1 + len(plan.fields)
        self.group_vectors.nslots = self.nslots
        safe_realloc(&self.slot_kinds, self.nslots)
        safe_realloc(&self.slot_vars, self.nslots)
        self.slot_kinds[0] = SLOT_COUNT
        self.slot_vars[0] = 0
        attrs = [None]
        for s, f in enumerate(plan.fields, 1):
            is_int = f.attr is not None and types[f.attr] == AttrType.INT
            if f.kind == "cnt":
                self.slot_kinds[s] = SLOT_COUNT
            elif f.kind == "sum":
                self.slot_kinds[s] = SLOT_SUM_INT if is_int else SLOT_SUM_REAL
            elif f.kind == "min":
                self.slot_kinds[s] = SLOT_MIN_INT if is_int else SLOT_MIN_REAL
            else:
                self.slot_kinds[s] = SLOT_MAX_INT if is_int else SLOT_MAX_REAL
            m = 0
            for v in f.vars:
                m |= 1 << v
            self.slot_vars[s] = m
            attrs.append(f.attr)
        self.slot_attrs = attrs
        # predecessors in the reference's iteration order (same order => same double sums)
        safe_realloc(&self.preds, self.nvars * (self.nvars + 1))
        for v in range(self.nvars):
            preds = list(plan.preds[v])
            for k in range(len(preds)):
                self.preds[v * (self.nvars + 1) + k] = preds[k]
            self.preds[v * (self.nvars + 1) + len(preds)] = -1
        event_grained = 0
        for v in plan.event_grained:
            event_grained |= 1 << v
        self.event_grained = event_grained
        self.clause_list = clauses
        self.nclauses = len(clauses)
        safe_realloc(&self.clauses, max(self.nclauses, 1))
        for k in range(self.nclauses):
            (self.clauses[k].pred_var, self.clauses[k].succ_var,
             self.clauses[k].op) = clauses[k][:3]

    def __dealloc__(self):
        PyMem_Free(self.slot_kinds)
        PyMem_Free(self.slot_vars)
        PyMem_Free(self.preds)
        PyMem_Free(self.clauses)
        vectors_free(&self.group_vectors)
        PyMem_Free(self.group_counted)

    cdef int _reserve(self, Py_ssize_t nnodes) except -1:
        """Scratch room for a group of ``nnodes`` nodes."""
        if nnodes <= self.group_vectors.capacity:
            return 0
        vectors_reserve(&self.group_vectors, max(nnodes, 8))
        safe_realloc(&self.group_counted, self.group_vectors.capacity)
        return 0

    # ---- object mode: vectors as Python lists, the algebra of reference.Vectors -----------
    # (compiled loops over the slot kinds: calling reference.Vectors from the window's update
    # loop costs 5-7x on this path, which long Kleene windows take once their counts pass int64)
    cdef list zero_objects(self):
        """``reference.Vectors.zero``."""
        cdef int s, kind
        out = [0]
        for s in range(1, self.nslots):
            kind = self.slot_kinds[s]
            out.append(None if kind == SLOT_MIN_INT or kind == SLOT_MIN_REAL
                       or kind == SLOT_MAX_INT or kind == SLOT_MAX_REAL else 0)
        return out

    cdef void add_objects(self, list acc, list vec):
        """acc ⊕= vec (``reference.Vectors.add``)."""
        cdef int s, kind
        acc[0] = acc[0] + vec[0]
        for s in range(1, self.nslots):
            kind = self.slot_kinds[s]
            x = vec[s]
            if kind == SLOT_MIN_INT or kind == SLOT_MIN_REAL:
                if x is not None and (acc[s] is None or x < acc[s]):
                    acc[s] = x
            elif kind == SLOT_MAX_INT or kind == SLOT_MAX_REAL:
                if x is not None and (acc[s] is None or x > acc[s]):
                    acc[s] = x
            else:
                acc[s] = acc[s] + x

    cdef object extend_objects(self, list pred, int var, bint is_start, dict attrs):
        """The node's vector from its predecessors' (``reference.Vectors.extend``)."""
        cdef int s, kind
        count = (1 if is_start else 0) + pred[0]
        if count == 0:
            return None
        out = [count]
        for s in range(1, self.nslots):
            p = pred[s]
            if not (self.slot_vars[s] >> var) & 1:
                out.append(p)
                continue
            kind = self.slot_kinds[s]
            if kind == SLOT_COUNT:
                out.append(p + count)
                continue
            x = attrs[self.slot_attrs[s]]
            if kind == SLOT_SUM_INT or kind == SLOT_SUM_REAL:
                out.append(p + x * count)
            elif kind == SLOT_MIN_INT or kind == SLOT_MIN_REAL:
                out.append(x if p is None or x < p else p)
            else:
                out.append(x if p is None or x > p else p)
        return out

    def new(self):
        """A fresh window aggregator."""
        return _Window.__new__(_Window, self)

    def prepare(self, group):
        """One timestamp group ``[(vars, attrs), ...]`` of a partition -> its nodes as C
        arrays (values of the aggregated attributes and of the adjacent predicates)."""
        return _Group.__new__(_Group, self, group)

    def __reduce__(self):
        return (make_aggregators, (self.plan,))


@cython.final
cdef class _Group:
    """The nodes (event, variable) of one timestamp group, laid out for the kernel. Declared
    in trends.pxd."""

    def __cinit__(self, Kernel k, group):
        cdef Py_ssize_t nnodes = 0, j = 0, s, c, n, nc, o
        cdef int nslots = k.nslots, nclauses = k.nclauses, v, kind
        self.raw = group
        self.fits = True
        self.theta_exact = True
        self.n_events = len(group)
        for vs, _ in group:
            nnodes += len(vs)
        self.nnodes = nnodes
        self.node_attrs = []
        n = max(nnodes, 1)
        nc = max(nclauses, 1)
        # one block: the 8-byte arrays first, then the ints, then the flags (aligned)
        cdef size_t w = n * nslots, c2 = n * nc
        safe_realloc(&self.block, 8 * (2 * w + 2 * c2) + 4 * n + 2 * c2)
        cdef char *b = self.block
        self.value_ints = <int64_t *>b
        self.value_reals = <double *>(b + 8 * w)
        self.pred_side = <double *>(b + 16 * w)
        self.succ_side = <double *>(b + 16 * w + 8 * c2)
        self.node_var = <int *>(b + 16 * w + 16 * c2)
        self.pred_known = <unsigned char *>(b + 16 * w + 16 * c2 + 4 * n)
        self.succ_known = self.pred_known + c2
        memset(self.pred_known, 0, 2 * c2)
        slot_attrs = k.slot_attrs
        clauses = k.clause_list
        for vs, attrs in group:
            for v in vs:
                self.node_var[j] = v
                self.node_attrs.append(attrs)
                for s in range(1, nslots):
                    kind = k.slot_kinds[s]
                    self.value_ints[j * nslots + s] = 0
                    self.value_reals[j * nslots + s] = 0.0
                    if kind == SLOT_COUNT or not (k.slot_vars[s] >> v) & 1:
                        continue
                    x = attrs[slot_attrs[s]]
                    if kind == SLOT_SUM_REAL or kind == SLOT_MIN_REAL or kind == SLOT_MAX_REAL:
                        self.value_reals[j * nslots + s] = x
                    elif _INT64_MIN <= x <= _INT64_MAX:
                        self.value_ints[j * nslots + s] = x
                    else:
                        self.fits = False
                for c in range(nclauses):
                    pred_var, succ_var, _, pred_attr, succ_attr = clauses[c]
                    o = j * nclauses + c
                    if v == pred_var and not _compared_value(
                            attrs, pred_attr, &self.pred_side[o], &self.pred_known[o]):
                        self.theta_exact = False
                    if v == succ_var and not _compared_value(
                            attrs, succ_attr, &self.succ_side[o], &self.succ_known[o]):
                        self.theta_exact = False
                j += 1

    def __dealloc__(self):
        PyMem_Free(self.block)


cdef int _compared_value(object attrs, object attr, double *value, unsigned char *known) except -1:
    """Store ``attrs[attr]``, when present, as one side of an adjacent predicate; 0 when it is
    an integer beyond 2^53 (not exact as a double: only the reference compares it exactly)."""
    x = attrs.get(attr)
    if x is None:
        return 1
    if type(x) is int and abs(x) > _MAX_EXACT:
        return 0
    value[0] = x
    known[0] = 1
    return 1


cdef inline bint _theta(const double *stored_side, const unsigned char *stored_known,
                        int pred_var, const double *succ_side, const unsigned char *succ_known,
                        int succ_var, int nclauses, const Clause *clauses) noexcept nogil:
    """Every adjacent predicate from ``pred_var`` to ``succ_var`` holds between the stored node
    (its predecessor-side values) and the new node (its successor-side values)."""
    cdef int c
    for c in range(nclauses):
        if clauses[c].pred_var == pred_var and clauses[c].succ_var == succ_var:
            if not (stored_known[c] and succ_known[c]):
                return False
            if not _cmp(clauses[c].op, stored_side[c], succ_side[c]):
                return False
    return True


cdef Vector NO_VECTOR   # (object mode: no C vector; every pointer NULL)


@cython.final
cdef class _Window:
    """The online aggregate state of one window of one partition (see the module doc;
    declared in trends.pxd).

    Vectors live in C arrays (int64 mode) until an update would overflow int64; the window
    then turns them into Python lists of exact numbers, the reference's vector format
    (object mode), and the same update loop goes on with Python arithmetic.
    Predicates on adjacent events are still evaluated on the C arrays of predicate values."""

    def __cinit__(self, Kernel k):
        self.k = k
        self.reference = None
        self.node_attrs = []
        self.rows.nslots = k.nslots
        self.node_vectors.nslots = k.nslots
        vectors_reserve(&self.rows, 2 * (k.nvars + 2))  # vars..., PRED, FINAL, and a backup
        _zero(vector_at(&self.rows, 0), self.rows.capacity * k.nslots)  # min/max: has = 0

    def __dealloc__(self):
        vectors_free(&self.rows)
        vectors_free(&self.node_vectors)
        PyMem_Free(self.node_var)
        PyMem_Free(self.node_state)
        PyMem_Free(self.node_pred_side)
        PyMem_Free(self.node_pred_known)

    cdef int _grow(self, Py_ssize_t need) except -1:
        """Room for ``need`` nodes in the arena (doubling)."""
        if need <= self.capacity:
            return 0
        cdef Py_ssize_t cap = max(need, 2 * self.capacity, 4)
        cdef Py_ssize_t nc = max(self.k.nclauses, 1)
        if not self.object_mode:
            vectors_reserve(&self.node_vectors, cap)
        safe_realloc(&self.node_var, cap)
        safe_realloc(&self.node_state, cap)
        safe_realloc(&self.node_pred_side, cap * nc)
        safe_realloc(&self.node_pred_known, cap * nc)
        self.capacity = cap
        return 0

    cdef void _push(self, _Group g, Py_ssize_t j, Vector vec, object vec_object):
        """Append node j of g to the arena with its vector (``vec_object`` in object mode,
        else the C vector ``vec``); capacity is reserved by the caller."""
        cdef Kernel k = self.k
        cdef int nc = k.nclauses
        cdef Py_ssize_t q = self.nnodes
        if self.object_mode:
            self.node_objects.append(vec_object)
        else:
            _copy(vector_at(&self.node_vectors, q), vec, k.nslots)
        self.node_var[q] = g.node_var[j]
        self.node_state[q] = LIVE
        if nc:
            memcpy(self.node_pred_side + q * nc, g.pred_side + j * nc, nc * sizeof(double))
            memcpy(self.node_pred_known + q * nc, g.pred_known + j * nc, nc)
        self.node_attrs.append(g.node_attrs[j])
        self.nnodes = q + 1

    def update(self, _Group g):
        """Apply one timestamp group (prepared by the kernel) to this window."""
        if self.reference is None and not g.theta_exact:
            self._hand_over()  # comparison operands beyond 2^53: only Python compares exactly
        if self.reference is not None:
            self.reference.update(g.raw)
            return
        if not self.object_mode:
            if g.fits and self._update(g) == 0:
                return
            self._to_objects()
        self._update(g)

    cdef int _update(self, _Group g) except -1:
        """0, or (int64 mode only) 1 when int64 would overflow -- then the state is as
        before the group."""
        cdef Kernel k = self.k
        cdef int ns = k.nslots, nv = k.nvars, nc = k.nclauses, semantics = k.semantics
        cdef int v, u, q, rc = 0
        cdef Py_ssize_t m = g.nnodes, j, x, n0 = self.nnodes, first_live0 = self.first_live
        # rows: vars..., PRED (a node's predecessors), FINAL (every trend so far), then BACKUP
        # (the nv + 2 rows before the group)
        cdef Py_ssize_t PRED = nv, FINAL = nv + 1, BACKUP = nv + 2
        cdef Vector pred = vector_at(&self.rows, PRED)
        cdef Vector node
        cdef uint64_t event_grained = k.event_grained, vars_taken = 0
        cdef const int *kinds = k.slot_kinds
        cdef const int *pl
        cdef bint object_mode = self.object_mode
        cdef list row_objects = self.row_objects, node_objects = self.node_objects
        cdef list group_objects = None
        cdef list pred_object = None
        k._reserve(m)
        if event_grained or semantics == SEM_CONTIGUOUS:
            self._grow(self.nnodes + m)   # the arena may take every node of the group
        if object_mode:
            group_objects = [None] * m
        else:
            # the rows the apply phase writes, to restore on overflow
            _copy(vector_at(&self.rows, BACKUP), vector_at(&self.rows, 0), (nv + 2) * ns)
        # ---- compute the group's node vectors from the state before the group ------------
        for j in range(m):
            v = g.node_var[j]
            if object_mode:
                pred_object = k.zero_objects()
            else:
                _zero(pred, ns)
            if semantics == SEM_CONTIGUOUS:
                for x in range(self.nnodes):
                    u = self.node_var[x]
                    if not _is_pred(k.preds + v * (nv + 1), u):
                        continue
                    if nc and not _theta(self.node_pred_side + x * nc,
                                         self.node_pred_known + x * nc, u,
                                         g.succ_side + j * nc, g.succ_known + j * nc, v, nc,
                                         k.clauses):
                        continue
                    if object_mode:
                        k.add_objects(pred_object, node_objects[x])
                    elif _add(pred, vector_at(&self.node_vectors, x), kinds, ns):
                        rc = 1
                        break
            else:
                pl = k.preds + v * (nv + 1)
                while pl[0] >= 0 and rc == 0:
                    u = pl[0]
                    pl += 1
                    if (event_grained >> u) & 1:
                        for x in range(self.first_live, self.nnodes):
                            if (self.node_state[x] != DEAD and self.node_var[x] == u
                                    and _theta(self.node_pred_side + x * nc,
                                               self.node_pred_known + x * nc, u,
                                               g.succ_side + j * nc, g.succ_known + j * nc, v,
                                               nc, k.clauses)):
                                if object_mode:
                                    k.add_objects(pred_object, node_objects[x])
                                elif _add(pred, vector_at(&self.node_vectors, x), kinds, ns):
                                    rc = 1
                                    break
                                if semantics == SEM_NEXT:
                                    self.node_state[x] = TAKEN
                    else:
                        if object_mode:
                            k.add_objects(pred_object, row_objects[u])
                        elif _add(pred, vector_at(&self.rows, u), kinds, ns):
                            rc = 1
                        vars_taken |= (<uint64_t>1) << u
            if rc:
                break
            if object_mode:
                group_objects[j] = k.extend_objects(pred_object, v, v == k.start, g.node_attrs[j])
                k.group_counted[j] = group_objects[j] is not None
                continue
            q = _extend(vector_at(&k.group_vectors, j), pred, v, v == k.start,
                        g.value_ints + j * ns, g.value_reals + j * ns, kinds, k.slot_vars, ns)
            if q < 0:
                rc = 1
                break
            k.group_counted[j] = q
        # ---- apply the group's updates ---------------------------------------------------
        if rc == 0:
            if semantics == SEM_NEXT:
                for u in range(nv):
                    if (vars_taken >> u) & 1:
                        if object_mode:
                            row_objects[u] = k.zero_objects()
                        else:
                            _zero(vector_at(&self.rows, u), ns)
            for j in range(m):
                if not k.group_counted[j]:
                    continue
                v = g.node_var[j]
                if object_mode:
                    if v == k.end:
                        k.add_objects(row_objects[nv + 1], group_objects[j])
                    if semantics == SEM_CONTIGUOUS:
                        continue
                    if (event_grained >> v) & 1:
                        self._push(g, j, NO_VECTOR, group_objects[j])
                    else:
                        k.add_objects(row_objects[v], group_objects[j])
                    continue
                node = vector_at(&k.group_vectors, j)
                if v == k.end and _add(vector_at(&self.rows, FINAL), node, kinds, ns):
                    rc = 1
                    break
                if semantics == SEM_CONTIGUOUS:
                    continue
                if (event_grained >> v) & 1:
                    self._push(g, j, node, None)
                elif _add(vector_at(&self.rows, v), node, kinds, ns):
                    rc = 1
                    break
        if rc:  # (int64 mode) restore the state before the group
            _copy(vector_at(&self.rows, 0), vector_at(&self.rows, BACKUP), (nv + 2) * ns)
            for x in range(first_live0, n0):
                if self.node_state[x] == TAKEN:
                    self.node_state[x] = LIVE
            del self.node_attrs[n0:]
            self.nnodes = n0
            return 1
        if semantics == SEM_CONTIGUOUS:
            # the next timestamp may extend this group's nodes -- all of them when the event
            # is alone at its timestamp, else only the trends starting here
            self.nnodes = 0
            self.first_live = 0
            del self.node_attrs[:]
            if object_mode:
                del node_objects[:]
            for j in range(m):
                if not k.group_counted[j]:
                    continue
                node = vector_at(&k.group_vectors, j)
                if g.n_events == 1:
                    self._push(g, j, node, group_objects[j] if object_mode else None)
                elif g.node_var[j] == k.start:
                    if object_mode:
                        self._push(g, j, NO_VECTOR, k.extend_objects(
                            k.zero_objects(), k.start, True, g.node_attrs[j]))
                        continue
                    _zero(pred, ns)
                    _extend(node, pred, k.start, True, g.value_ints + j * ns,
                            g.value_reals + j * ns, kinds, k.slot_vars, ns)  # count 1: no overflow
                    self._push(g, j, node, None)
        elif semantics == SEM_NEXT:
            for x in range(first_live0, n0):
                if self.node_state[x] == TAKEN:
                    self.node_state[x] = DEAD
            while self.first_live < self.nnodes and self.node_state[self.first_live] == DEAD:
                self.first_live += 1
            if self.first_live > 32 and 2 * self.first_live > self.nnodes:
                self._compact()
        return 0

    cdef void _compact(self):
        """Drop the dead nodes of the waiting set (NEXT), keeping the live ones in order."""
        cdef Kernel k = self.k
        cdef int ns = k.nslots, nc = k.nclauses
        cdef Py_ssize_t x, q = 0
        keep = []
        keep_vectors = []
        for x in range(self.first_live, self.nnodes):
            if self.node_state[x] == DEAD:
                continue
            if q != x:
                if not self.object_mode:
                    _copy(vector_at(&self.node_vectors, q), vector_at(&self.node_vectors, x), ns)
                self.node_var[q] = self.node_var[x]
                self.node_state[q] = self.node_state[x]
                if nc:
                    memcpy(self.node_pred_side + q * nc, self.node_pred_side + x * nc,
                           nc * sizeof(double))
                    memcpy(self.node_pred_known + q * nc, self.node_pred_known + x * nc, nc)
            keep.append(self.node_attrs[x])
            if self.object_mode:
                keep_vectors.append(self.node_objects[x])
            q += 1
        self.node_attrs = keep
        if self.object_mode:
            self.node_objects = keep_vectors
        self.nnodes = q
        self.first_live = 0

    cdef object _vector(self, Vector vec):
        """A C vector in the reference's format."""
        cdef Kernel k = self.k
        cdef int s, kind
        out = [vec.ints[0]]
        for s in range(1, k.nslots):
            kind = k.slot_kinds[s]
            if kind == SLOT_COUNT or kind == SLOT_SUM_INT:
                out.append(vec.ints[s])
            elif kind == SLOT_SUM_REAL:
                out.append(vec.reals[s] if vec.has[s] else 0)  # the reference's sum: int 0 first
            elif not vec.has[s]:
                out.append(None)
            elif kind == SLOT_MIN_INT or kind == SLOT_MAX_INT:
                out.append(vec.ints[s])
            else:
                out.append(vec.reals[s])
        return out

    cdef object _row(self, Py_ssize_t r):
        if self.object_mode:
            return list(self.row_objects[r])
        return self._vector(vector_at(&self.rows, r))

    cdef object _node(self, Py_ssize_t x):
        if self.object_mode:
            return list(self.node_objects[x])
        return self._vector(vector_at(&self.node_vectors, x))

    cdef void _to_objects(self):
        """int64 mode -> object mode: the vectors as Python lists of exact numbers."""
        cdef Py_ssize_t x
        self.row_objects = [self._row(r) for r in range(self.k.nvars + 2)]
        self.node_objects = [self._node(x) for x in range(self.nnodes)]
        self.object_mode = True
        vectors_free(&self.node_vectors)

    cdef void _hand_over(self):
        """Hand the state over to the reference aggregator."""
        cdef Kernel k = self.k
        cdef int nv = k.nvars, u
        cdef Py_ssize_t x
        agg = k.reference_cls(k.plan)
        agg.final = self._row(nv + 1)
        if k.semantics == SEM_CONTIGUOUS:
            agg.carried = [(self.node_var[x], self.node_attrs[x], self._node(x))
                           for x in range(self.nnodes)]
        else:
            per_var = [self._row(u) for u in range(nv)]
            nodes = [[] for _ in range(nv)]
            for x in range(self.nnodes):
                if self.node_state[x] != DEAD:
                    nodes[self.node_var[x]].append((self.node_attrs[x], self._node(x)))
            if k.semantics == SEM_ANY:
                agg.per_var, agg.stored = per_var, nodes
            else:
                agg.waiting, agg.waiting_events = per_var, nodes
        self.reference = agg

    # ---- pickling: the state in the reference's vector format, whatever the mode ----------
    def __reduce__(self):
        cdef Py_ssize_t x
        if self.reference is not None:
            return (_restore_window, (self.k, ("reference", self.reference)))
        rows = [self._row(r) for r in range(self.k.nvars + 2)]
        nodes = [(self.node_var[x], self.node_attrs[x], self._node(x))
                 for x in range(self.first_live, self.nnodes) if self.node_state[x] != DEAD]
        return (_restore_window, (self.k, ("vectors", rows, nodes)))

    cdef void _import(self, list rows, list nodes) except *:
        """Set the state from reference-format vectors: int64 mode when every number fits,
        else object mode."""
        cdef Kernel k = self.k
        cdef int nc = k.nclauses, c, var
        cdef Py_ssize_t r, q
        fits = all(_fits(k, vec) for vec in rows) and all(_fits(k, n[2]) for n in nodes)
        if not fits:
            self.object_mode = True
            self.row_objects = [list(vec) for vec in rows]
            self.node_objects = []
        else:
            for r in range(len(rows)):
                _store(k, rows[r], vector_at(&self.rows, r))
        self._grow(len(nodes))
        for q in range(len(nodes)):
            var, attrs, vec = nodes[q]
            if self.object_mode:
                self.node_objects.append(list(vec))
            else:
                _store(k, vec, vector_at(&self.node_vectors, q))
            self.node_var[q] = var
            self.node_state[q] = LIVE
            for c in range(nc):  # the predecessor-side values, as _Group lays them out
                self.node_pred_known[q * nc + c] = 0
                self.node_pred_side[q * nc + c] = 0.0
                if k.clause_list[c][0] == var:
                    x = attrs.get(k.clause_list[c][3])
                    if x is not None:
                        self.node_pred_side[q * nc + c] = x
                        self.node_pred_known[q * nc + c] = 1
            self.node_attrs.append(attrs)
        self.nnodes = len(nodes)

    def result(self):
        """The aggregate vector over every trend ending in the window so far."""
        if self.reference is not None:
            return self.reference.result()
        return self._row(self.k.nvars + 1)

    def stored_events(self):
        """Events this aggregator holds (T_e nodes; carried nodes under contiguous)."""
        cdef Py_ssize_t x, live = 0
        if self.reference is not None:
            return self.reference.stored_events()
        for x in range(self.first_live, self.nnodes):
            if self.node_state[x] != DEAD:
                live += 1
        return live

    @property
    def mode(self):
        """"int64", "objects" (exact Python numbers, compiled loop) or "reference"."""
        return ("reference" if self.reference is not None
                else "objects" if self.object_mode else "int64")

    @property
    def promoted(self):
        """True once this window has left int64 arithmetic."""
        return self.reference is not None or self.object_mode


def _restore_window(Kernel k, state):
    """A window aggregator from its pickled state (see ``_Window.__reduce__``)."""
    cdef _Window w = k.new()
    if state[0] == "reference":
        w.reference = state[1]
    else:
        w._import(state[1], state[2])
    return w


cdef bint _fits(Kernel k, list vec):
    """Whether a reference-format vector has a C form: integers within int64."""
    cdef int s, kind
    for s in range(k.nslots):
        kind = k.slot_kinds[s]
        x = vec[s]
        if (kind == SLOT_COUNT or kind == SLOT_SUM_INT or kind == SLOT_MIN_INT
                or kind == SLOT_MAX_INT) and x is not None \
                and not (_INT64_MIN <= x <= _INT64_MAX):
            return False
    return True


cdef void _store(Kernel k, list vec, Vector out) except *:
    """Write a reference-format vector (that fits) into a C vector."""
    cdef int s, kind
    for s in range(k.nslots):
        kind = k.slot_kinds[s]
        x = vec[s]
        out.ints[s] = 0
        out.reals[s] = 0.0
        out.has[s] = 0
        if kind == SLOT_COUNT or kind == SLOT_SUM_INT:
            out.ints[s] = x
        elif kind == SLOT_SUM_REAL:
            out.reals[s] = x
            out.has[s] = type(x) is float  # the reference's sum is int 0 until a float arrives
        elif x is not None:
            out.has[s] = 1
            if kind == SLOT_MIN_INT or kind == SLOT_MAX_INT:
                out.ints[s] = x
            else:
                out.reals[s] = x


cdef inline bint _is_pred(const int *preds, int u) noexcept nogil:
    while preds[0] >= 0:
        if preds[0] == u:
            return True
        preds += 1
    return False
