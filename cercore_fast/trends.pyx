# cython: language_level=3
"""Compiled twin of ``cercore.trends.reference``: the same aggregators (skip-till-any-match
type-grained and mixed, exact skip-till-next-match, contiguous) over one window of one
partition, with the same outputs.

Counts and integer sums are int64 with checked arithmetic (``__builtin_*_overflow``): on
overflow the window is recomputed by the Python reference with exact Python ints -- never a
silent wrap. Double sums use the same operation order as the reference, so they are equal to
the bit. Shapes the kernel does not compile (predicates on adjacent events other than
``P.a op NEXT(S).b`` over numbers, and the paper's compatibility mode for
skip-till-next-match) run the Python reference.
"""

cimport cython
from libc.stdint cimport int64_t, uint64_t

import numpy as np

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
DEF K_CNT = 0
DEF K_SUM_I = 1
DEF K_SUM_D = 2
DEF K_MIN_I = 3
DEF K_MIN_D = 4
DEF K_MAX_I = 5
DEF K_MAX_D = 6

DEF A_ANY = 0
DEF A_NEXT = 1
DEF A_CONT = 2

_OPS = {"<": 0, "<=": 1, ">": 2, ">=": 3, "==": 4, "!=": 5}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_MAX_EXACT = 2 ** 53


class _Fallback(Exception):
    """The kernel cannot compute this window exactly (int64 overflow): use the reference."""


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


