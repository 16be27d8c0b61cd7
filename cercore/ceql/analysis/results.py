"""What the analysis hands to later stages: the analysed query, its window and its
ABSENT(...) WITHIN spans."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cercore.ceql import ast
from cercore.ceql.normal import NAtom, NFormula, NNot

if TYPE_CHECKING:  # (annotations only: the schema layer sits above this one)
    from cercore.schema import Schema


@dataclass(frozen=True)
class WindowSpec:
    """The WITHIN clause, resolved. ``epsilon`` is inclusive: end − start ≤ epsilon, measured in
    query-read events (``kind="events"``) or in the integer values of ``attribute``."""

    kind: str | None = None  # None | "events" | "time" | "attr"
    epsilon: int = 0
    attribute: str | None = None


@dataclass(frozen=True)
class Deadline:
    """``φ ; ABSENT(ψ) WITHIN T``: T in units of ``attribute`` (the attribute event time is
    ordered by) and the atoms of ψ (events satisfying one of them rule a pending complex event
    out). See ``cercore.runtime.deadlines``."""

    span: int
    attribute: str
    psi_atoms: tuple[int, ...]

    @property
    def psi_bits(self) -> int:
        return sum(1 << a for a in self.psi_atoms)


@dataclass
class AnalysedQuery:
    """Everything later stages need, with no reference to variables."""

    query: ast.Query
    schema: Schema
    text: str | None
    formula: NFormula
    atoms: list[NAtom]
    leaves: list[ast.Pred]
    visible_types: frozenset[int]
    window: WindowSpec
    partition_by: tuple[tuple[str, ...], ...]
    warnings: list[str] = field(default_factory=list)
    negations: list[NNot] = field(default_factory=list)
    # projection: ids of the atoms whose events are reported (None: SELECT *)
    # FROM: ids of the streams whose tagged events the query reads (None: no FROM, all)
    from_streams: frozenset[int] | None = None
    marked: frozenset[int] | None = None
    strategy: str | None = None  # STRICT | NEXT | LAST | MAX; None for ALL/ANY/no keyword
    # predicates between events (b.price > s.price), checked on each complex event
    event_predicates: tuple[ast.Compare, ...] = ()
    # the PARTITION BY group those predicates' equalities imply (also in partition_by), or None
    implied_partition: tuple[str, ...] | None = None
    # ABSENT(...) between sequence elements: the labels of their gaps (NNot over the absent
    # atoms); unlike NOT, they consume nothing, so events that satisfy no atom stay skippable
    absences: list[NNot] = field(default_factory=list)
    # φ ; ABSENT(ψ) WITHIN T at the end of the pattern (the formula above is φ), or None
    deadline: Deadline | None = None
    # ABSENT(ψ) WITHIN T ; φ at its start: no ψ event in the T before φ's first event
    lookback: Deadline | None = None
    # the predicates between events the engine checks: those the partition does not already
    # guarantee (an equality x.a = y.b between the attributes that key every type x and y
    # can bind holds on every complex event, since each partition is evaluated apart)
    checked_predicates: tuple[ast.Compare, ...] = ()

    @property
    def attribute_projection(self) -> dict[str, tuple[str, ...] | None] | None:
        """``SELECT x[a, b], y``: variable -> the attributes its events report (None: all);
        None when no SELECT item restricts attributes."""
        proj = self.query.projection
        if not isinstance(proj, tuple) or all(i.attributes is None for i in proj):
            return None
        out: dict[str, tuple[str, ...] | None] = {}
        for item in proj:
            if item.attributes is None or out.get(item.var, ()) is None:
                out[item.var] = None
            else:
                out[item.var] = tuple(dict.fromkeys(out.get(item.var, ()) + item.attributes))
        return out
