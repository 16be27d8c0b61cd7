# cython: language_level=3
"""Compiled twin of ``cercore.trends.reference``: the same online aggregators (skip-till-any-
match type-grained and mixed, exact skip-till-next-match, contiguous), one per window of one
partition, with the same outputs.

``Kernel(plan)`` has the interface of ``reference.Aggregators``: ``prepare(group)`` turns one
timestamp group of a partition into C arrays once, ``new()`` starts a window aggregator,
whose ``update(prepared)`` / ``result()`` / ``stored_events()`` mirror the reference's.

Storage is C arrays owned by each window aggregator: ``nvars + 3`` vector rows (one per
variable, then the predecessor accumulator, the final vector and a backup row block) and a
node arena, doubling on growth, for the event-grained nodes (stored T_e events under ANY,
waiting T_e events under NEXT, the previous timestamp's nodes under contiguous).

Counts and integer sums are int64 with checked arithmetic (``__builtin_*_overflow``). When an
update would overflow -- or a group holds an aggregated integer beyond int64 -- the window
restores its state from before the update and goes on in *object mode*: its vectors become
Python lists of exact numbers in the reference's format, updated by the same compiled loop
with Python arithmetic (never a silent wrap, never a replay). A group whose compared values
are integers beyond 2^53 (not exact as doubles) hands the window to the Python reference
itself. Double sums use the reference's operation order, so they are equal to the bit.
Shapes the kernel does not compile (predicates on adjacent events other than
``P.a op NEXT(S).b`` over numbers, more than 62 variables, and the paper's compatibility mode
for skip-till-next-match) run the Python reference.
"""

cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy, memset

from cercore.schema import AttrType
from cercore.trends import ast as tast
from cercore.trends import reference

cdef extern from *:
    """
    static inline int trends_add_ovf(long long a, long long b, long long *r) {
        return __builtin_add_overflow(a, b, r);
    }
    static inline int trends_mul_ovf(long long a, long long b, long long *r) {
        return __builtin_mul_overflow(a, b, r);
    }
    """
    bint trends_add_ovf(long long a, long long b, long long *r) nogil
    bint trends_mul_ovf(long long a, long long b, long long *r) nogil

# field kinds (slot 0 of a vector is the trend count, kind K_CNT)
cdef enum:
    K_CNT = 0
    K_SUM_I = 1
    K_SUM_D = 2
    K_MIN_I = 3
    K_MIN_D = 4
    K_MAX_I = 5
    K_MAX_D = 6

cdef enum:
    A_ANY = 0
    A_NEXT = 1
    A_CONT = 2

cdef enum:
    MAX_VARS = 62

_OPS = {"<": 0, "<=": 1, ">": 2, ">=": 3, "==": 4, "!=": 5}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_MAX_EXACT = 2 ** 53
_INT64_MIN = -2 ** 63
_INT64_MAX = 2 ** 63 - 1


def _clause(plan, adj):
    """(pred var, succ var, op, pred attr, succ attr) of ``P.a op NEXT(S).b``, or None."""
    c = adj.cond
    if not isinstance(c, tast.Compare):
        return None
    left, right, op = c.left, c.right, c.op
    if not (isinstance(left, tast.Ref) and isinstance(right, tast.Ref)):
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


cdef void *_resize(void *p, size_t nbytes) except NULL:
    """``p`` reallocated to ``nbytes`` (at least 1); MemoryError instead of NULL."""
    cdef void *q = PyMem_Realloc(p, nbytes if nbytes else 1)
    if q == NULL:
        raise MemoryError()
    return q


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


# ---- vectors: a vector is nslots consecutive entries of (int64, double, has) arrays ---------
cdef inline void _zero(long long *ai, double *ad, unsigned char *ah, int n) noexcept nogil:
    memset(ai, 0, n * sizeof(long long))
    memset(ad, 0, n * sizeof(double))
    memset(ah, 0, n)


cdef inline void _copy(long long *ai, double *ad, unsigned char *ah, const long long *bi,
                       const double *bd, const unsigned char *bh, int n) noexcept nogil:
    memcpy(ai, bi, n * sizeof(long long))
    memcpy(ad, bd, n * sizeof(double))
    memcpy(ah, bh, n)