def make_aggregator(plan):
    """The function (events of one window and partition) -> aggregate vector, compiled when
    the plan allows it, else the Python reference."""
    clauses = [_clause(plan, a) for a in plan.adjacent]
    if (any(c is None for c in clauses) or len(plan.vars) > 62
            or (plan.semantics == "next" and plan.next_algorithm == "paper")):
        return lambda events: reference.aggregate(plan, events)
    return _Kernel(plan, clauses)


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
cdef class _Kernel:
    cdef object plan
    cdef int algo, nvars, nslots, start, end, nclauses
    cdef object kinds_py, field_masks_py, attrs_py, pred_lists_py, clauses_py
    cdef object te_mask_py

    def __init__(self, plan, clauses):
        self.plan = plan
        self.algo = {"any": A_ANY, "next": A_NEXT, "contiguous": A_CONT}[plan.semantics]
        self.nvars = len(plan.vars)
        self.start = plan.start
        self.end = plan.end
        types = plan.schema.attribute_types()
        kinds = [K_CNT]
        masks = [0]
        attrs = [None]
        for f in plan.fields:
            is_int = f.attr is not None and types[f.attr] == AttrType.INT
            if f.kind == "cnt":
                kinds.append(K_CNT)
            elif f.kind == "sum":
                kinds.append(K_SUM_I if is_int else K_SUM_D)
            elif f.kind == "min":
                kinds.append(K_MIN_I if is_int else K_MIN_D)
            else:
                kinds.append(K_MAX_I if is_int else K_MAX_D)
            m = 0
            for v in f.vars:
                m |= 1 << v
            masks.append(m)
            attrs.append(f.attr)
        self.nslots = len(kinds)
        self.kinds_py = np.array(kinds, dtype=np.int32)
        self.field_masks_py = np.array(masks, dtype=np.uint64)
        self.attrs_py = attrs
        # predecessors in the reference's iteration order (same order => same double sums)
        self.pred_lists_py = [list(plan.preds[v]) for v in range(self.nvars)]
        te = 0
        for v in plan.event_grained:
            te |= 1 << v
        self.te_mask_py = te
        self.clauses_py = clauses
        self.nclauses = len(clauses)

    def __call__(self, events):
        try:
            return self._run(events)
        except (_Fallback, OverflowError):
            return reference.aggregate(self.plan, events)

    def _run(self, events):
        cdef Py_ssize_t n_ev = len(events), m = 0, i, j, k, s
        cdef int nslots = self.nslots, nvars = self.nvars, nclauses = self.nclauses
        # ---- lay the nodes (event, variable) out as arrays ---------------------------------
        for ev in events:
            m += len(ev[1])
        ev_time = np.empty(n_ev, dtype=np.int64)
        node_ev = np.empty(m, dtype=np.int64)
        node_var = np.empty(m, dtype=np.int32)
        ival = np.zeros((m, nslots), dtype=np.int64)
        dval = np.zeros((m, nslots), dtype=np.float64)
        pval = np.zeros((m, max(nclauses, 1)), dtype=np.float64)
        sval = np.zeros((m, max(nclauses, 1)), dtype=np.float64)
        pok = np.zeros((m, max(nclauses, 1)), dtype=np.uint8)
        sok = np.zeros((m, max(nclauses, 1)), dtype=np.uint8)
        cdef int64_t[:] tv = ev_time
        cdef int64_t[:] nev = node_ev
        cdef int[:] nvar = node_var
        cdef int64_t[:, :] iv = ival
        cdef double[:, :] dv = dval
        cdef int[:] kinds = self.kinds_py
        cdef uint64_t[:] fmask = self.field_masks_py
        attrs_of = self.attrs_py
        clauses = self.clauses_py
        j = 0
        for i in range(n_ev):
            t, vs, attrs = events[i]
            tv[i] = t
            for v in vs:
                nev[j] = i
                nvar[j] = v
                for s in range(1, nslots):
                    if kinds[s] != K_CNT and (fmask[s] >> v) & 1:
                        x = attrs[attrs_of[s]]
                        if kinds[s] in (K_SUM_D, K_MIN_D, K_MAX_D):
                            dv[j, s] = x
                        else:
                            iv[j, s] = x  # OverflowError beyond int64 -> reference
                for k in range(nclauses):
                    pu, sv, op, pa, sa = clauses[k]
                    if v == pu:
                        x = attrs.get(pa)
                        if x is not None:
                            if type(x) is int and abs(x) > _MAX_EXACT:
                                raise _Fallback()
                            pval[j, k] = x
                            pok[j, k] = 1
                    if v == sv:
                        x = attrs.get(sa)
                        if x is not None:
                            if type(x) is int and abs(x) > _MAX_EXACT:
                                raise _Fallback()
                            sval[j, k] = x
                            sok[j, k] = 1
                j += 1
        cl_p = np.array([c[0] for c in clauses] or [0], dtype=np.int32)
        cl_s = np.array([c[1] for c in clauses] or [0], dtype=np.int32)
        cl_op = np.array([c[2] for c in clauses] or [0], dtype=np.int32)
        plist = np.full((max(nvars, 1), max(nvars, 1)), -1, dtype=np.int32)
        for v in range(nvars):
            for k, u in enumerate(self.pred_lists_py[v]):
                plist[v, k] = u
        out_i = np.zeros(nslots, dtype=np.int64)
        out_d = np.zeros(nslots, dtype=np.float64)
        out_h = np.zeros(nslots, dtype=np.uint8)
        rows = m + nvars + 3
        work_i = np.zeros((rows, nslots), dtype=np.int64)
        work_d = np.zeros((rows, nslots), dtype=np.float64)
        work_h = np.zeros((rows, nslots), dtype=np.uint8)
        flags = np.zeros((3, max(m, 1)), dtype=np.uint8)
        vtaken = np.zeros(max(nvars, 1), dtype=np.uint8)
        cdef int rc
        rc = _aggregate(self.algo, self.start, self.end, nvars, nslots, <uint64_t>self.te_mask_py,
                        n_ev, m, tv, nev, nvar, iv, dv, pval, sval, pok, sok, nclauses, cl_p,
                        cl_s, cl_op, plist, kinds, fmask, out_i, out_d, out_h, work_i, work_d,
                        work_h, flags, vtaken)
        if rc != 0:
            raise _Fallback()
        result = [int(out_i[0])]
        for s in range(1, nslots):
            kd = kinds[s]
            if kd == K_CNT or kd == K_SUM_I:
                result.append(int(out_i[s]))
            elif kd == K_SUM_D:
                result.append(float(out_d[s]))
            elif not out_h[s]:
                result.append(None)
            elif kd == K_MIN_I or kd == K_MAX_I:
                result.append(int(out_i[s]))
            else:
                result.append(float(out_d[s]))
        return result


# ---- vectors: slot s of vector r lives at vi[r, s] / vd[r, s] / vh[r, s] --------------------
cdef inline void _zero(int64_t[:, :] vi, double[:, :] vd, unsigned char[:, :] vh, Py_ssize_t r,
                       int nslots) noexcept nogil:
    cdef int s
    for s in range(nslots):
        vi[r, s] = 0
        vd[r, s] = 0.0
        vh[r, s] = 0


