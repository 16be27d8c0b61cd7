# distutils: language = c++
# cython: language_level=3
"""Predicates between events checked while the Cython evaluator enumerates: the twin of
``cercore.runtime.event_predicates.IncrementalCheck``, with the same rules (see that module).

A comparison of two numeric operands -- each a term ``x.a`` / ``NEXT(x).a`` of one of at most
two variables, a number, or arithmetic over those (``cercore_fast/arithmetic.pxd``) -- runs
here, without the GIL, over the typed term values (``TermValues.numbers``/``valid``): null is
false; two ints compare as int64, otherwise both as doubles (an int beside a double is read as
a double, as the predicate layer reads it); NaN compares false but for ``!=``. An int64
result that overflows, which Python's exact ints would carry on with, and every other
predicate call the predicate layer's scalar closure (``IncrementalCheck.new_combinations_hold``)
with the GIL, so it means what it means everywhere else.
"""

cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t
from libcpp.vector cimport vector

from cercore_fast.arithmetic cimport (MAX_STEPS, VALUE_NULL, VALUE_OK, VALUE_OVERFLOW,
                                      compute, load_steps)
from cercore_fast.comparisons cimport compare

from cercore.predicates import COMPARISON_CODES
from cercore.interface.constants import AMBIGUOUS

cdef int32_t C_AMBIGUOUS = AMBIGUOUS
# a compiled check's outcome when int64 arithmetic overflowed: the scalar closure decides
cdef int NOT_EXACT = 3
MAX_OPERAND_STEPS = MAX_STEPS  # (tests pin event_predicates.MAX_STEPS to it)


cdef inline int _compare(int32_t op, Operand* l, Operand* r, double ld, int64_t li,
                         double rd, int64_t ri) noexcept nogil:
    """``l op r`` given the operands' values (as double and as int64): two ints as int64,
    anything with a double as doubles."""
    if l.is_double or r.is_double:
        return compare[double](op, ld if l.is_double else <double>li,
                               rd if r.is_double else <double>ri)
    return compare[int64_t](op, li, ri)


@cython.final
cdef inline bint _new_element(vector[int64_t]* bound, bint paired, int64_t pos, int64_t* a,
                             int64_t* b) noexcept nogil:
    """The new element the event at ``pos`` gives a variable it is bound to: the event, or for
    a paired variable the pair (``pos``, its last bound position) -- none (False) while
    nothing is bound before it."""
    if not paired:
        a[0] = b[0] = pos
        return True
    if bound.size() == 0:
        return False
    a[0] = pos
    b[0] = bound.back()
    return True


