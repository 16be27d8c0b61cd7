"""Resolve: the FROM streams, the window, PARTITION BY, SELECT and the ABSENT(...) WITHIN
spans, against the schema and the atoms the lowering made."""

from __future__ import annotations

import math

from cercore.ceql import ast
from cercore.ceql.analysis.context import Context, Stage
from cercore.ceql.analysis.formulas import (
    _absent_only,
    _bindable,
    _leading_absence,
    _trailing_absence,
    _unbound_hint,
)
from cercore.ceql.analysis.lower import Lowered
from cercore.ceql.analysis.results import Deadline, WindowSpec
from cercore.errors import did_you_mean
from cercore.types import INT64_MAX, AttrType, window_length


class Resolver(Stage):
    """Resolves the clauses that read the lowered atoms (the event types the pattern uses, the
    variables they bind, the ABSENT(...) atoms)."""

    def __init__(self, ctx: Context, visible: set[str], lowered: Lowered) -> None:
        super().__init__(ctx)
        self.visible = visible
        self.lowered = lowered
        self.atoms = lowered.atoms
        self.trailing = _trailing_absence(self.q.formula)  # ABSENT(ψ) WITHIN T ending it
        self.leading = _leading_absence(self.q.formula)  # ABSENT(ψ) WITHIN T starting it

    def resolve_window(self) -> WindowSpec:
        return self.window_spec(self.q.within)

    def window_spec(self, w: ast.Window | None) -> WindowSpec:
        """A WITHIN span (the query's window, or an ABSENT's deadline) in event-time units."""
        if w is None:
            return WindowSpec()
        if isinstance(w, ast.EventsWindow):
            if w.count < 0:
                raise self.error("WITHIN needs a non-negative number of events", w)
            return WindowSpec("events", self.within_int64(w.count, "events", w))
        if isinstance(w, ast.TimeWindow):
            attr = self.schema.time_attribute
            if attr is None:
                raise self.error(
                    "a time window needs event time, but the schema names no time attribute", w,
                    "mark one attribute primary_time in the declaration, or pass "
                    "time_attribute=... (CLI: --time-attribute)")
            if not self.schema.time_unit_stated:
                told = unstated_unit_warning(attr)
                if told not in self.warnings:
                    self.warnings.append(told)
            units = window_length(w.seconds, self.schema.time_unit)
            return WindowSpec("time", self.within_int64(
                INT64_MAX + 1 if units is None else units, self.schema.time_unit, w), attr)
        attr = w.attribute
        t = self.attr_types.get(attr)
        if t is None:
            raise self.error(f"unknown attribute {attr!r} in WITHIN"
                             + did_you_mean(attr, self.attr_types), w)
        if t is not AttrType.INT:
            raise self.error(f"WITHIN [{attr}] needs an int attribute, not {t.value}", w)
        used = {self.schema.type_names[t] for a in self.atoms for t in a.types}
        lacking = sorted(n for n in used if not self.schema.event_types[n].has(attr))
        if lacking:
            raise self.error(f"WITHIN [{attr}]: event type(s) {', '.join(lacking)} have no "
                             f"attribute {attr!r}", w)
        amount = w.amount
        if isinstance(amount, float) and math.isfinite(amount):
            amount = math.floor(amount)
        return WindowSpec("attr", self.within_int64(amount, f"of {attr}", w), attr)

    def within_int64(self, amount: int | float, unit: str, w) -> int:
        """A window length checked against int64 (times are int64: a longer window could
        not be told from no window, and the kernels' arithmetic would overflow)."""
        if isinstance(amount, float) or not 0 <= amount <= INT64_MAX:
            raise self.error(f"WITHIN is too large: at most {INT64_MAX} {unit} (event times and "
                             "window lengths are int64)", w,
                             "leave WITHIN out for an unbounded window")
        return int(amount)

    def resolve_partition(self) -> tuple[tuple[str, ...], ...]:
        declared = {a for n in self.visible for a, _ in self.schema.event_types[n].attributes}
        for group in self.q.partition_by:
            for a in group:
                if a not in declared:
                    raise self.error(f"unknown attribute {a!r} in PARTITION BY"
                                     + did_you_mean(a, declared),
                                     self.spot(r"\bPARTITION\s+BY\b", a))
        used = {self.schema.type_names[t] for a in self.atoms for t in a.types}
        for group in self.q.partition_by:
            for name in sorted(used):
                have = [a for a in group if self.schema.event_types[name].has(a)]
                if len(have) > 1:
                    raise self.error(
                        f"event type {name} has {len(have)} of the attributes of PARTITION BY "
                        f"[{', '.join(group)}] ({', '.join(have)}): inside one bracket each "
                        "event type has exactly one of them (one key that types name "
                        "differently, e.g. [plug, household])",
                        self.spot(r"\bPARTITION\s+BY\b", group[0]),
                        "for the pair as a composite key, write PARTITION BY "
                        + ", ".join(f"[{a}]" for a in group))
        for group in self.q.partition_by:
            lacking = sorted(n for n in used
                             if not any(self.schema.event_types[n].has(a) for a in group))
            if lacking:
                self.warnings.append(
                    f"event type(s) {', '.join(lacking)} have none of PARTITION BY "
                    f"[{', '.join(group)}]: their events belong to no partition and never match")
        return tuple(tuple(g) for g in self.q.partition_by)

    def resolve_projection(self) -> frozenset[int] | None:
        """SELECT x, y: the atoms binding a projected variable (event-type names are variables
        too); SELECT NONE: no atom; SELECT *: None (every atom)."""
        proj = self.q.projection
        if proj == "*":
            return None
        if proj == "NONE":
            return frozenset()
        bindable = _bindable(self.q.formula)
        absent = _absent_only(self.q.formula)
        for item in proj:
            if item.var in absent:
                raise self.error(f"SELECT names {item.var!r}, which only an ABSENT(...) reads: "
                                 "it binds no event", item)
            if item.var not in bindable:
                raise self.error(f"SELECT names {item.var!r}, which the WHERE clause does not "
                                 "bind" + did_you_mean(item.var, bindable), item,
                                 _unbound_hint(item.var))
            known = {a for t in bindable[item.var]
                     for a, _ in self.schema.event_types[t].attributes}
            for attr in item.attributes or ():
                if attr not in known:
                    raise self.error(f"SELECT {item.var}[{attr}]: no event {item.var!r} can bind "
                                     f"has an attribute {attr!r}" + did_you_mean(attr, known),
                                     item)
        wanted = {item.var for item in proj}
        return frozenset(a.id for a in self.atoms if a.variables & wanted)

    def resolve_from_streams(self) -> frozenset[int] | None:
        """FROM: the ids of the streams whose tagged events the query reads (None: no FROM)."""
        if not self.q.streams:
            return None
        return frozenset(self.schema.stream_ids[n] for n in self.q.streams)

    def window_warnings(self, window: WindowSpec) -> None:
        """What no WITHIN clause costs."""
        if window.kind is None and (self.trailing is not None or self.leading is not None):
            self.warnings.append(
                "no WITHIN clause after the pattern: the ABSENT(...) WITHIN span bounds only "
                "the wait beside the pattern, not the pattern itself, so the events it reads "
                "are kept for the whole stream (memory grows with it); add a WITHIN for the "
                "pattern (e.g. ... WITHIN 5 MINUTES at the end) to bound it")
        elif window.kind is None:
            self.warnings.append("no WITHIN clause: memory grows with the stream "
                                 "(nothing can be reclaimed)")

    def resolve_deadline(self, window: WindowSpec) -> Deadline | None:
        """The trailing ``ABSENT(ψ) WITHIN T``: T on the attribute event time is ordered by,
        ψ's condition the same in every FILTER alternative, no CONSUME BY or LIMIT (they act
        when φ completes, before the deadline says whether it is reported)."""
        return self.absence_span(self.trailing, self.lowered.deadline_atoms, window)

    def resolve_lookback(self, window: WindowSpec) -> Deadline | None:
        """The leading ``ABSENT(ψ) WITHIN T``: as a deadline, looking back from φ's first
        event; under a window counted in events the ψ events to keep would be unbounded."""
        e = self.leading
        if e is not None and window.kind == "events":
            raise self.error("ABSENT(...) WITHIN ... at the start of a pattern needs a time "
                             "window (or none), not WITHIN n EVENTS", e)
        return self.absence_span(e, self.lowered.lookback_atoms, window)

    def absence_span(self, e: ast.Absent | None, groups: list, window: WindowSpec
                     ) -> Deadline | None:
        if e is None:
            return None
        spec = self.window_spec(e.deadline)
        ordered = window.attribute if window.kind in ("time", "attr") \
            else self.schema.time_attribute
        if spec.attribute != ordered:
            raise self.error(f"the span of ABSENT(...) WITHIN is measured on {spec.attribute!r} "
                             f"but event time is ordered by {ordered!r}", e.deadline,
                             "give the span and the WITHIN window the same attribute")
        for clause, value in (("CONSUME BY", self.q.consume not in (None, "NONE")),
                              ("LIMIT", self.q.limit is not None)):
            if value:
                raise self.error(f"{clause} with an ABSENT(...) WITHIN span is not supported", e,
                                 f"{clause} would act when the rest of the pattern completes, "
                                 "before the absence says whether it is reported")
        conditions = {tuple(sorted((tuple(sorted(a.types)), repr(a.guard), repr(a.streams))
                                   for a in atoms)) for atoms in groups}
        if len(conditions) > 1:
            raise self.error("the FILTER alternatives (OR) give the ABSENT(...) with a "
                             "span different conditions", e,
                             "filter the absent variable outside the OR: "
                             "FILTER b[...] AND (x[...] OR y[...])")
        atoms = tuple(a.id for group in groups for a in group)
        return Deadline(spec.epsilon, spec.attribute, atoms)


def unstated_unit_warning(attribute: str) -> str:
    """What a time window over an integer time attribute of no stated unit is told (CEQL
    and trend queries alike)."""
    return (f"a time window reads integer values of {attribute!r} as seconds, the default "
            f"unit, which the declaration does not state: write {attribute}:primary_time(ms) "
            "(or s, us, ns), or pass time_unit= (CLI: --time-unit); timestamps (datetimes, "
            "ISO-8601 text) are read as instants whatever the unit")
