# cython: language_level=3
"""Compiled twin of ``cercore.trends.runner.PythonRunner`` over ``cercore.trends.reference``'s
aggregators: the same timestamp groups, windows and online aggregators (skip-till-any-match
type-grained and mixed, exact skip-till-next-match, contiguous), with the same outputs.
``trends.pxd`` is its C API: the vector layout, the structs and the declarations of the classes
below.

``Runner(plan, reference_cls)`` is a ``cercore.interface.trends.TrendRunner``: it reads a batch as typed arrays
(event times, partition ids, variable masks, and the columns of the attributes that are
aggregated or compared) in one loop, keeps the current timestamp's events in C arrays, and
applies each partition's group to its windows' aggregators -- no Python object per event.
``Kernel(plan, reference_cls)`` holds the plan's constants; ``Kernel.new()`` starts a window aggregator of
the plan's semantics (``_AnyWindow``, ``_NextWindow``, ``_ContiguousWindow``, the twins of the
reference's classes), whose ``update(group)`` / ``result()`` / ``stored_events()`` mirror the
reference's.

Storage is C arrays owned by each window aggregator: ``rows``, ``nvars + 2`` vectors (one per
variable, then the predecessor accumulator PRED and the final vector FINAL) and a backup of
them, and a node arena, doubling on growth, for the event-grained nodes (stored T_e events under
ANY, waiting T_e events under NEXT, the previous timestamp's nodes under contiguous).

Counts and integer sums are int64 with checked arithmetic (``__builtin_*_overflow``). When an
update would overflow, the window restores its state from before the update and goes on in
*object mode*: its vectors become Python lists of exact numbers in the reference's format,
updated by the same compiled loop with Python arithmetic (never a silent wrap, never a replay).
Adjacent predicates ``f(P) op g(NEXT(S))`` compute each side from one event's attributes with
CEQL's arithmetic (``arithmetic.pxd``: int64 exactly, truncating division, a division by zero
null) and compare the sides as doubles (CEQL's meaning: an int beside a double is read as a
double); a group whose side overflows int64 or is an integer beyond 2^53 (not exact as a double)
hands the window to the Python reference itself, which reads the stored nodes' events' own
values. Double sums use the reference's operation order, so they are equal to the bit. Shapes
the kernel does not compile (predicates on adjacent events whose sides are not numbers and
arithmetic over numeric attributes of P alone and of NEXT(S) alone, more than 62 variables,
and the paper's compatibility mode for skip-till-next-match) run the Python runner.
"""

cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy, memset

from cercore_fast.arithmetic cimport (MAX_STEPS, VALUE_OK, VALUE_OVERFLOW, add_overflows,
                                      compute, load_steps, mul_overflows)
from cercore_fast.comparisons cimport compare

import numpy as np

from cercore.predicates import COMPARISON_CODES as _OPS
from cercore.interface.constants import INT64_MAX as _INT64_MAX
from cercore.interface.constants import INT64_MIN as _INT64_MIN
from cercore.interface.constants import NO_PARTITION as _NO_PARTITION
from cercore.schema import AttrType
from cercore.interface.trends import IN_STREAM as _IN_STREAM

cdef extern from *:
    """
    static inline int64_t trends_first_window(int64_t t, int64_t size, int64_t slide) {
        /* the smallest k with k*slide + size > t: floor((t - size) / slide) + 1, in 128 bits
           (t - size leaves int64 for times near INT64_MIN) */
        __int128 d = (__int128)t - size;
        __int128 q = d / slide;
        if (d % slide != 0 && d < 0) q -= 1;
        return (int64_t)(q + 1);
    }
    static inline int64_t trends_floor_div(int64_t a, int64_t b) {
        int64_t q = a / b;
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
    }
    static inline int64_t trends_window_end(int64_t k, int64_t size, int64_t slide) {
        /* k*slide + size, saturated at INT64_MAX (no time reaches a later end) */
        __int128 e = (__int128)k * slide + size;
        return e > INT64_MAX ? INT64_MAX : (int64_t)e;
    }
    static inline int trends_window_ends_by(int64_t k, int64_t size, int64_t slide,
                                            int64_t t) {
        return (__int128)k * slide + size <= t;
    }
    """
    int64_t trends_first_window(int64_t t, int64_t size, int64_t slide) nogil
    int64_t trends_floor_div(int64_t a, int64_t b) nogil
    int64_t trends_window_end(int64_t k, int64_t size, int64_t slide) nogil
    bint trends_window_ends_by(int64_t k, int64_t size, int64_t slide, int64_t t) nogil

_MAX_EXACT = 2 ** 53
cdef int64_t MAX_EXACT = 9007199254740992  # 2^53: larger integers are not exact as doubles


cdef void _side(Side *o, form, tuple attrs, dict index) except *:
    """Fill ``o`` from one side of ``AdjacentPredicate.operands``: a compiled operand
    (``cercore.runtime.event_predicates.compiled_operand``) whose terms read ``attrs``."""
    cdef int32_t q
    leaves = load_steps(o.steps, &o.n, form)
    o.nleaves = len(leaves)
    for q, (kind, value, is_double) in enumerate(leaves):
        o.leaf_attr[q] = index[attrs[value]] if kind == "term" else -1
        o.leaf_d[q] = 0.0 if kind == "term" else <double>value
        o.leaf_i[q] = 0 if kind == "term" or is_double else <int64_t>value


cdef inline bint _side_value(const Side *s, const int64_t *ints, const double *reals,
                             const unsigned char *known, const unsigned char *attr_is_int,
                             double *out, unsigned char *has) noexcept nogil:
    """A side's value on one event's value attributes, as a double (how the clause is
    compared), into ``out``; ``has`` 0 when it is null (an attribute without a value, a
    division by zero: the clause does not hold). False when it is not exact: int64 overflow,
    or an integer beyond 2^53 (only the reference's exact ints decide)."""
    cdef double ld[MAX_STEPS]
    cdef int64_t li[MAX_STEPS]
    cdef double d = 0.0
    cdef int64_t i = 0
    cdef int32_t q, a, code
    has[0] = 0
    out[0] = 0.0
    for q in range(s.nleaves):
        a = s.leaf_attr[q]
        if a < 0:
            ld[q] = s.leaf_d[q]
            li[q] = s.leaf_i[q]
        elif not known[a]:
            return True
        elif attr_is_int[a]:
            li[q] = ints[a]
            ld[q] = <double>ints[a]
        else:
            ld[q] = reals[a]
            li[q] = 0
    code = compute(s.steps, s.n, ld, li, &d, &i)
    if code != VALUE_OK:
        return code != VALUE_OVERFLOW
    if s.steps[s.n - 1].is_double:
        out[0] = d
    elif i > MAX_EXACT or i < -MAX_EXACT:
        return False
    else:
        out[0] = <double>i
    has[0] = 1
    return True