cdef inline int _add(long long *ai, double *ad, unsigned char *ah, const long long *bi,
                     const double *bd, const unsigned char *bh, const int *kinds,
                     int nslots) noexcept nogil:
    """vector a ⊕= vector b; 1 on int64 overflow."""
    cdef int s, kd
    cdef long long r
    for s in range(nslots):
        kd = kinds[s]
        if kd == K_CNT or kd == K_SUM_I:
            if trends_add_ovf(ai[s], bi[s], &r):
                return 1
            ai[s] = r
        elif kd == K_SUM_D:
            ad[s] = ad[s] + bd[s]
            ah[s] = ah[s] | bh[s]   # "holds a float": the reference's sum starts as int 0
        elif bh[s]:
            if kd == K_MIN_I:
                if not ah[s] or bi[s] < ai[s]:
                    ai[s] = bi[s]
            elif kd == K_MAX_I:
                if not ah[s] or bi[s] > ai[s]:
                    ai[s] = bi[s]
            elif kd == K_MIN_D:
                if not ah[s] or bd[s] < ad[s]:
                    ad[s] = bd[s]
            else:
                if not ah[s] or bd[s] > ad[s]:
                    ad[s] = bd[s]
            ah[s] = 1
    return 0


cdef inline int _extend(long long *oi, double *od, unsigned char *oh, const long long *pi,
                        const double *pd, const unsigned char *ph, int var, bint is_start,
                        const long long *xi, const double *xd, const int *kinds,
                        const uint64_t *fmask, int nslots) noexcept nogil:
    """o = the node's vector from its predecessors' vector p and its values x
    (``reference.Vectors.extend``); 0 (count 0: no vector), 1 (written) or -1 (overflow)."""
    cdef long long c, r, t
    cdef int s, kd
    if trends_add_ovf(<long long>is_start, pi[0], &c):
        return -1
    if c == 0:
        return 0
    oi[0] = c
    od[0] = 0.0
    oh[0] = 0
    for s in range(1, nslots):
        kd = kinds[s]
        oi[s] = pi[s]
        od[s] = pd[s]
        oh[s] = ph[s]
        if not (fmask[s] >> var) & 1:
            continue
        if kd == K_CNT:
            if trends_add_ovf(pi[s], c, &r):
                return -1
            oi[s] = r
        elif kd == K_SUM_I:
            if trends_mul_ovf(xi[s], c, &t) or trends_add_ovf(pi[s], t, &r):
                return -1
            oi[s] = r
        elif kd == K_SUM_D:
            od[s] = pd[s] + xd[s] * <double>c
            oh[s] = 1
        elif kd == K_MIN_I:
            if not ph[s] or xi[s] < pi[s]:
                oi[s] = xi[s]
            oh[s] = 1
        elif kd == K_MAX_I:
            if not ph[s] or xi[s] > pi[s]:
                oi[s] = xi[s]
            oh[s] = 1
        elif kd == K_MIN_D:
            if not ph[s] or xd[s] < pd[s]:
                od[s] = xd[s]
            oh[s] = 1
        else:
            if not ph[s] or xd[s] > pd[s]:
                od[s] = xd[s]
            oh[s] = 1
    return 1


