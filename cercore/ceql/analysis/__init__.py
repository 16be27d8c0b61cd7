"""Semantic analysis: check a parsed query against the schema, lower its formula to normalised
CEL (filters pushed down onto atoms), and resolve its clauses against the atoms that makes.

``analyse`` runs the stages in this order (each raises the first problem it finds, so the order
says which error a query with several is told):

1. ``check``: the clauses, the FROM streams, every name in the formula and the types of its
   predicates, and where predicates between events may stand;
2. ``lower``: the formula as normalised CEL, one atom per event it can read;
3. ``resolve``: the window, PARTITION BY (with the group that equalities between events imply,
   ``partition``), SELECT and the ABSENT(...) WITHIN spans, against those atoms.

``context`` holds what the stages share, ``formulas`` the walks over the AST they all read, and
``results`` what the analysis hands on (``AnalysedQuery``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cercore.ceql import ast
from cercore.ceql.analysis.check import MAX_REPEAT, Checker
from cercore.ceql.analysis.context import Context, Spot
from cercore.ceql.analysis.formulas import _bindable, atom_variables
from cercore.ceql.analysis.lower import MAX_FILTER_DISJUNCTS, Lowerer
from cercore.ceql.analysis.partition import implied_partition, partition_guarantees
from cercore.ceql.analysis.resolve import Resolver, unstated_unit_warning
from cercore.ceql.analysis.results import AnalysedQuery, Deadline, WindowSpec

if TYPE_CHECKING:  # (annotations only: the schema layer sits above this one)
    from cercore.schema import Schema

__all__ = ["MAX_FILTER_DISJUNCTS", "MAX_REPEAT", "AnalysedQuery", "Deadline", "Spot",
           "WindowSpec", "analyse", "atom_variables", "partition_guarantees",
           "unstated_unit_warning"]


def analyse(query: ast.Query, schema: Schema, text: str | None = None) -> AnalysedQuery:
    """Resolve, type-check and lower a parsed query; raises CEQLSemanticError."""
    ctx = Context(query, schema, text)
    # 1. check: the clauses, the FROM streams, the formula's names and types, the predicates
    #    between events
    check = Checker(ctx)
    check.check_clauses()
    visible = check.check_streams()
    check.check_formula(query.formula)
    event_predicates = check.check_event_predicates()

    # 2. lower: normalised CEL
    lowered = Lowerer(ctx).run()

    # 3. resolve, against the atoms: the window, the partition (with the group the
    #    predicates between events imply), then the rest of the AnalysedQuery
    resolve = Resolver(ctx, visible, lowered)
    window = resolve.resolve_window()
    partition = resolve.resolve_partition()
    implied = implied_partition(query, schema, event_predicates)
    if implied is not None:
        partition += (implied,)
    check.check_absent_predicates(implied)
    resolve.window_warnings(window)
    return AnalysedQuery(query, schema, text, lowered.formula, lowered.atoms, lowered.leaves,
                         frozenset(schema.event_types[t].id for t in visible),
                         window, partition, ctx.warnings, lowered.negations,
                         resolve.resolve_from_streams(),
                         resolve.resolve_projection(),
                         query.strategy if query.strategy not in ("ALL", "ANY") else None,
                         event_predicates, implied, lowered.absences,
                         resolve.resolve_deadline(window), resolve.resolve_lookback(window),
                         checked_predicates=tuple(
                             c for c in event_predicates if not partition_guarantees(
                                 c, partition, schema, _bindable(query.formula))))
