"""``ce.bindings``: which variables bound each reported event of a complex event.

A complex event (CORE §2) is an interval and a set of positions; the variables that produced it
are not part of it, and several valuations may produce the same complex event. ``bindings``
reports, for every variable, the reported positions that *some* run producing this complex event
binds to it (the union over those runs). It is computed on demand, by a forward-backward pass of
the query's automaton over the partition's events from ``start`` to ``end`` with the marks fixed
by the complex event: linear in that span, and only for complex events whose bindings are read.
"""

from __future__ import annotations

from collections.abc import Iterator

from cercore.automata.cea import CEA, MARK, TRUE_LABEL


class BindingSolver:
    """Recovers bindings from the automaton, the atoms' variables and the events' letters."""

    def __init__(self, cea: CEA, atom_variables: dict[int, frozenset[str]],
                 atom_masks: list[int], wanted: frozenset[str] | None) -> None:
        self.cea = cea
        self.vars = atom_variables
        self.atom_masks = atom_masks  # letter -> bitmask of satisfied labels (grows)
        self.wanted = wanted  # projected variables (None: all)

    def _moves(self, p: int, mask: int, marked: bool):
        want = MARK if marked else 0
        for label, mark, q in self.cea.transitions[p]:
            if mark == want and (label == TRUE_LABEL or (mask >> label) & 1):
                yield label, q

    def _live(self, span: list[tuple[int, int]], marked: set[int]
              ) -> tuple[list[int], list[set[int]], list[set[int]]]:
        """Letter masks, and the states runs reach (forward) and can accept from (backward)
        at each step, with the marks fixed by the complex event."""
        masks = [self.atom_masks[letter] for _, letter in span]
        n = len(span)
        forward = [{self.cea.initial}]
        for i in range(n):
            forward.append({q for p in forward[i] for _, q in
                            self._moves(p, masks[i], span[i][0] in marked)})
        backward: list[set[int]] = [set() for _ in range(n + 1)]
        backward[n] = set(self.cea.finals) & forward[n]
        for i in range(n - 1, -1, -1):
            is_marked = span[i][0] in marked
            backward[i] = {p for p in forward[i] if any(
                q in backward[i + 1] for _, q in self._moves(p, masks[i], is_marked))}
        return masks, forward, backward

    def solve(self, span: list[tuple[int, int]], positions: tuple[int, ...]
              ) -> dict[str, tuple[int, ...]]:
        """``span``: (position, letter) of the partition's events from start to end."""
        marked = set(positions)
        masks, _, backward = self._live(span, marked)
        found: dict[str, set[int]] = {}
        for i, (pos, _) in enumerate(span):
            if pos not in marked:
                continue
            for p in backward[i]:
                for label, q in self._moves(p, masks[i], True):
                    if q in backward[i + 1] and label != TRUE_LABEL:
                        for v in self.vars.get(label, ()):
                            if self.wanted is None or v in self.wanted:
                                found.setdefault(v, set()).add(pos)
        return {v: tuple(sorted(ps)) for v, ps in sorted(found.items())}

    def valuations(self, span: list[tuple[int, int]], positions: tuple[int, ...]
                   ) -> Iterator[dict[str, list[int]]]:
        """Each distinct valuation of the accepting runs that produce this complex event:
        variable -> the positions it binds, in order (every variable, projected or not).
        Depth first along the runs that can still accept; a valuation is yielded once."""
        marked = set(positions)
        masks, _, backward = self._live(span, marked)
        n = len(span)
        seen: set = set()
        stack: list[tuple[int, int, frozenset]] = [(0, self.cea.initial, frozenset())]
        while stack:
            i, p, binds = stack.pop()
            if (i, p, binds) in seen:
                continue
            seen.add((i, p, binds))
            if i == n:
                if ("@", binds) not in seen:
                    seen.add(("@", binds))
                    out: dict[str, list[int]] = {}
                    for v, pos in sorted(binds, key=lambda vp: vp[1]):
                        out.setdefault(v, []).append(pos)
                    yield out
                continue
            pos, is_marked = span[i][0], span[i][0] in marked
            for label, q in self._moves(p, masks[i], is_marked):
                if q not in backward[i + 1]:
                    continue
                extra = binds
                if is_marked and label != TRUE_LABEL:
                    extra = binds | {(v, pos) for v in self.vars.get(label, ())}
                stack.append((i + 1, q, extra))


class ComplexEventBindings:
    """``ce.bindings`` of one engine's complex events (its store's views call it): the solver
    over the projected variables, built on first use; under predicates between events,
    ``checked`` (an ``EventPredicateCheck``), which keeps only the valuations that satisfy
    them (the others do not produce the complex event)."""

    def __init__(self, cea: CEA, atom_variables: dict[int, frozenset[str]],
                 atom_masks: list[int], projection, not_read: int, checked=None) -> None:
        self.cea = cea
        self.vars = atom_variables
        self.atom_masks = atom_masks
        self.wanted = None if projection == "*" else frozenset() if projection == "NONE" \
            else frozenset(item.var for item in projection)
        self.not_read = not_read
        self.checked = checked
        self.solver: BindingSolver | None = None

    def __call__(self, view, ce) -> dict[str, tuple[int, ...]]:
        if self.checked is not None:
            return self.checked.bindings(view, ce)
        if self.solver is None:
            self.solver = BindingSolver(self.cea, self.vars, self.atom_masks, self.wanted)
        span = view.span(ce.start, ce.end)
        pid = next(p for pos, _, p in span if pos == ce.end)
        return self.solver.solve([(pos, letter) for pos, letter, p in span
                                  if p == pid and letter != self.not_read], ce.positions)