def uncompiled_reason(plan):
    """Why the kernel does not compile ``plan`` (the reference then runs it), or None."""
    if any(a.operands is None for a in plan.adjacent):
        return ("a predicate on adjacent events other than a comparison between numbers and "
                "arithmetic over P's numeric attributes on one side and NEXT(S)'s on the other")
    if len(plan.vars) > MAX_VARS:
        return f"more than {MAX_VARS} variables"
    if plan.semantics == "next" and plan.next_algorithm == "paper":
        return "the paper's algorithm for skip-till-next-match (next_algorithm='paper')"
    return None


def make_aggregators(plan, reference_cls):
    """The compiled ``Kernel`` of the plan; only for plans ``uncompiled_reason`` accepts.
    ``reference_cls``: the reference aggregator class of the plan, the kernel's hand-over
    (given by the caller: the kernels depend on the trend interface, not on its reference)."""
    return Kernel(plan, reference_cls)


cdef int64_t INT64_MAX_ = 9223372036854775807


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
            if add_overflows(acc.ints[s], x.ints[s], &r):
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
    if add_overflows(<int64_t>is_start, pred.ints[0], &count):
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
            if add_overflows(pred.ints[s], count, &r):
                return -1
            out.ints[s] = r
        elif kind == SLOT_SUM_INT:
            if (mul_overflows(value_ints[s], count, &t)
                    or add_overflows(pred.ints[s], t, &r)):
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


@cython.final
cdef class Kernel:
    """The compiled aggregators of one plan: constants, and the scratch space of one update
    (one thread at a time). Declared in trends.pxd."""

    def __init__(self, plan, reference_cls):
        cdef int v, k, s
        self.plan = plan
        self.reference_cls = reference_cls
        self.semantics = {"any": SEM_ANY, "next": SEM_NEXT,
                          "contiguous": SEM_CONTIGUOUS}[plan.semantics]
        self.nvars = len(plan.vars)
        self.start = plan.start
        self.end = plan.end
        types = plan.schema.attribute_types()
        # the value attributes: what a runner copies of each event (aggregated, compared)
        self.attrs = plan.value_attributes()
        index = {a: i for i, a in enumerate(self.attrs)}
        self.nattrs = len(self.attrs)
        safe_realloc(&self.attr_is_int, max(self.nattrs, 1))
        for k in range(self.nattrs):
            self.attr_is_int[k] = types[self.attrs[k]] == AttrType.INT
        self.nslots = 1 + len(plan.fields)
        self.group_vectors.nslots = self.nslots
        safe_realloc(&self.slot_kinds, self.nslots)
        safe_realloc(&self.slot_vars, self.nslots)
        safe_realloc(&self.slot_attr, self.nslots)
        self.slot_kinds[0] = SLOT_COUNT
        self.slot_vars[0] = 0
        self.slot_attr[0] = -1
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
            self.slot_attr[s] = index[f.attr] if f.attr is not None else -1
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
        self.nclauses = len(plan.adjacent)
        safe_realloc(&self.clauses, max(self.nclauses, 1))
        for k, adj in enumerate(plan.adjacent):
            op, pred_side, succ_side = adj.operands
            self.clauses[k].pred_var, self.clauses[k].succ_var = adj.pred_var, adj.succ_var
            self.clauses[k].op = _OPS[op]
            _side(&self.clauses[k].pred, pred_side[0], pred_side[1], index)
            _side(&self.clauses[k].succ, succ_side[0], succ_side[1], index)

    def __dealloc__(self):
        PyMem_Free(self.slot_kinds)
        PyMem_Free(self.slot_vars)
        PyMem_Free(self.slot_attr)
        PyMem_Free(self.preds)
        PyMem_Free(self.clauses)
        PyMem_Free(self.attr_is_int)
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

    cdef object extend_objects(self, list pred, int var, bint is_start, _Group g, Py_ssize_t j):
        """Node j's vector from its predecessors' (``reference.Vectors.extend``)."""
        cdef int s, kind, ns = self.nslots
        cdef object x  # (untyped, Cython would infer a double from its int64 and double reads)
        count = (1 if is_start else 0) + pred[0]
        if count == 0:
            return None
        out = [count]
        for s in range(1, ns):
            p = pred[s]
            if not (self.slot_vars[s] >> var) & 1:
                out.append(p)
                continue
            kind = self.slot_kinds[s]
            if kind == SLOT_COUNT:
                out.append(p + count)
                continue
            if kind == SLOT_SUM_INT or kind == SLOT_MIN_INT or kind == SLOT_MAX_INT:
                x = g.value_ints[j * ns + s]
            else:
                x = g.value_reals[j * ns + s]
            if kind == SLOT_SUM_INT or kind == SLOT_SUM_REAL:
                out.append(p + x * count)
            elif kind == SLOT_MIN_INT or kind == SLOT_MIN_REAL:
                out.append(x if p is None or x < p else p)
            else:
                out.append(x if p is None or x > p else p)
        return out

    def new(self):
        """A fresh window aggregator of the plan's semantics."""
        if self.semantics == SEM_ANY:
            return _AnyWindow.__new__(_AnyWindow, self)
        if self.semantics == SEM_NEXT:
            return _NextWindow.__new__(_NextWindow, self)
        return _ContiguousWindow.__new__(_ContiguousWindow, self)

    def __reduce__(self):
        return (make_aggregators, (self.plan, self.reference_cls))