@cython.final
cdef class Kernel:
    """The compiled aggregators of one plan: constants, and the scratch space of one update
    (one thread at a time)."""
    cdef readonly object plan
    cdef object reference_cls
    cdef int algo, nvars, nslots, start, end, ncl
    cdef uint64_t te
    cdef int *kinds_p
    cdef uint64_t *fmask_p
    cdef int *plist                   # nvars x (nvars + 1), -1 terminated, reference order
    cdef int *cl_p
    cdef int *cl_s
    cdef int *cl_op
    cdef object attrs_of, clauses
    # scratch of one update: the group's node vectors and flags
    cdef long long *gi
    cdef double *gd
    cdef unsigned char *gh
    cdef unsigned char *ghas
    cdef Py_ssize_t gcap

    def __init__(self, plan, clauses):
        cdef int v, k, s
        self.plan = plan
        self.reference_cls = reference.aggregator_class(plan)
        self.algo = {"any": A_ANY, "next": A_NEXT, "contiguous": A_CONT}[plan.semantics]
        self.nvars = len(plan.vars)
        self.start = plan.start
        self.end = plan.end
        types = plan.schema.attribute_types()
        self.nslots = 1 + len(plan.fields)
        self.kinds_p = <int *>_resize(NULL, self.nslots * sizeof(int))
        self.fmask_p = <uint64_t *>_resize(NULL, self.nslots * sizeof(uint64_t))
        self.kinds_p[0] = K_CNT
        self.fmask_p[0] = 0
        attrs = [None]
        for s, f in enumerate(plan.fields, 1):
            is_int = f.attr is not None and types[f.attr] == AttrType.INT
            if f.kind == "cnt":
                self.kinds_p[s] = K_CNT
            elif f.kind == "sum":
                self.kinds_p[s] = K_SUM_I if is_int else K_SUM_D
            elif f.kind == "min":
                self.kinds_p[s] = K_MIN_I if is_int else K_MIN_D
            else:
                self.kinds_p[s] = K_MAX_I if is_int else K_MAX_D
            m = 0
            for v in f.vars:
                m |= 1 << v
            self.fmask_p[s] = m
            attrs.append(f.attr)
        self.attrs_of = attrs
        # predecessors in the reference's iteration order (same order => same double sums)
        self.plist = <int *>_resize(NULL, self.nvars * (self.nvars + 1) * sizeof(int))
        for v in range(self.nvars):
            preds = list(plan.preds[v])
            for k in range(len(preds)):
                self.plist[v * (self.nvars + 1) + k] = preds[k]
            self.plist[v * (self.nvars + 1) + len(preds)] = -1
        te = 0
        for v in plan.event_grained:
            te |= 1 << v
        self.te = te
        self.clauses = clauses
        self.ncl = len(clauses)
        n = max(self.ncl, 1)
        self.cl_p = <int *>_resize(NULL, n * sizeof(int))
        self.cl_s = <int *>_resize(NULL, n * sizeof(int))
        self.cl_op = <int *>_resize(NULL, n * sizeof(int))
        for k in range(self.ncl):
            self.cl_p[k], self.cl_s[k], self.cl_op[k] = clauses[k][:3]

    def __dealloc__(self):
        PyMem_Free(self.kinds_p)
        PyMem_Free(self.fmask_p)
        PyMem_Free(self.plist)
        PyMem_Free(self.cl_p)
        PyMem_Free(self.cl_s)
        PyMem_Free(self.cl_op)
        PyMem_Free(self.gi)
        PyMem_Free(self.gd)
        PyMem_Free(self.gh)
        PyMem_Free(self.ghas)

    cdef int _reserve(self, Py_ssize_t m) except -1:
        if m <= self.gcap:
            return 0
        cdef Py_ssize_t cap = max(m, 2 * self.gcap, 8)
        cdef Py_ssize_t ns = self.nslots
        self.gi = <long long *>_resize(self.gi, cap * ns * sizeof(long long))
        self.gd = <double *>_resize(self.gd, cap * ns * sizeof(double))
        self.gh = <unsigned char *>_resize(self.gh, cap * ns)
        self.ghas = <unsigned char *>_resize(self.ghas, cap)
        self.gcap = cap
        return 0

    # ---- object mode: vectors as Python lists, exactly as reference.Vectors computes them --
    cdef list zero_vector(self):
        cdef int s, kd
        out = [0]
        for s in range(1, self.nslots):
            kd = self.kinds_p[s]
            out.append(None if kd == K_MIN_I or kd == K_MIN_D or kd == K_MAX_I
                       or kd == K_MAX_D else 0)
        return out

    cdef void add_objects(self, list acc, list vec):
        """acc ⊕= vec (``reference.Vectors.add``)."""
        cdef int s, kd
        acc[0] = acc[0] + vec[0]
        for s in range(1, self.nslots):
            kd = self.kinds_p[s]
            x = vec[s]
            if kd == K_MIN_I or kd == K_MIN_D:
                if x is not None and (acc[s] is None or x < acc[s]):
                    acc[s] = x
            elif kd == K_MAX_I or kd == K_MAX_D:
                if x is not None and (acc[s] is None or x > acc[s]):
                    acc[s] = x
            else:
                acc[s] = acc[s] + x

    cdef object extend_objects(self, list pred, int var, bint is_start, dict attrs):
        """The node's vector from its predecessors' (``reference.Vectors.extend``)."""
        cdef int s, kd
        c = (1 if is_start else 0) + pred[0]
        if c == 0:
            return None
        out = [c]
        for s in range(1, self.nslots):
            p = pred[s]
            if not (self.fmask_p[s] >> var) & 1:
                out.append(p)
                continue
            kd = self.kinds_p[s]
            if kd == K_CNT:
                out.append(p + c)
                continue
            x = attrs[self.attrs_of[s]]
            if kd == K_SUM_I or kd == K_SUM_D:
                out.append(p + x * c)
            elif kd == K_MIN_I or kd == K_MIN_D:
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
    """The nodes (event, variable) of one timestamp group, laid out for the kernel."""
    cdef object raw
    cdef bint fits          # every aggregated integer fits int64
    cdef bint theta_exact   # every compared value is exact as a double
    cdef Py_ssize_t m, n_events
    cdef char *block        # owns every array below
    cdef int *var
    cdef long long *xi      # m x nslots
    cdef double *xd
    cdef double *pv         # m x ncl: values of the predecessor side of each clause
    cdef double *sv         # successor side
    cdef unsigned char *pok
    cdef unsigned char *sok
    cdef list attrs

    def __cinit__(self, Kernel k, group):
        cdef Py_ssize_t m = 0, j = 0, s, c, n, nc
        cdef int nslots = k.nslots, ncl = k.ncl, v, kd
        self.raw = group
        self.fits = True
        self.theta_exact = True
        self.n_events = len(group)
        for vs, _ in group:
            m += len(vs)
        self.m = m
        self.attrs = []
        n = max(m, 1)
        nc = max(ncl, 1)
        # one block: the 8-byte arrays first, then the ints, then the flags (aligned)
        cdef size_t w = n * nslots, c2 = n * nc
        cdef char *b = <char *>_resize(NULL, 8 * (2 * w + 2 * c2) + 4 * n + 2 * c2)
        self.block = b
        self.xi = <long long *>b
        self.xd = <double *>(b + 8 * w)
        self.pv = <double *>(b + 16 * w)
        self.sv = <double *>(b + 16 * w + 8 * c2)
        self.var = <int *>(b + 16 * w + 16 * c2)
        self.pok = <unsigned char *>(b + 16 * w + 16 * c2 + 4 * n)
        self.sok = self.pok + c2
        memset(self.pok, 0, 2 * c2)
        attrs_of = k.attrs_of
        clauses = k.clauses
        for vs, attrs in group:
            for v in vs:
                self.var[j] = v
                self.attrs.append(attrs)
                for s in range(1, nslots):
                    kd = k.kinds_p[s]
                    self.xi[j * nslots + s] = 0
                    self.xd[j * nslots + s] = 0.0
                    if kd == K_CNT or not (k.fmask_p[s] >> v) & 1:
                        continue
                    x = attrs[attrs_of[s]]
                    if kd == K_SUM_D or kd == K_MIN_D or kd == K_MAX_D:
                        self.xd[j * nslots + s] = x
                    elif _INT64_MIN <= x <= _INT64_MAX:
                        self.xi[j * nslots + s] = x
                    else:
                        self.fits = False
                for c in range(ncl):
                    pu, sw, _, pa, sa = clauses[c]
                    if v == pu:
                        x = attrs.get(pa)
                        if x is not None:
                            if type(x) is int and abs(x) > _MAX_EXACT:
                                self.theta_exact = False
                            else:
                                self.pv[j * ncl + c] = x
                                self.pok[j * ncl + c] = 1
                    if v == sw:
                        x = attrs.get(sa)
                        if x is not None:
                            if type(x) is int and abs(x) > _MAX_EXACT:
                                self.theta_exact = False
                            else:
                                self.sv[j * ncl + c] = x
                                self.sok[j * ncl + c] = 1
                j += 1

    def __dealloc__(self):
        PyMem_Free(self.block)


