"""``ce.bindings``: which variables bound each reported event of a complex event.

A complex event (CORE §2) is an interval and a set of positions; the variables that produced it
are not part of it, and several valuations may produce the same complex event. ``bindings``
reports, for every variable, the reported positions that *some* run producing this complex event
binds to it (the union over those runs). It is computed on demand, by a forward-backward pass of
the query's automaton over the partition's events from ``start`` to ``end`` with the marks fixed
by the complex event: linear in that span, and only for complex events whose bindings are read.
"""

from __future__ import annotations

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

    def solve(self, span: list[tuple[int, int]], positions: tuple[int, ...]
              ) -> dict[str, tuple[int, ...]]:
        """``span``: (position, letter) of the partition's events from start to end."""
        marked = set(positions)
        masks = [self.atom_masks[letter] for _, letter in span]
        n = len(span)
        forward = [{self.cea.initial}]
        for i in range(n):
            forward.append({q for p in forward[i] for _, q in
                            self._moves(p, masks[i], span[i][0] in marked)})
        backward: list[set[int]] = [set() for _ in range(n + 1)]
        backward[n] = set(self.cea.finals) & forward[n]
        found: dict[str, set[int]] = {}
        for i in range(n - 1, -1, -1):
            pos, is_marked = span[i][0], span[i][0] in marked
            for p in forward[i]:
                for label, q in self._moves(p, masks[i], is_marked):
                    if q in backward[i + 1]:
                        backward[i].add(p)
                        if is_marked and label != TRUE_LABEL:
                            for v in self.vars.get(label, ()):
                                if self.wanted is None or v in self.wanted:
                                    found.setdefault(v, set()).add(pos)
        return {v: tuple(sorted(ps)) for v, ps in sorted(found.items())}