@cython.final
cdef class _Group:
    """The nodes (event, variable) of one timestamp group of one partition, laid out for the
    kernel: scratch space a runner refills for each group. Declared in trends.pxd."""

    def __cinit__(self, Kernel k):
        self.k = k

    def __dealloc__(self):
        PyMem_Free(self.node_var)
        PyMem_Free(self.node_event)
        PyMem_Free(self.value_ints)
        PyMem_Free(self.value_reals)
        PyMem_Free(self.pred_side)
        PyMem_Free(self.succ_side)
        PyMem_Free(self.pred_known)
        PyMem_Free(self.succ_known)
        PyMem_Free(self.event_vars)
        PyMem_Free(self.event_ints)
        PyMem_Free(self.event_reals)
        PyMem_Free(self.event_known)

    cdef int _fill(self, Runner r, const int64_t *events, Py_ssize_t n) except -1:
        """The group of the runner's pending events ``events[:n]`` (one partition, in arrival
        order): one node per (event, variable it matches), variables in increasing order."""
        cdef Kernel k = self.k
        cdef Py_ssize_t i, j = 0, e, nnodes = 0, cap
        cdef int ns = k.nslots, nc = k.nclauses, na = k.nattrs, s, c, a, v, kind
        cdef uint64_t mask
        for i in range(n):
            mask = r.pending_vars[events[i]]
            while mask:
                nnodes += 1
                mask &= mask - 1
        if nnodes > self.capacity:
            cap = max(nnodes, 2 * self.capacity, 4)
            safe_realloc(&self.node_var, cap)
            safe_realloc(&self.node_event, cap)
            safe_realloc(&self.value_ints, cap * ns)
            safe_realloc(&self.value_reals, cap * ns)
            safe_realloc(&self.pred_side, cap * max(nc, 1))
            safe_realloc(&self.succ_side, cap * max(nc, 1))
            safe_realloc(&self.pred_known, cap * max(nc, 1))
            safe_realloc(&self.succ_known, cap * max(nc, 1))
            self.capacity = cap
        if n > self.events_capacity:
            cap = max(n, 2 * self.events_capacity, 4)
            safe_realloc(&self.event_vars, cap)
            safe_realloc(&self.event_ints, cap * max(na, 1))
            safe_realloc(&self.event_reals, cap * max(na, 1))
            safe_realloc(&self.event_known, cap * max(na, 1))
            self.events_capacity = cap
        self.nnodes = nnodes
        self.n_events = n
        self.theta_exact = True
        for i in range(n):
            e = events[i]
            mask = r.pending_vars[e]
            self.event_vars[i] = mask
            if na:
                memcpy(self.event_ints + i * na, r.pending_ints + e * na, na * sizeof(int64_t))
                memcpy(self.event_reals + i * na, r.pending_reals + e * na, na * sizeof(double))
                memcpy(self.event_known + i * na, r.pending_known + e * na, na)
            v = 0
            while mask:
                if mask & 1:
                    self.node_var[j] = v
                    self.value_ints[j * ns] = 0
                    self.value_reals[j * ns] = 0.0
                    for s in range(1, ns):
                        self.value_ints[j * ns + s] = 0
                        self.value_reals[j * ns + s] = 0.0
                        a = k.slot_attr[s]
                        if a < 0 or not (k.slot_vars[s] >> v) & 1:
                            continue
                        kind = k.slot_kinds[s]
                        if k.attr_is_int[a]:
                            if kind == SLOT_SUM_REAL or kind == SLOT_MIN_REAL \
                                    or kind == SLOT_MAX_REAL:
                                self.value_reals[j * ns + s] = <double>r.pending_ints[e * na + a]
                            else:
                                self.value_ints[j * ns + s] = r.pending_ints[e * na + a]
                        else:
                            self.value_reals[j * ns + s] = r.pending_reals[e * na + a]
                    for c in range(nc):
                        self.pred_known[j * nc + c] = self.succ_known[j * nc + c] = 0
                        self.pred_side[j * nc + c] = self.succ_side[j * nc + c] = 0.0
                        if v == k.clauses[c].pred_var and not _side_value(
                                &k.clauses[c].pred, r.pending_ints + e * na,
                                r.pending_reals + e * na, r.pending_known + e * na,
                                k.attr_is_int, &self.pred_side[j * nc + c],
                                &self.pred_known[j * nc + c]):
                            self.theta_exact = False
                        if v == k.clauses[c].succ_var and not _side_value(
                                &k.clauses[c].succ, r.pending_ints + e * na,
                                r.pending_reals + e * na, r.pending_known + e * na,
                                k.attr_is_int, &self.succ_side[j * nc + c],
                                &self.succ_known[j * nc + c]):
                            self.theta_exact = False
                    self.node_event[j] = i
                    j += 1
                mask >>= 1
                v += 1
        return 0

    cdef list raw(self):
        """The group as the reference takes it: ``[(variables, {value attribute: value})]``."""
        cdef Kernel k = self.k
        cdef Py_ssize_t i
        cdef int a, v, na = k.nattrs
        out = []
        for i in range(self.n_events):
            vs = tuple(v for v in range(k.nvars) if (self.event_vars[i] >> v) & 1)
            attrs = {}
            for a in range(na):
                if not self.event_known[i * na + a]:
                    attrs[k.attrs[a]] = None
                elif k.attr_is_int[a]:
                    attrs[k.attrs[a]] = self.event_ints[i * na + a]
                else:
                    attrs[k.attrs[a]] = self.event_reals[i * na + a]
            out.append((vs, attrs))
        return out


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
            if not compare[double](clauses[c].op, stored_side[c], succ_side[c]):
                return False
    return True


cdef Vector NO_VECTOR   # (object mode: no C vector; every pointer NULL)