cdef inline int _add(int64_t[:, :] ai, double[:, :] ad, unsigned char[:, :] ah, Py_ssize_t a,
                     int64_t[:, :] bi, double[:, :] bd, unsigned char[:, :] bh, Py_ssize_t b,
                     int[:] kinds, int nslots) noexcept nogil:
    """vector a ⊕= vector b; 1 on int64 overflow."""
    cdef int s, kd
    cdef long long r
    for s in range(nslots):
        kd = kinds[s]
        if kd == K_CNT or kd == K_SUM_I:
            if trends_add_ovf(ai[a, s], bi[b, s], &r):
                return 1
            ai[a, s] = r
        elif kd == K_SUM_D:
            ad[a, s] = ad[a, s] + bd[b, s]
        elif bh[b, s]:
            if kd == K_MIN_I:
                if not ah[a, s] or bi[b, s] < ai[a, s]:
                    ai[a, s] = bi[b, s]
            elif kd == K_MAX_I:
                if not ah[a, s] or bi[b, s] > ai[a, s]:
                    ai[a, s] = bi[b, s]
            elif kd == K_MIN_D:
                if not ah[a, s] or bd[b, s] < ad[a, s]:
                    ad[a, s] = bd[b, s]
            else:
                if not ah[a, s] or bd[b, s] > ad[a, s]:
                    ad[a, s] = bd[b, s]
            ah[a, s] = 1
    return 0


cdef inline int _extend(int64_t[:, :] oi, double[:, :] od, unsigned char[:, :] oh,
                        Py_ssize_t o, int64_t[:, :] pi, double[:, :] pd,
                        unsigned char[:, :] ph, Py_ssize_t p, int var, bint is_start,
                        int64_t[:, :] xi, double[:, :] xd, Py_ssize_t node,
                        int[:] kinds, uint64_t[:] fmask, int nslots) noexcept nogil:
    """vector o = the node's vector from the predecessors' vector p (reference.extend);
    returns 0 (count 0: no vector), 1 (written) or -1 (overflow)."""
    cdef long long c, r, t
    cdef int s, kd
    if trends_add_ovf(<long long>is_start, pi[p, 0], &c):
        return -1
    if c == 0:
        return 0
    oi[o, 0] = c
    od[o, 0] = 0.0
    oh[o, 0] = 0
    for s in range(1, nslots):
        kd = kinds[s]
        oi[o, s] = pi[p, s]
        od[o, s] = pd[p, s]
        oh[o, s] = ph[p, s]
        if not (fmask[s] >> var) & 1:
            continue
        if kd == K_CNT:
            if trends_add_ovf(pi[p, s], c, &r):
                return -1
            oi[o, s] = r
        elif kd == K_SUM_I:
            if trends_mul_ovf(xi[node, s], c, &t) or trends_add_ovf(pi[p, s], t, &r):
                return -1
            oi[o, s] = r
        elif kd == K_SUM_D:
            od[o, s] = pd[p, s] + xd[node, s] * <double>c
        elif kd == K_MIN_I:
            if not ph[p, s] or xi[node, s] < pi[p, s]:
                oi[o, s] = xi[node, s]
            oh[o, s] = 1
        elif kd == K_MAX_I:
            if not ph[p, s] or xi[node, s] > pi[p, s]:
                oi[o, s] = xi[node, s]
            oh[o, s] = 1
        elif kd == K_MIN_D:
            if not ph[p, s] or xd[node, s] < pd[p, s]:
                od[o, s] = xd[node, s]
            oh[o, s] = 1
        else:
            if not ph[p, s] or xd[node, s] > pd[p, s]:
                od[o, s] = xd[node, s]
            oh[o, s] = 1
    return 1


cdef inline bint _theta(Py_ssize_t pnode, int pvar, Py_ssize_t snode, int svar, int nclauses,
                        int[:] cl_p, int[:] cl_s, int[:] cl_op, double[:, :] pval,
                        double[:, :] sval, unsigned char[:, :] pok,
                        unsigned char[:, :] sok) noexcept nogil:
    cdef int k
    for k in range(nclauses):
        if cl_p[k] == pvar and cl_s[k] == svar:
            if not (pok[pnode, k] and sok[snode, k]):
                return False
            if not _cmp(cl_op[k], pval[pnode, k], sval[snode, k]):
                return False
    return True