cdef inline bint _theta(const double *npv, const unsigned char *npok, int pvar,
                        const double *sv, const unsigned char *sok, int svar, int ncl,
                        const int *cl_p, const int *cl_s, const int *cl_op) noexcept nogil:
    """Every adjacent predicate from ``pvar`` to ``svar`` holds between the stored node (its
    predecessor-side values) and the new node (its successor-side values)."""
    cdef int c
    for c in range(ncl):
        if cl_p[c] == pvar and cl_s[c] == svar:
            if not (npok[c] and sok[c]):
                return False
            if not _cmp(cl_op[c], npv[c], sv[c]):
                return False
    return True


cdef enum:
    DEAD = 0
    LIVE = 1
    TAKEN = 2   # NEXT: consumed by the current group; dead once the group is applied


@cython.final
cdef class _Window:
    """The online aggregate state of one window of one partition (see the module doc).

    Vectors live in C arrays (int64 mode) until an update would overflow int64; the window
    then turns them into Python lists of exact numbers, the reference's vector format
    (object mode), and the same update loop goes on with Python arithmetic. Predicates on
    adjacent events are still evaluated on the C arrays of predicate values."""
    cdef Kernel k
    cdef object py                  # the reference aggregator, once handed over
    cdef bint big                   # object mode
    cdef long long *vi              # rows: vars..., PRED, FINAL, then a backup of those
    cdef double *vd
    cdef unsigned char *vh
    cdef list orows                 # object mode: rows vars..., PRED, FINAL as lists
    cdef Py_ssize_t n, cap, lo      # node arena: n used, live ones from lo on
    cdef long long *ni              # int64 mode node vectors
    cdef double *nd
    cdef unsigned char *nh
    cdef list onodes                # object mode node vectors
    cdef int *nvar
    cdef unsigned char *nlive
    cdef double *npv
    cdef unsigned char *npok
    cdef list nattrs

    def __cinit__(self, Kernel k):
        cdef Py_ssize_t rows = 2 * k.nvars + 4
        self.k = k
        self.py = None
        self.nattrs = []
        self.vi = <long long *>_resize(NULL, rows * k.nslots * sizeof(long long))
        self.vd = <double *>_resize(NULL, rows * k.nslots * sizeof(double))
        self.vh = <unsigned char *>_resize(NULL, rows * k.nslots)
        _zero(self.vi, self.vd, self.vh, <int>(rows * k.nslots))  # min/max identity: has=0

    def __dealloc__(self):
        PyMem_Free(self.vi)
        PyMem_Free(self.vd)
        PyMem_Free(self.vh)
        PyMem_Free(self.ni)
        PyMem_Free(self.nd)
        PyMem_Free(self.nh)
        PyMem_Free(self.nvar)
        PyMem_Free(self.nlive)
        PyMem_Free(self.npv)
        PyMem_Free(self.npok)

    cdef int _grow(self, Py_ssize_t need) except -1:
        if need <= self.cap:
            return 0
        cdef Py_ssize_t cap = max(need, 2 * self.cap, 4)
        cdef Py_ssize_t ns = self.k.nslots, nc = max(self.k.ncl, 1)
        if not self.big:
            self.ni = <long long *>_resize(self.ni, cap * ns * sizeof(long long))
            self.nd = <double *>_resize(self.nd, cap * ns * sizeof(double))
            self.nh = <unsigned char *>_resize(self.nh, cap * ns)
        self.nvar = <int *>_resize(self.nvar, cap * sizeof(int))
        self.nlive = <unsigned char *>_resize(self.nlive, cap)
        self.npv = <double *>_resize(self.npv, cap * nc * sizeof(double))
        self.npok = <unsigned char *>_resize(self.npok, cap * nc)
        self.cap = cap
        return 0

    cdef void _push(self, _Group g, Py_ssize_t j, const long long *vi, const double *vd,
                    const unsigned char *vh, object ovec):
        """Append node j of g to the arena with its vector (``ovec`` in object mode, else
        the C vector v); capacity is reserved by the caller."""
        cdef Kernel k = self.k
        cdef int ns = k.nslots, nc = k.ncl
        cdef Py_ssize_t q = self.n
        if self.big:
            self.onodes.append(ovec)
        else:
            _copy(self.ni + q * ns, self.nd + q * ns, self.nh + q * ns, vi, vd, vh, ns)
        self.nvar[q] = g.var[j]
        self.nlive[q] = LIVE
        if nc:
            memcpy(self.npv + q * nc, g.pv + j * nc, nc * sizeof(double))
            memcpy(self.npok + q * nc, g.pok + j * nc, nc)
        self.nattrs.append(g.attrs[j])
        self.n = q + 1

    def update(self, _Group g):
        """Apply one timestamp group (prepared by the kernel) to this window."""
        if self.py is None and not g.theta_exact:
            self._hand_over()  # comparison operands beyond 2^53: only Python compares exactly
        if self.py is not None:
            self.py.update(g.raw)
            return
        if not self.big:
            if g.fits and self._update(g) == 0:
                return
            self._to_objects()
        self._update(g)

    cdef int _update(self, _Group g) except -1:
        """0, or (int64 mode only) 1 when int64 would overflow -- then the state is as
        before the group."""
        cdef Kernel k = self.k
        cdef int ns = k.nslots, nv = k.nvars, ncl = k.ncl, algo = k.algo, v, u, q, rc = 0
        cdef Py_ssize_t m = g.m, j, x, n0 = self.n, lo0 = self.lo
        cdef Py_ssize_t PRED = nv * ns, FINAL = (nv + 1) * ns, BACKUP = (nv + 2) * ns
        cdef long long *vi = self.vi
        cdef double *vd = self.vd
        cdef unsigned char *vh = self.vh
        cdef uint64_t te = k.te, vtaken = 0
        cdef const int *kinds = k.kinds_p
        cdef int *pl
        cdef bint big = self.big
        cdef list orows = self.orows, onodes = self.onodes, ogroup = None
        cdef list opred = None
        k._reserve(m)
        if te or algo == A_CONT:
            self._grow(self.n + m)   # the arena may take every node of the group
        if big:
            ogroup = [None] * m
        else:
            # the rows the apply phase writes, to restore on overflow
            _copy(vi + BACKUP, vd + BACKUP, vh + BACKUP, vi, vd, vh, <int>((nv + 2) * ns))
        # ---- compute the group's node vectors from the state before the group ------------
        for j in range(m):
            v = g.var[j]
            if big:
                opred = k.zero_vector()
            else:
                _zero(vi + PRED, vd + PRED, vh + PRED, ns)
            if algo == A_CONT:
                for x in range(self.n):
                    u = self.nvar[x]
                    if not _is_pred(k.plist + v * (nv + 1), u):
                        continue
                    if ncl and not _theta(self.npv + x * ncl, self.npok + x * ncl, u,
                                          g.sv + j * ncl, g.sok + j * ncl, v, ncl,
                                          k.cl_p, k.cl_s, k.cl_op):
                        continue
                    if big:
                        k.add_objects(opred, onodes[x])
                    elif _add(vi + PRED, vd + PRED, vh + PRED, self.ni + x * ns,
                              self.nd + x * ns, self.nh + x * ns, kinds, ns):
                        rc = 1
                        break
            else:
                pl = k.plist + v * (nv + 1)
                while pl[0] >= 0 and rc == 0:
                    u = pl[0]
                    pl += 1
                    if (te >> u) & 1:
                        for x in range(self.lo, self.n):
                            if (self.nlive[x] != DEAD and self.nvar[x] == u
                                    and _theta(self.npv + x * ncl, self.npok + x * ncl, u,
                                               g.sv + j * ncl, g.sok + j * ncl, v, ncl,
                                               k.cl_p, k.cl_s, k.cl_op)):
                                if big:
                                    k.add_objects(opred, onodes[x])
                                elif _add(vi + PRED, vd + PRED, vh + PRED, self.ni + x * ns,
                                          self.nd + x * ns, self.nh + x * ns, kinds, ns):
                                    rc = 1
                                    break
                                if algo == A_NEXT:
                                    self.nlive[x] = TAKEN
                    else:
                        if big:
                            k.add_objects(opred, orows[u])
                        elif _add(vi + PRED, vd + PRED, vh + PRED, vi + u * ns, vd + u * ns,
                                  vh + u * ns, kinds, ns):
                            rc = 1
                        vtaken |= (<uint64_t>1) << u
            if rc:
                break
            if big:
                ogroup[j] = k.extend_objects(opred, v, v == k.start, g.attrs[j])
                k.ghas[j] = ogroup[j] is not None
                continue
            q = _extend(k.gi + j * ns, k.gd + j * ns, k.gh + j * ns, vi + PRED, vd + PRED,
                        vh + PRED, v, v == k.start, g.xi + j * ns, g.xd + j * ns, kinds,
                        k.fmask_p, ns)
            if q < 0:
                rc = 1
                break
            k.ghas[j] = q
        # ---- apply the group's updates ---------------------------------------------------
        if rc == 0:
            if algo == A_NEXT:
                for u in range(nv):
                    if (vtaken >> u) & 1:
                        if big:
                            orows[u] = k.zero_vector()
                        else:
                            _zero(vi + u * ns, vd + u * ns, vh + u * ns, ns)
            for j in range(m):
                if not k.ghas[j]:
                    continue
                v = g.var[j]
                if big:
                    if v == k.end:
                        k.add_objects(orows[nv + 1], ogroup[j])
                    if algo == A_CONT:
                        continue
                    if (te >> v) & 1:
                        self._push(g, j, NULL, NULL, NULL, ogroup[j])
                    else:
                        k.add_objects(orows[v], ogroup[j])
                    continue
                if v == k.end and _add(vi + FINAL, vd + FINAL, vh + FINAL, k.gi + j * ns,
                                       k.gd + j * ns, k.gh + j * ns, kinds, ns):
                    rc = 1
                    break
                if algo == A_CONT:
                    continue
                if (te >> v) & 1:
                    self._push(g, j, k.gi + j * ns, k.gd + j * ns, k.gh + j * ns, None)
                elif _add(vi + v * ns, vd + v * ns, vh + v * ns, k.gi + j * ns,
                          k.gd + j * ns, k.gh + j * ns, kinds, ns):
                    rc = 1
                    break
        if rc:  # (int64 mode) restore the state before the group
            _copy(vi, vd, vh, vi + BACKUP, vd + BACKUP, vh + BACKUP, <int>((nv + 2) * ns))
            for x in range(lo0, n0):
                if self.nlive[x] == TAKEN:
                    self.nlive[x] = LIVE
            del self.nattrs[n0:]
            self.n = n0
            return 1
        if algo == A_CONT:
            # the next timestamp may extend this group's nodes -- all of them when the event
            # is alone at its timestamp, else only the trends starting here
            self.n = 0
            self.lo = 0
            del self.nattrs[:]
            if big:
                del onodes[:]
            for j in range(m):
                if not k.ghas[j]:
                    continue
                if g.n_events == 1:
                    self._push(g, j, k.gi + j * ns, k.gd + j * ns, k.gh + j * ns,
                               ogroup[j] if big else None)
                elif g.var[j] == k.start:
                    if big:
                        self._push(g, j, NULL, NULL, NULL, k.extend_objects(
                            k.zero_vector(), k.start, True, g.attrs[j]))
                        continue
                    _zero(vi + PRED, vd + PRED, vh + PRED, ns)
                    _extend(k.gi + j * ns, k.gd + j * ns, k.gh + j * ns, vi + PRED,
                            vd + PRED, vh + PRED, k.start, True, g.xi + j * ns,
                            g.xd + j * ns, kinds, k.fmask_p, ns)  # count 1: cannot overflow
                    self._push(g, j, k.gi + j * ns, k.gd + j * ns, k.gh + j * ns, None)
        elif algo == A_NEXT:
            for x in range(lo0, n0):
                if self.nlive[x] == TAKEN:
                    self.nlive[x] = DEAD
            while self.lo < self.n and self.nlive[self.lo] == DEAD:
                self.lo += 1
            if self.lo > 32 and 2 * self.lo > self.n:
                self._compact()
        return 0

    cdef void _compact(self):
        """Drop the dead nodes of the waiting set (NEXT), keeping the live ones in order."""
        cdef Kernel k = self.k
        cdef int ns = k.nslots, nc = k.ncl
        cdef Py_ssize_t x, q = 0
        keep = []
        keep_vectors = []
        for x in range(self.lo, self.n):
            if self.nlive[x] == DEAD:
                continue
            if q != x:
                if not self.big:
                    _copy(self.ni + q * ns, self.nd + q * ns, self.nh + q * ns,
                          self.ni + x * ns, self.nd + x * ns, self.nh + x * ns, ns)
                self.nvar[q] = self.nvar[x]
                self.nlive[q] = self.nlive[x]
                if nc:
                    memcpy(self.npv + q * nc, self.npv + x * nc, nc * sizeof(double))
                    memcpy(self.npok + q * nc, self.npok + x * nc, nc)
            keep.append(self.nattrs[x])
            if self.big:
                keep_vectors.append(self.onodes[x])
            q += 1
        self.nattrs = keep
        if self.big:
            self.onodes = keep_vectors
        self.n = q
        self.lo = 0

    cdef object _vector(self, const long long *vi, const double *vd, const unsigned char *vh):
        """A C vector in the reference's format."""
        cdef Kernel k = self.k
        cdef int s, kd
        out = [vi[0]]
        for s in range(1, k.nslots):
            kd = k.kinds_p[s]
            if kd == K_CNT or kd == K_SUM_I:
                out.append(vi[s])
            elif kd == K_SUM_D:
                out.append(vd[s] if vh[s] else 0)  # the reference's sum is int 0 until a float
            elif not vh[s]:
                out.append(None)
            elif kd == K_MIN_I or kd == K_MAX_I:
                out.append(vi[s])
            else:
                out.append(vd[s])
        return out

    cdef object _row(self, Py_ssize_t r):
        cdef Py_ssize_t o = r * self.k.nslots
        if self.big:
            return list(self.orows[r])
        return self._vector(self.vi + o, self.vd + o, self.vh + o)

    cdef object _node(self, Py_ssize_t x):
        cdef Py_ssize_t o = x * self.k.nslots
        if self.big:
            return list(self.onodes[x])
        return self._vector(self.ni + o, self.nd + o, self.nh + o)

    cdef void _to_objects(self):
        """int64 mode -> object mode: the vectors as Python lists of exact numbers."""
        cdef Py_ssize_t x
        self.orows = [self._row(r) for r in range(self.k.nvars + 2)]
        self.onodes = [self._node(x) for x in range(self.n)]
        self.big = True
        PyMem_Free(self.ni)
        PyMem_Free(self.nd)
        PyMem_Free(self.nh)
        self.ni = NULL
        self.nd = NULL
        self.nh = NULL

    cdef void _hand_over(self):
        """Hand the state over to the reference aggregator."""
        cdef Kernel k = self.k
        cdef int nv = k.nvars, u
        cdef Py_ssize_t x
        py = k.reference_cls(k.plan)
        py.final = self._row(nv + 1)
        if k.algo == A_CONT:
            py.carried = [(self.nvar[x], self.nattrs[x], self._node(x))
                          for x in range(self.n)]
        else:
            per_var = [self._row(u) for u in range(nv)]
            nodes = [[] for _ in range(nv)]
            for x in range(self.n):
                if self.nlive[x] != DEAD:
                    nodes[self.nvar[x]].append((self.nattrs[x], self._node(x)))
            if k.algo == A_ANY:
                py.per_var, py.stored = per_var, nodes
            else:
                py.waiting, py.waiting_events = per_var, nodes
        self.py = py

    # ---- pickling: the state in the reference's vector format, whatever the mode ----------
    def __reduce__(self):
        cdef Py_ssize_t x
        if self.py is not None:
            return (_restore_window, (self.k, ("reference", self.py)))
        rows = [self._row(r) for r in range(self.k.nvars + 2)]
        nodes = [(self.nvar[x], self.nattrs[x], self._node(x))
                 for x in range(self.lo, self.n) if self.nlive[x] != DEAD]
        return (_restore_window, (self.k, ("vectors", rows, nodes)))

    cdef void _import(self, list rows, list nodes) except *:
        """Set the state from reference-format vectors: int64 mode when every number fits,
        else object mode."""
        cdef Kernel k = self.k
        cdef int ns = k.nslots, nc = k.ncl, s, c, var
        cdef Py_ssize_t r, q
        fits = all(_fits(k, vec) for vec in rows) and all(_fits(k, n[2]) for n in nodes)
        if not fits:
            self.big = True
            self.orows = [list(vec) for vec in rows]
            self.onodes = []
        else:
            for r in range(len(rows)):
                _store(k, rows[r], self.vi + r * ns, self.vd + r * ns, self.vh + r * ns)
        self._grow(len(nodes))
        for q in range(len(nodes)):
            var, attrs, vec = nodes[q]
            if self.big:
                self.onodes.append(list(vec))
            else:
                _store(k, vec, self.ni + q * ns, self.nd + q * ns, self.nh + q * ns)
            self.nvar[q] = var
            self.nlive[q] = LIVE
            for c in range(nc):  # the predecessor-side values, as _Group lays them out
                self.npok[q * nc + c] = 0
                self.npv[q * nc + c] = 0.0
                if k.clauses[c][0] == var:
                    x = attrs.get(k.clauses[c][3])
                    if x is not None:
                        self.npv[q * nc + c] = x
                        self.npok[q * nc + c] = 1
            self.nattrs.append(attrs)
        self.n = len(nodes)

    def result(self):
        """The aggregate vector over every trend ending in the window so far."""
        if self.py is not None:
            return self.py.result()
        return self._row(self.k.nvars + 1)

    def stored_events(self):
        """Events this aggregator holds (T_e nodes; carried nodes under contiguous)."""
        cdef Py_ssize_t x, live = 0
        if self.py is not None:
            return self.py.stored_events()
        for x in range(self.lo, self.n):
            if self.nlive[x] != DEAD:
                live += 1
        return live

    @property
    def mode(self):
        """"int64", "objects" (exact Python numbers, compiled loop) or "reference"."""
        return "reference" if self.py is not None else "objects" if self.big else "int64"

    @property
    def promoted(self):
        """True once this window has left int64 arithmetic."""
        return self.py is not None or self.big