# (no_gc: a window refers to its kernel, numbers and a reference aggregator, never back to
# itself, so it cannot be in a cycle; tracked, the windows a table opens -- one per window and
# partition -- made the collector's passes 16 % of a trend query's time, measured)
@cython.no_gc
cdef class _Window:
    """The online aggregate state of one window of one partition (see the module doc;
    declared in trends.pxd). One subclass per semantics implements ``_update``, as the
    reference has one class per semantics; this base holds what they share.

    Vectors live in C arrays (int64 mode) until an update would overflow int64; the window
    then turns them into Python lists of exact numbers, the reference's vector format
    (object mode), and the same update loop goes on with Python arithmetic.
    Predicates on adjacent events are still evaluated on the C arrays of predicate values."""

    def __cinit__(self, Kernel k):
        self.k = k
        self.reference = None
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
        PyMem_Free(self.node_ints)
        PyMem_Free(self.node_reals)
        PyMem_Free(self.node_known)

    cdef int _grow(self, Py_ssize_t need) except -1:
        """Room for ``need`` nodes in the arena (doubling)."""
        if need <= self.capacity:
            return 0
        cdef Py_ssize_t cap = max(need, 2 * self.capacity, 4)
        cdef Py_ssize_t nc = max(self.k.nclauses, 1), na = max(self.k.nattrs, 1)
        if not self.object_mode:
            vectors_reserve(&self.node_vectors, cap)
        safe_realloc(&self.node_var, cap)
        safe_realloc(&self.node_state, cap)
        safe_realloc(&self.node_pred_side, cap * nc)
        safe_realloc(&self.node_pred_known, cap * nc)
        safe_realloc(&self.node_ints, cap * na)
        safe_realloc(&self.node_reals, cap * na)
        safe_realloc(&self.node_known, cap * na)
        self.capacity = cap
        return 0

    cdef void _push(self, _Group g, Py_ssize_t j, Vector vec, object vec_object):
        """Append node j of g to the arena with its vector (``vec_object`` in object mode,
        else the C vector ``vec``); capacity is reserved by the caller."""
        cdef Kernel k = self.k
        cdef int nc = k.nclauses, na = k.nattrs
        cdef Py_ssize_t q = self.nnodes, e = g.node_event[j]
        if self.object_mode:
            self.node_objects.append(vec_object)
        else:
            _copy(vector_at(&self.node_vectors, q), vec, k.nslots)
        self.node_var[q] = g.node_var[j]
        self.node_state[q] = LIVE
        if nc:
            memcpy(self.node_pred_side + q * nc, g.pred_side + j * nc, nc * sizeof(double))
            memcpy(self.node_pred_known + q * nc, g.pred_known + j * nc, nc)
            if na:
                memcpy(self.node_ints + q * na, g.event_ints + e * na, na * sizeof(int64_t))
                memcpy(self.node_reals + q * na, g.event_reals + e * na, na * sizeof(double))
                memcpy(self.node_known + q * na, g.event_known + e * na, na)
        self.nnodes = q + 1

    def update(self, _Group g):
        """Apply one timestamp group (laid out by a runner) to this window."""
        self._apply(g)

    cdef int _apply(self, _Group g) except -1:
        if self.reference is None and not g.theta_exact:
            self._hand_over()  # comparison operands beyond 2^53: only Python compares exactly
        if self.reference is not None:
            self.reference.update(g.raw())
            return 0
        if not self.object_mode:
            if self._update(g) == 0:
                return 0
            self._to_objects()
        self._update(g)
        return 0

    # ---- what the semantics share: one update's steps ----------------------------------------
    cdef int _begin(self, _Group g) except -1:
        """Scratch for the group's nodes, arena room for all of them, and (int64 mode) a
        backup of the rows the update writes, to restore on overflow."""
        cdef Kernel k = self.k
        k._reserve(g.nnodes)
        if k.event_grained or k.semantics == SEM_CONTIGUOUS:
            self._grow(self.nnodes + g.nnodes)  # the arena may take every node of the group
        if not self.object_mode:
            _copy(vector_at(&self.rows, k.nvars + 2), vector_at(&self.rows, 0),
                  (k.nvars + 2) * k.nslots)
        return 0

    cdef int _sum_into(self, list pred_object, Vector pred, Py_ssize_t x, bint is_row
                       ) except -1:
        """pred ⊕= row ``x`` (``is_row``) or stored node ``x``; 1 on int64 overflow."""
        cdef Kernel k = self.k
        if self.object_mode:
            k.add_objects(pred_object, self.row_objects[x] if is_row else self.node_objects[x])
            return 0
        return _add(pred, vector_at(&self.rows, x) if is_row
                    else vector_at(&self.node_vectors, x), k.slot_kinds, k.nslots)

    cdef int _extend_node(self, _Group g, Py_ssize_t j, list pred_object, Vector pred,
                          list group_objects) except -1:
        """Node j's vector from its predecessors' (the kernel's group vector j, or
        ``group_objects[j]``); whether it is in some trend goes to ``group_counted[j]``.
        1 on int64 overflow."""
        cdef Kernel k = self.k
        cdef int v = g.node_var[j], ns = k.nslots, q
        if self.object_mode:
            group_objects[j] = k.extend_objects(pred_object, v, v == k.start, g, j)
            k.group_counted[j] = group_objects[j] is not None
            return 0
        q = _extend(vector_at(&k.group_vectors, j), pred, v, v == k.start,
                    g.value_ints + j * ns, g.value_reals + j * ns, k.slot_kinds, k.slot_vars,
                    ns)
        if q < 0:
            return 1
        k.group_counted[j] = q
        return 0

    cdef int _add_new(self, _Group g, Py_ssize_t j, Py_ssize_t row, list group_objects
                      ) except -1:
        """row ⊕= node j's vector; 1 on int64 overflow."""
        cdef Kernel k = self.k
        if self.object_mode:
            k.add_objects(self.row_objects[row], group_objects[j])
            return 0
        return _add(vector_at(&self.rows, row), vector_at(&k.group_vectors, j), k.slot_kinds,
                    k.nslots)

    cdef list _zero_pred(self, Vector pred):
        """PRED (a node's predecessors' vector) set to zero: the C row, or in object mode a
        fresh zero list (returned)."""
        if self.object_mode:
            return self.k.zero_objects()
        _zero(pred, self.k.nslots)
        return None

    cdef int _new_vectors(self, _Group g, bint next_match, uint64_t *vars_taken,
                          list group_objects) except -1:
        """Every new vector of the group from the state before it (ANY and NEXT): node j's
        predecessors are the rows of the type-grained variables before it and the stored
        nodes of the event-grained ones that θ lets precede it. Under ``next_match`` only the
        waiting nodes count, and what is taken is marked: the nodes TAKEN, the variables whose
        rows are taken in ``vars_taken``. 1 on int64 overflow (the caller restores)."""
        cdef Kernel k = self.k
        cdef int nv = k.nvars, nc = k.nclauses, v, u
        cdef Py_ssize_t j, x, n0 = self.nnodes
        cdef Vector pred = vector_at(&self.rows, nv)  # the PRED row
        cdef uint64_t te = k.event_grained
        cdef const int *pl
        cdef list pred_object = None
        self._begin(g)
        for j in range(g.nnodes):
            v = g.node_var[j]
            pred_object = self._zero_pred(pred)
            pl = k.preds + v * (nv + 1)
            while pl[0] >= 0:
                u = pl[0]
                pl += 1
                if not (te >> u) & 1:
                    if self._sum_into(pred_object, pred, u, True):
                        return 1
                    if next_match:
                        vars_taken[0] |= (<uint64_t>1) << u
                    continue
                for x in range(self.first_live, n0):
                    if ((not next_match or self.node_state[x] != DEAD)
                            and self.node_var[x] == u and _theta(
                            self.node_pred_side + x * nc, self.node_pred_known + x * nc, u,
                            g.succ_side + j * nc, g.succ_known + j * nc, v, nc, k.clauses)):
                        if self._sum_into(pred_object, pred, x, False):
                            return 1
                        if next_match:
                            self.node_state[x] = TAKEN
            if self._extend_node(g, j, pred_object, pred, group_objects):
                return 1
        return 0

    cdef int _store_group(self, _Group g, list group_objects) except -1:
        """The group's new vectors into the state (ANY and NEXT): stored as nodes for the
        event-grained variables, else summed into their variable's row; summed into FINAL
        when they end a trend. 1 on int64 overflow."""
        cdef Kernel k = self.k
        cdef Py_ssize_t j
        cdef int v
        for j in range(g.nnodes):
            if not k.group_counted[j]:
                continue
            v = g.node_var[j]
            if (k.event_grained >> v) & 1:
                self._push(g, j, vector_at(&k.group_vectors, j) if not self.object_mode
                           else NO_VECTOR, group_objects[j] if self.object_mode else None)
            elif self._add_new(g, j, v, group_objects):
                return 1
            if v == k.end and self._add_new(g, j, k.nvars + 1, group_objects):
                return 1
        return 0

    cdef int _restore(self, Py_ssize_t n0, Py_ssize_t first_live0) except -1:
        """(int64 mode, after an overflow) the state before the group: the rows from their
        backup, the nodes it took live again, the nodes it pushed dropped. Returns 1."""
        cdef Kernel k = self.k
        cdef Py_ssize_t x
        _copy(vector_at(&self.rows, 0), vector_at(&self.rows, k.nvars + 2),
              (k.nvars + 2) * k.nslots)
        for x in range(first_live0, n0):
            if self.node_state[x] == TAKEN:
                self.node_state[x] = LIVE
        self.nnodes = n0
        return 1

    cdef int _update(self, _Group g) except -1:
        """0, or (int64 mode only) 1 when int64 would overflow -- then the state is as
        before the group. Defined by each semantics' subclass (``Kernel.new`` builds only
        those); the base declares it so the runner dispatches without knowing which."""
        raise TypeError(f"{type(self).__name__}: a window is one of _AnyWindow, _NextWindow, "
                        "_ContiguousWindow")

    cdef void _compact(self):
        """Drop the dead nodes of the waiting set (NEXT), keeping the live ones in order."""
        cdef Kernel k = self.k
        cdef int ns = k.nslots, nc = k.nclauses, na = k.nattrs
        cdef Py_ssize_t x, q = 0
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
                    if na:
                        memcpy(self.node_ints + q * na, self.node_ints + x * na,
                               na * sizeof(int64_t))
                        memcpy(self.node_reals + q * na, self.node_reals + x * na,
                               na * sizeof(double))
                        memcpy(self.node_known + q * na, self.node_known + x * na, na)
            if self.object_mode:
                keep_vectors.append(self.node_objects[x])
            q += 1
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

    cdef object _node_attrs(self, Py_ssize_t x):
        """What the reference needs of a stored node: the attributes of its event that the
        predecessor sides of its adjacent predicates read."""
        cdef Kernel k = self.k
        cdef int c, q, a, na = k.nattrs
        cdef Side *side
        attrs = {}
        for c in range(k.nclauses):
            if k.clauses[c].pred_var != self.node_var[x]:
                continue
            side = &k.clauses[c].pred
            for q in range(side.nleaves):
                a = side.leaf_attr[q]
                if a >= 0:
                    attrs[k.attrs[a]] = self._node_value(x, a)
        return attrs

    cdef object _node_value(self, Py_ssize_t x, int a):
        """Value attribute ``a`` of stored node ``x``'s event (None: it has none)."""
        cdef int na = self.k.nattrs
        if not self.node_known[x * na + a]:
            return None
        return self.node_ints[x * na + a] if self.k.attr_is_int[a] else self.node_reals[x * na + a]

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
            agg.carried = [(self.node_var[x], self._node_attrs(x), self._node(x))
                           for x in range(self.nnodes)]
        else:
            per_var = [self._row(u) for u in range(nv)]
            nodes = [[] for _ in range(nv)]
            for x in range(self.first_live, self.nnodes):
                if self.node_state[x] != DEAD:
                    nodes[self.node_var[x]].append((self._node_attrs(x), self._node(x)))
            if k.semantics == SEM_ANY:
                agg.per_var, agg.stored = per_var, nodes
            else:
                agg.waiting, agg.waiting_events = per_var, nodes
        self.reference = agg

    # ---- pickling: the state in the reference's vector format, whatever the mode ----------
    def __reduce__(self):
        cdef Py_ssize_t x
        cdef int c, a, nc = self.k.nclauses, na = self.k.nattrs if nc else 0
        if self.reference is not None:
            return (_restore_window, (self.k, ("reference", self.reference)))
        rows = [self._row(r) for r in range(self.k.nvars + 2)]
        nodes = [(self.node_var[x],
                  tuple(self.node_pred_side[x * nc + c] if self.node_pred_known[x * nc + c]
                        else None for c in range(nc)),
                  self._node(x),
                  tuple(self._node_value(x, a) for a in range(na)))
                 for x in range(self.first_live, self.nnodes) if self.node_state[x] != DEAD]
        return (_restore_window, (self.k, ("vectors", rows, nodes)))

    cdef void _import(self, list rows, list nodes) except *:
        """Set the state from reference-format vectors (nodes: (variable, compared values,
        vector, its event's value attributes)): int64 mode when every number fits, else
        object mode. (A node pickled before the values were kept, without them, takes them
        from its compared values: then each clause's side was the attribute itself.)"""
        cdef Kernel k = self.k
        cdef int nc = k.nclauses, na = k.nattrs, c, a
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
            var, sides, vec = nodes[q][:3]
            if len(nodes[q]) > 3:
                values = nodes[q][3]
            else:
                values = [None] * na
                for c in range(nc):
                    if k.clauses[c].pred_var == var and k.clauses[c].pred.nleaves == 1:
                        a = k.clauses[c].pred.leaf_attr[0]
                        if a >= 0 and sides[c] is not None:
                            values[a] = int(sides[c]) if k.attr_is_int[a] else sides[c]
            if self.object_mode:
                self.node_objects.append(list(vec))
            else:
                _store(k, vec, vector_at(&self.node_vectors, q))
            self.node_var[q] = var
            self.node_state[q] = LIVE
            for c in range(nc):
                self.node_pred_known[q * nc + c] = sides[c] is not None
                self.node_pred_side[q * nc + c] = 0.0 if sides[c] is None else sides[c]
            for a in range(na if nc else 0):
                self.node_known[q * na + a] = values[a] is not None
                self.node_ints[q * na + a] = 0
                self.node_reals[q * na + a] = 0.0
                if values[a] is not None:
                    if k.attr_is_int[a]:
                        self.node_ints[q * na + a] = values[a]
                    else:
                        self.node_reals[q * na + a] = values[a]
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