cdef class BetweenKernel:
    """The enumerator's check of predicates between events (``push`` / ``cut`` /
    ``accepts``, called by ``CythonEvaluator.enum_run``)."""

    def __init__(self, plan, values, check):
        cdef CheckSpec spec
        self.plan = plan
        self.values = values
        self.check = check
        self.error = None
        self.n_vars = len(plan.variables)
        self.bound_pos.resize(self.n_vars)
        self.bound_depth.resize(self.n_vars)
        self.var_checks.resize(self.n_vars)
        self.ambiguous_at = -1
        self.arrays = []
        slots = {a: i for i, a in enumerate(plan.attributes)}
        for ci, c in enumerate(plan.checks):
            spec.n_vars = len(c.vids)
            spec.var0 = c.vids[0]
            spec.var1 = c.vids[1] if len(c.vids) > 1 else -1
            spec.paired0 = c.paired[0]
            spec.paired1 = c.paired[1] if len(c.vids) > 1 else 0
            form = c.compiled
            spec.compiled = form is not None and len(c.vids) <= 2 and values.typed
            spec.op = COMPARISON_CODES[form[0]] if spec.compiled else 0
            if spec.compiled:
                _operand(&spec.left, form[1], c, slots)
                _operand(&spec.right, form[2], c, slots)
            self.specs.push_back(spec)
            for v in c.vids:
                self.var_checks[v].push_back(ci)
        self.version = -1
        self.refresh()

    cdef int refresh(self) except -1:
        """Point at the term values' current arrays (they grow and shift between runs)."""
        values = self.values
        if values.version == self.version:
            self.base = values.base
            return 0
        self.version = values.version
        self.base = values.base
        self.dvals.clear()
        self.ivals.clear()
        self.valid.clear()
        self.slot_double.clear()
        self.arrays = []
        cdef const double[::1] d
        cdef const int64_t[::1] i
        cdef const uint8_t[::1] ok
        for a in self.plan.attributes:
            arr = values.numbers.get(a)
            if arr is None or not len(arr):
                self.dvals.push_back(NULL)
                self.ivals.push_back(NULL)
                self.valid.push_back(NULL)
                self.slot_double.push_back(0)
                continue
            self.arrays += [arr, values.valid[a]]
            ok = values.valid[a]
            self.valid.push_back(&ok[0])
            if arr.dtype.kind == "f":
                d = arr
                self.dvals.push_back(&d[0])
                self.ivals.push_back(NULL)
                self.slot_double.push_back(1)
            else:
                i = arr
                self.ivals.push_back(&i[0])
                self.dvals.push_back(NULL)
                self.slot_double.push_back(0)
        return 0

    # ---- the walk ------------------------------------------------------------------------------
    cdef void cut(self, int64_t depth) noexcept nogil:
        """Back to a path of ``depth`` events."""
        cdef int32_t v
        for v in range(self.n_vars):
            while self.bound_depth[v].size() and self.bound_depth[v].back() >= depth:
                self.bound_depth[v].pop_back()
                self.bound_pos[v].pop_back()
        if self.ambiguous_at >= depth:
            self.ambiguous_at = -1

    cdef int push(self, int64_t pos, int32_t label, int64_t depth) noexcept nogil:
        """The event at ``pos`` joins the path at ``depth``: 0 when a combination it
        completes fails (abandon the branch), 1 when nothing was checked, 2 when checks
        passed, -1 on an error (in ``error``)."""
        cdef int64_t mask
        cdef int32_t v, ci, k
        cdef int rc, checked = 0
        cdef const vector[int32_t]* todo
        if self.ambiguous_at >= 0:
            return 1
        if label <= C_AMBIGUOUS:  # (NIL: no label known, checked whole)
            self.ambiguous_at = depth
            return 1
        mask = label - 1
        # each check once, at the first of its variables the event is bound to (plan order
        # within a variable; the outcome and the counts do not depend on the order)
        for v in range(self.n_vars):
            if not (mask >> v) & 1:
                continue
            todo = &self.var_checks[v]
            for k in range(<int32_t>todo.size()):
                ci = todo[0][k]
                if self.specs[ci].var0 != v and (mask >> self.specs[ci].var0) & 1:
                    continue  # (checked at its first variable)
                if self.specs[ci].n_vars > 2 and not self._first_in(ci, v, mask):
                    continue
                checked = 1
                rc = self._compiled(&self.specs[ci], pos, mask) if self.specs[ci].compiled \
                    else NOT_EXACT
                if rc == NOT_EXACT:
                    rc = self._in_python(ci, pos, label)
                if rc != 1:
                    return rc
        for v in range(self.n_vars):
            if (mask >> v) & 1:
                self.bound_pos[v].push_back(pos)
                self.bound_depth[v].push_back(depth)
        return 2 if checked else 1

    cdef int _first_in(self, int32_t ci, int32_t v, int64_t mask) noexcept with gil:
        """Is ``v`` the first variable of check ``ci`` (more than two variables) in ``mask``?"""
        for u in self.plan.checks[ci].vids:
            if (mask >> u) & 1:
                return u == v
        return 0

    cdef int _value(self, Operand* o, int64_t a0, int64_t a1, int64_t b0, int64_t b1,
                    double* d, int64_t* i) noexcept nogil:
        """An operand's value on a combination ((a0, a1): the first variable's event and next
        event, (b0, b1): the second's): VALUE_OK, VALUE_NULL (a null leaf, or a division by
        zero) or VALUE_OVERFLOW (Python's exact ints would go on)."""
        cdef double ld[MAX_STEPS]
        cdef int64_t li[MAX_STEPS]
        cdef int32_t k
        if o.n == 1:
            return self._leaf(&o.leaves[0], a0, a1, b0, b1, d, i)
        for k in range(o.nleaves):
            ld[k] = 0
            li[k] = 0
            if not self._leaf(&o.leaves[k], a0, a1, b0, b1, &ld[k], &li[k]):
                return VALUE_NULL
        return compute(o.steps, o.n, ld, li, d, i)

    cdef int _leaf(self, Leaf* o, int64_t a0, int64_t a1, int64_t b0, int64_t b1,
                   double* d, int64_t* i) noexcept nogil:
        """A leaf's value on a combination (see ``_value``): VALUE_OK or VALUE_NULL."""
        cdef int64_t p, at
        if not o.is_term:
            d[0] = o.dconst
            i[0] = o.iconst
            return VALUE_OK
        if o.k == 0:
            p = a1 if o.side else a0
        else:
            p = b1 if o.side else b0
        at = p - self.base
        if not self.valid[o.slot][at]:
            return VALUE_NULL
        if o.is_double:
            d[0] = self.dvals[o.slot][at]
        else:
            i[0] = self.ivals[o.slot][at]
        return VALUE_OK

    cdef int _holds(self, CheckSpec* s, int64_t a0, int64_t a1, int64_t b0,
                           int64_t b1) noexcept nogil:
        """1 / 0: the comparison holds or not on the combination; NOT_EXACT: ask Python."""
        cdef double ld = 0, rd = 0
        cdef int64_t li = 0, ri = 0
        cdef int rc = self._value(&s.left, a0, a1, b0, b1, &ld, &li)
        if rc != VALUE_OK:
            return NOT_EXACT if rc == VALUE_OVERFLOW else 0
        rc = self._value(&s.right, a0, a1, b0, b1, &rd, &ri)
        if rc != VALUE_OK:
            return NOT_EXACT if rc == VALUE_OVERFLOW else 0
        return _compare(s.op, &s.left, &s.right, ld, li, rd, ri)

    cdef int _compiled(self, CheckSpec* s, int64_t pos, int64_t mask) noexcept nogil:
        """The combinations of a compiled check (one or two variables) the event completes:
        the new element of each of its variables the event is bound to, with the old
        elements of the others (as ``new_combinations_hold`` decomposes them)."""
        cdef vector[int64_t]* b0 = &self.bound_pos[s.var0]
        cdef vector[int64_t]* b1
        cdef bint new0 = (mask >> s.var0) & 1, new1
        cdef int64_t n0a, n0b, n1a, n1b
        if new0:
            new0 = _new_element(b0, s.paired0, pos, &n0a, &n0b)
        cdef int rc
        if s.n_vars == 1:
            return self._holds(s, n0a, n0b, 0, 0) if new0 else 1
        b1 = &self.bound_pos[s.var1]
        new1 = (mask >> s.var1) & 1
        if new1:
            new1 = _new_element(b1, s.paired1, pos, &n1a, &n1b)
        if new0:
            # the first variable's new element with every element of the second
            rc = self._with_old(s, n0a, n0b, b1, s.paired1, True)
            if rc != 1:
                return rc
            if new1:
                rc = self._holds(s, n0a, n0b, n1a, n1b)
                if rc != 1:
                    return rc
        # the second variable's new element with the first's old elements
        if new1:
            return self._with_old(s, n1a, n1b, b0, s.paired0, False)
        return 1

    cdef int _with_old(self, CheckSpec* s, int64_t na, int64_t nb, vector[int64_t]* old,
                       bint paired, bint new_first) noexcept nogil:
        """Whether the check holds for one variable's new element (na, nb) with each element
        bound in ``old`` of the other variable (``new_first``: the new one is the first
        variable's). A paired variable's elements are its consecutive positions (latest,
        previous); another's are single positions."""
        cdef int64_t j, step = 1 if paired else 0
        cdef int rc
        for j in range(<int64_t>old.size() - step):
            if new_first:
                rc = self._holds(s, na, nb, old[0][j + step], old[0][j])
            else:
                rc = self._holds(s, old[0][j + step], old[0][j], na, nb)
            if rc != 1:
                return rc
        return 1

    cdef int _in_python(self, int32_t ci, int64_t pos, int32_t label) noexcept with gil:
        """A check the kernel does not compile: the predicate layer's scalar closure."""
        cdef int32_t v
        cdef size_t j
        try:
            bound = [[self.bound_pos[v][j] for j in range(self.bound_pos[v].size())]
                     for v in range(self.n_vars)]
            new = self.plan.label_info(label)[0]
            return 1 if self.check.new_combinations_hold(ci, pos, new, bound) else 0
        except BaseException as e:
            self.error = e
            return -1

    cdef int accepts(self, int64_t start, int64_t end, vector[int64_t]& path) noexcept nogil:
        """At the bottom of a path (``path``: its positions, latest first): 1, or the whole
        check when an AMBIGUOUS node left part of it unchecked (0: drop it; -1: error)."""
        if self.ambiguous_at < 0:
            return 1
        return self._whole(start, end, path)

    cdef int _whole(self, int64_t start, int64_t end, vector[int64_t]& path) noexcept with gil:
        cdef Py_ssize_t j
        try:
            positions = tuple([path[j] for j in range(<Py_ssize_t>path.size() - 1, -1, -1)])
            return 1 if self.check.full(start, end, positions) else 0
        except BaseException as e:
            self.error = e
            return -1

    def pop_error(self):
        """The exception a Python call raised during the walk (None: none)."""
        e, self.error = self.error, None
        return e


cdef void _operand(Operand* o, form, c, dict slots) except *:
    """Fill ``o`` from a compiled form's operand (``cercore.runtime.event_predicates``): a
    leaf, or ``("expr", steps, is_double)``."""
    cdef int32_t q
    leaves = load_steps(o.steps, &o.n, form)
    o.nleaves = len(leaves)
    for q in range(o.nleaves):
        _fill_leaf(&o.leaves[q], leaves[q], c, slots)
    o.is_double = o.steps[o.n - 1].is_double


cdef void _fill_leaf(Leaf* o, form, c, dict slots) except *:
    o.is_double = form[2]
    o.dconst = 0
    o.iconst = 0
    o.k = o.side = o.slot = 0
    if form[0] == "term":
        k, side, attr = c.terms[form[1]]
        o.is_term = 1
        o.k = k
        o.side = side
        o.slot = slots[attr]
    else:
        o.is_term = 0
        o.dconst = <double>form[1]
        if not form[2]:
            o.iconst = <int64_t>form[1]