cdef int _aggregate(int algo, int start, int end, int nvars, int nslots, uint64_t te,
                    Py_ssize_t n_ev, Py_ssize_t m, int64_t[:] tv, int64_t[:] nev, int[:] nvar,
                    int64_t[:, :] xi, double[:, :] xd, double[:, :] pval, double[:, :] sval,
                    unsigned char[:, :] pok, unsigned char[:, :] sok, int nclauses,
                    int[:] cl_p, int[:] cl_s, int[:] cl_op, int[:, :] plist, int[:] kinds,
                    uint64_t[:] fmask, int64_t[:] out_i, double[:] out_d,
                    unsigned char[:] out_h, int64_t[:, :] wi, double[:, :] wd,
                    unsigned char[:, :] wh, unsigned char[:, :] flags,
                    unsigned char[:] vtaken) noexcept nogil:
    """One window of one partition; 0, or 1 on int64 overflow. Rows of the work arrays:
    0..m-1 node vectors, m..m+nvars-1 per-variable vectors, then the predecessor
    accumulator, the final vector and a scratch row. ``flags`` rows: the node has a vector
    (count > 0); a T_e node is stored (ANY) / still waiting (NEXT); consumed in this group."""
    cdef unsigned char[:] has = flags[0]
    cdef unsigned char[:] live = flags[1]
    cdef unsigned char[:] taken = flags[2]
    cdef Py_ssize_t VAR0 = m, PRED = m + nvars, FINAL = m + nvars + 1, TMP = m + nvars + 2
    cdef Py_ssize_t g0 = 0, g1, e0, e1, j, k, q, prev0 = 0, prev1 = 0, lo = 0
    cdef int v, u, pi_, rc
    cdef int64_t t
    cdef bint any_taken
    if True:
        # nodes are in event order; a timestamp group is a run of equal event times
        e0 = 0
        while e0 < n_ev:
            t = tv[e0]
            e1 = e0
            while e1 < n_ev and tv[e1] == t:
                e1 += 1
            g1 = g0
            while g1 < m and nev[g1] < e1:
                g1 += 1
            any_taken = False
            # ---- compute the group's node vectors from the state before the group --------
            for j in range(g0, g1):
                v = nvar[j]
                _zero(wi, wd, wh, PRED, nslots)
                if algo == A_CONT:
                    for k in range(prev0, prev1):
                        if not has[k]:
                            continue
                        u = nvar[k]
                        if not _is_pred(plist, v, u, nvars):
                            continue
                        if nclauses and not _theta(k, u, j, v, nclauses, cl_p, cl_s, cl_op,
                                                   pval, sval, pok, sok):
                            continue
                        if _add(wi, wd, wh, PRED, wi, wd, wh, k, kinds, nslots):
                            return 1
                else:
                    for pi_ in range(nvars):
                        u = plist[v, pi_]
                        if u < 0:
                            break
                        if (te >> u) & 1:
                            for k in range(lo, g0):
                                if live[k] and nvar[k] == u and _theta(
                                        k, u, j, v, nclauses, cl_p, cl_s, cl_op, pval, sval,
                                        pok, sok):
                                    if _add(wi, wd, wh, PRED, wi, wd, wh, k, kinds, nslots):
                                        return 1
                                    if algo == A_NEXT:
                                        taken[k] = 1
                                        any_taken = True
                        else:
                            if _add(wi, wd, wh, PRED, wi, wd, wh, VAR0 + u, kinds, nslots):
                                return 1
                            if algo == A_NEXT:
                                vtaken[u] = 1
                rc = _extend(wi, wd, wh, j, wi, wd, wh, PRED, v, v == start, xi, xd, j,
                             kinds, fmask, nslots)
                if rc < 0:
                    return 1
                has[j] = rc
            # ---- apply the group's updates -------------------------------------------------
            if algo == A_NEXT:
                for u in range(nvars):
                    if vtaken[u]:
                        _zero(wi, wd, wh, VAR0 + u, nslots)
                        vtaken[u] = 0
                if any_taken:
                    for k in range(lo, g0):
                        if taken[k]:
                            live[k] = 0
                            taken[k] = 0
            for j in range(g0, g1):
                if not has[j]:
                    continue
                v = nvar[j]
                if algo == A_CONT:
                    pass
                elif (te >> v) & 1:
                    live[j] = 1
                elif _add(wi, wd, wh, VAR0 + v, wi, wd, wh, j, kinds, nslots):
                    return 1
                if v == end and _add(wi, wd, wh, FINAL, wi, wd, wh, j, kinds, nslots):
                    return 1
            if algo == A_CONT:
                if e1 - e0 != 1:
                    # only trends starting here may go on: node vector := its single-event one
                    for j in range(g0, g1):
                        if has[j] and nvar[j] == start:
                            _zero(wi, wd, wh, TMP, nslots)
                            rc = _extend(wi, wd, wh, j, wi, wd, wh, TMP, start, True, xi, xd,
                                         j, kinds, fmask, nslots)
                            if rc < 0:
                                return 1
                        else:
                            has[j] = 0
                prev0, prev1 = g0, g1
            else:
                while lo < g0 and not live[lo]:
                    lo += 1
            g0 = g1
            e0 = e1
    for q in range(nslots):
        out_i[q] = wi[FINAL, q]
        out_d[q] = wd[FINAL, q]
        out_h[q] = wh[FINAL, q]
    return 0


cdef inline bint _is_pred(int[:, :] plist, int v, int u, int nvars) noexcept nogil:
    cdef int k
    for k in range(nvars):
        if plist[v, k] < 0:
            return False
        if plist[v, k] == u:
            return True
    return False