@cython.final
@cython.no_gc
cdef class _AnyWindow(_Window):
    """Skip-till-any-match (``reference.AnyAggregator``): one vector per variable outside
    T_e (type-grained), the stored events of T_e (event-grained)."""

    cdef int _update(self, _Group g) except -1:
        cdef Py_ssize_t n0 = self.nnodes, first_live0 = self.first_live
        cdef list group_objects = [None] * g.nnodes if self.object_mode else None
        # every new vector from the state before the group, then the group's updates
        if self._new_vectors(g, False, NULL, group_objects) \
                or self._store_group(g, group_objects):
            return self._restore(n0, first_live0)
        return 0


@cython.final
@cython.no_gc
cdef class _NextWindow(_Window):
    """Exact skip-till-next-match (``reference.NextAggregator``): the waiting trend ends --
    one vector per variable outside T_e, the waiting events of T_e; an end stops waiting
    once a later event takes it."""

    cdef int _update(self, _Group g) except -1:
        cdef Kernel k = self.k
        cdef int ns = k.nslots, nv = k.nvars, u
        cdef Py_ssize_t x, n0 = self.nnodes, first_live0 = self.first_live
        cdef uint64_t vars_taken = 0
        cdef list group_objects = [None] * g.nnodes if self.object_mode else None
        if self._new_vectors(g, True, &vars_taken, group_objects):
            return self._restore(n0, first_live0)
        # the ends taken stop waiting; the group's new ends wait
        for u in range(nv):
            if (vars_taken >> u) & 1:
                if self.object_mode:
                    self.row_objects[u] = k.zero_objects()
                else:
                    _zero(vector_at(&self.rows, u), ns)
        if self._store_group(g, group_objects):
            return self._restore(n0, first_live0)
        for x in range(first_live0, n0):
            if self.node_state[x] == TAKEN:
                self.node_state[x] = DEAD
        while self.first_live < self.nnodes and self.node_state[self.first_live] == DEAD:
            self.first_live += 1
        if self.first_live > 32 and 2 * self.first_live > self.nnodes:
            self._compact()
        return 0