def _restore_window(Kernel k, state):
    """A window aggregator from its pickled state (see ``_Window.__reduce__``)."""
    cdef _Window w = k.new()
    if state[0] == "reference":
        w.py = state[1]
    else:
        w._import(state[1], state[2])
    return w


cdef bint _fits(Kernel k, list vec):
    """Whether a reference-format vector has a C form: integers within int64."""
    cdef int s, kd
    for s in range(k.nslots):
        kd = k.kinds_p[s]
        x = vec[s]
        if (kd == K_CNT or kd == K_SUM_I or kd == K_MIN_I or kd == K_MAX_I) and x is not None \
                and not (_INT64_MIN <= x <= _INT64_MAX):
            return False
    return True


cdef void _store(Kernel k, list vec, long long *vi, double *vd, unsigned char *vh) except *:
    """Write a reference-format vector (that fits) into C vector storage."""
    cdef int s, kd
    for s in range(k.nslots):
        kd = k.kinds_p[s]
        x = vec[s]
        vi[s] = 0
        vd[s] = 0.0
        vh[s] = 0
        if kd == K_CNT or kd == K_SUM_I:
            vi[s] = x
        elif kd == K_SUM_D:
            vd[s] = x
            vh[s] = type(x) is float  # the reference's sum is int 0 until a float arrives
        elif x is not None:
            vh[s] = 1
            if kd == K_MIN_I or kd == K_MAX_I:
                vi[s] = x
            else:
                vd[s] = x


cdef inline bint _is_pred(const int *plist, int u) noexcept nogil:
    while plist[0] >= 0:
        if plist[0] == u:
            return True
        plist += 1
    return False