@cython.final
@cython.no_gc
cdef class _ContiguousWindow(_Window):
    """Contiguous (``reference.ContiguousAggregator``): an event's only possible predecessors
    are the nodes of the previous timestamp (the arena); an inner event must be alone at its
    timestamp."""

    cdef int _update(self, _Group g) except -1:
        cdef Kernel k = self.k
        cdef int ns = k.nslots, nv = k.nvars, nc = k.nclauses, v, u
        cdef Py_ssize_t j, x, n0 = self.nnodes
        cdef Vector pred = vector_at(&self.rows, nv)
        cdef Vector node
        cdef list pred_object = None
        cdef list group_objects = [None] * g.nnodes if self.object_mode else None
        self._begin(g)
        for j in range(g.nnodes):
            v = g.node_var[j]
            pred_object = self._zero_pred(pred)
            for x in range(n0):
                u = self.node_var[x]
                if not _is_pred(k.preds + v * (nv + 1), u):
                    continue
                if nc and not _theta(self.node_pred_side + x * nc,
                                     self.node_pred_known + x * nc, u,
                                     g.succ_side + j * nc, g.succ_known + j * nc, v, nc,
                                     k.clauses):
                    continue
                if self._sum_into(pred_object, pred, x, False):
                    return self._restore(n0, 0)
            if self._extend_node(g, j, pred_object, pred, group_objects):
                return self._restore(n0, 0)
        for j in range(g.nnodes):
            if k.group_counted[j] and g.node_var[j] == k.end \
                    and self._add_new(g, j, nv + 1, group_objects):
                return self._restore(n0, 0)
        # the next timestamp may extend this group's nodes -- all of them when the event is
        # alone at its timestamp, else only the trends starting here
        self.nnodes = 0
        self.first_live = 0
        if self.object_mode:
            del self.node_objects[:]
        for j in range(g.nnodes):
            if not k.group_counted[j]:
                continue
            if g.n_events == 1:
                self._push(g, j, vector_at(&k.group_vectors, j) if not self.object_mode
                           else NO_VECTOR, group_objects[j] if self.object_mode else None)
            elif g.node_var[j] == k.start:
                if self.object_mode:
                    self._push(g, j, NO_VECTOR, k.extend_objects(
                        k.zero_objects(), k.start, True, g, j))
                    continue
                node = vector_at(&k.group_vectors, j)
                _zero(pred, ns)
                _extend(node, pred, k.start, True, g.value_ints + j * ns,
                        g.value_reals + j * ns, k.slot_kinds, k.slot_vars, ns)  # count 1
                self._push(g, j, node, None)
        return 0


def _restore_window(Kernel k, state):
    """A window aggregator from its pickled state (see ``_Window.__reduce__``)."""
    cdef _Window w = k.new()
    if state[0] == "reference":
        w.reference = state[1]
    else:
        w._import(state[1], state[2])
    return w


# ---- the runner: timestamp groups and windows ------------------------------------------------
cdef int64_t NO_PARTITION = _NO_PARTITION
cdef unsigned char IN_STREAM = _IN_STREAM


cdef inline const int64_t *_int64_data(object arr) except? NULL:
    cdef const int64_t[::1] view = arr
    return &view[0] if view.shape[0] else NULL


cdef inline const double *_double_data(object arr) except? NULL:
    cdef const double[::1] view = arr
    return &view[0] if view.shape[0] else NULL


cdef inline const unsigned char *_byte_data(object arr) except? NULL:
    cdef const unsigned char[::1] view = arr
    return &view[0] if view.shape[0] else NULL


@cython.final
cdef class Runner:
    """A ``cercore.interface.trends.TrendRunner`` over compiled window aggregators (see the
    module doc; declared in trends.pxd)."""

    def __cinit__(self, plan, reference_cls):
        self.aggregators = make_aggregators(plan, reference_cls)
        self.backend = "cython"
        self.windowed = plan.window is not None
        if self.windowed:
            self.size, self.slide = plan.window
        self.open = {}
        self.first_end = INT64_MAX_
        self.group = _Group.__new__(_Group, self.aggregators)

    def __dealloc__(self):
        PyMem_Free(self.pending_pid)
        PyMem_Free(self.pending_vars)
        PyMem_Free(self.pending_ints)
        PyMem_Free(self.pending_reals)
        PyMem_Free(self.pending_known)
        PyMem_Free(self.order)

    cdef int _reserve_pending(self, Py_ssize_t n) except -1:
        """Room for ``n`` pending events (doubling)."""
        if n <= self.pending_capacity:
            return 0
        cdef Py_ssize_t cap = max(n, 2 * self.pending_capacity, 16)
        cdef Py_ssize_t na = max(self.aggregators.nattrs, 1)
        safe_realloc(&self.pending_pid, cap)
        safe_realloc(&self.pending_vars, cap)
        safe_realloc(&self.pending_ints, cap * na)
        safe_realloc(&self.pending_reals, cap * na)
        safe_realloc(&self.pending_known, cap * na)
        safe_realloc(&self.order, cap)
        self.pending_capacity = cap
        return 0

    # ---- TrendRunner --------------------------------------------------------------------------
    def feed(self, batch):
        """The events of a batch in order (see ``TrendRunner.feed``); the windows closed."""
        cdef Kernel k = self.aggregators
        cdef Py_ssize_t i, n = batch.n, e
        cdef int a, na = k.nattrs
        cdef list closed = []
        if n == 0:
            return closed
        # (the arrays stay referenced by these locals while their data is read)
        state_arr = np.ascontiguousarray(batch.state, np.uint8)
        times_arr = np.ascontiguousarray(batch.times, np.int64)
        pids_arr = np.ascontiguousarray(batch.pids, np.int64)
        masks_arr = np.ascontiguousarray(batch.vars, np.uint64).view(np.int64)
        cdef const unsigned char *state = _byte_data(state_arr)
        cdef const int64_t *times = _int64_data(times_arr)
        cdef const int64_t *pids = _int64_data(pids_arr)
        cdef const uint64_t *masks = <const uint64_t *>_int64_data(masks_arr)
        # the value attributes' columns: int64 or double values, and validity
        keep = []
        cdef const int64_t **int_cols = <const int64_t **>PyMem_Malloc(max(na, 1) * sizeof(void *))
        cdef const double **real_cols = <const double **>PyMem_Malloc(max(na, 1) * sizeof(void *))
        cdef const unsigned char **valid_cols = <const unsigned char **>PyMem_Malloc(
            max(na, 1) * sizeof(void *))
        try:
            if int_cols == NULL or real_cols == NULL or valid_cols == NULL:
                raise MemoryError()
            for a in range(na):
                values = batch.columns.values[k.attrs[a]]
                valid = np.ascontiguousarray(batch.columns.valid[k.attrs[a]]).view(np.uint8)
                keep += [values, valid]
                if k.attr_is_int[a]:
                    values = np.ascontiguousarray(values, np.int64)
                    int_cols[a] = _int64_data(values)
                else:
                    values = np.ascontiguousarray(values, np.float64)
                    real_cols[a] = _double_data(values)
                keep.append(values)
                valid_cols[a] = _byte_data(valid)
            for i in range(n):
                if not state[i]:
                    continue
                if not self.has_time or times[i] != self.pending_time:
                    self._time_moves(times[i], closed)
                if state[i] != IN_STREAM:
                    continue
                e = self.npending
                if e == self.pending_capacity:
                    self._reserve_pending(e + 1)
                self.pending_pid[e] = pids[i]
                self.pending_vars[e] = masks[i]
                for a in range(na):
                    self.pending_known[e * na + a] = valid_cols[a][i]
                    if k.attr_is_int[a]:
                        self.pending_ints[e * na + a] = int_cols[a][i]
                    else:
                        self.pending_reals[e * na + a] = real_cols[a][i]
                self.npending = e + 1
        finally:
            PyMem_Free(int_cols)
            PyMem_Free(real_cols)
            PyMem_Free(valid_cols)
        return closed

    def feed_one(self, int64_t t, int64_t pid, uint64_t vars, dict row):
        """One read event (see ``TrendRunner.feed_one``); the windows closed."""
        cdef Kernel k = self.aggregators
        cdef Py_ssize_t e
        cdef int a, na = k.nattrs
        cdef list closed = []
        if not self.has_time or t != self.pending_time:
            self._time_moves(t, closed)
        if pid == NO_PARTITION:
            return closed
        e = self.npending
        self._reserve_pending(e + 1)
        self.pending_pid[e] = pid
        self.pending_vars[e] = vars
        for a in range(na):
            x = row.get(k.attrs[a])
            self.pending_known[e * na + a] = x is not None
            self.pending_ints[e * na + a] = 0
            self.pending_reals[e * na + a] = 0.0
            if x is not None:
                if k.attr_is_int[a]:
                    self.pending_ints[e * na + a] = x
                else:
                    self.pending_reals[e * na + a] = x
        self.npending = e + 1
        return closed

    def time_passes(self, int64_t t):
        """A watermark at ``t`` (see ``TrendRunner.time_passes``); the windows closed."""
        cdef list closed = []
        if self.has_time and t > self.pending_time:
            self._apply_pending()
        if self.windowed:
            self._close_until(False, t, closed)
        return closed

    def finish(self):
        """End of stream: every window closes; the windows closed."""
        cdef list closed = []
        self._apply_pending()
        self._close_until(True, 0, closed)
        return closed

    def open_windows(self):
        return self.open

    def pending_events(self):
        return self.npending

    def live_partitions(self):
        cdef Py_ssize_t e
        live = {pid for parts in self.open.values() for pid in parts}
        for e in range(self.npending):
            live.add(self.pending_pid[e])
        return live

    # ---- the sequential part ----------------------------------------------------------------
    cdef int _time_moves(self, int64_t t, list closed) except -1:
        """An event at a new time: the current group is complete, and the windows that end
        by ``t`` close -- whether or not the event is in the stream I."""
        self._apply_pending()
        self.has_time = True
        self.pending_time = t
        if self.windowed and t >= self.first_end:
            self._close_until(False, t, closed)
        return 0

    cdef int _apply_pending(self) except -1:
        """Update the aggregators of every window holding the current timestamp group, one
        partition's group at a time, partitions in the order of their first event."""
        cdef Py_ssize_t n = self.npending, i, m, j
        cdef int64_t k0 = 0, k1 = 0, t = self.pending_time, pid
        if n == 0:
            return 0
        if self.windowed:
            k0 = trends_first_window(t, self.size, self.slide)
            k1 = trends_floor_div(t, self.slide)
        if n == 1:  # (the common case: one event per timestamp)
            self.order[0] = 0
            self._apply_group(self.pending_pid[0], 1, k0, k1)
        elif n <= 32:
            # a few events: their partitions by a scan (self.order collects one partition's)
            done = bytearray(n)
            for i in range(n):
                if done[i]:
                    continue
                pid = self.pending_pid[i]
                m = 0
                for j in range(i, n):
                    if not done[j] and self.pending_pid[j] == pid:
                        done[j] = 1
                        self.order[m] = j
                        m += 1
                self._apply_group(pid, m, k0, k1)
        else:
            groups = {}
            for i in range(n):
                groups.setdefault(self.pending_pid[i], []).append(i)
            for pid, events in groups.items():
                m = len(events)
                for j in range(m):
                    self.order[j] = events[j]
                self._apply_group(pid, m, k0, k1)
        self.npending = 0
        return 0

    cdef int _apply_group(self, int64_t pid, Py_ssize_t n, int64_t k0, int64_t k1) except -1:
        """The group of partition ``pid`` (pending events ``order[:n]``) into windows
        ``k0 .. k1``, each window's aggregator started on its first group."""
        cdef _Group g = self.group
        cdef int64_t w
        cdef dict parts
        g._fill(self, self.order, n)
        key = pid
        for w in range(k0, k1 + 1):
            if self.last_parts is not None and w == self.last_window:
                parts = self.last_parts  # (most groups go to the window of the one before)
            else:
                parts = self.open.get(w)
                if parts is None:
                    parts = self.open[w] = {}
                    if self.windowed and len(self.open) == 1:
                        self.first_end = trends_window_end(w, self.size, self.slide)
                self.last_window, self.last_parts = w, parts
            agg = parts.get(key)
            if agg is None:
                agg = parts[key] = self.aggregators.new()
            (<_Window>agg)._apply(g)
        return 0

    cdef int _close_until(self, bint everything, int64_t t, list closed) except -1:
        """Close every window that ends at or before ``t`` (all of them: ``everything``)."""
        cdef int64_t w
        self.last_parts = None
        while self.open:
            w = next(iter(self.open))
            if not everything and (not self.windowed
                                   or not trends_window_ends_by(w, self.size, self.slide, t)):
                break
            closed.append((w, self.open.pop(w)))
        self.first_end = INT64_MAX_
        if self.open and self.windowed:
            self.first_end = trends_window_end(next(iter(self.open)), self.size, self.slide)
        return 0

    # ---- pickling: the open windows (each pickles itself) and the pending events ----------
    def __reduce__(self):
        cdef Kernel k = self.aggregators
        cdef Py_ssize_t e
        cdef int a, na = k.nattrs
        pending = []
        for e in range(self.npending):
            row = {}
            for a in range(na):
                if not self.pending_known[e * na + a]:
                    row[k.attrs[a]] = None
                elif k.attr_is_int[a]:
                    row[k.attrs[a]] = self.pending_ints[e * na + a]
                else:
                    row[k.attrs[a]] = self.pending_reals[e * na + a]
            pending.append((self.pending_pid[e], self.pending_vars[e], row))
        return (_restore_runner, (k.plan, k.reference_cls, self.open, self.has_time, self.pending_time, pending))


def _restore_runner(plan, reference_cls, open_windows, has_time, pending_time, pending):
    """A runner from its pickled state (see ``Runner.__reduce__``)."""
    cdef Runner r = Runner(plan, reference_cls)
    r.open = open_windows
    r.last_parts = None
    if open_windows and r.windowed:
        r.first_end = trends_window_end(next(iter(open_windows)), r.size, r.slide)
    r.has_time = has_time
    r.pending_time = pending_time
    for pid, vars, row in pending:
        r.feed_one(pending_time, pid, vars, row)
    return r


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
