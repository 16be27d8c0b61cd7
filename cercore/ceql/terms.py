"""The ``x.attr`` / ``NEXT(x).attr`` terms of predicates between events: found and renamed in
one place for every reader of them -- the CEQL analysis, the engine's check of predicates between
events (``cercore.runtime.event_predicates``) and trend conditions (``cercore.trends``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from cercore.ceql import ast

__all__ = ["event_terms", "rename_terms"]


def event_terms(e: Any) -> list[ast.EventAttr]:
    """The ``x.attr`` / ``NEXT(x).attr`` terms of an expression, a comparison (LIKE, IN), or
    predicates over them joined by AND / OR / NOT, in order."""
    if isinstance(e, ast.EventAttr):
        return [e]
    if isinstance(e, ast.Compare | ast.BinOp | ast.PredAnd | ast.PredOr):
        return event_terms(e.left) + event_terms(e.right)
    if isinstance(e, ast.Neg | ast.PredNot | ast.Like | ast.InSet):
        return event_terms(e.operand)
    if isinstance(e, ast.InRange):
        return event_terms(e.operand) + event_terms(e.lo) + event_terms(e.hi)
    return []


def rename_terms(e: Any, term: Callable[[ast.EventAttr], Any]) -> Any:
    """``e`` (an expression, a comparison (LIKE, IN), or predicates over them joined by
    AND / OR / NOT) with each event term ``t`` replaced by ``term(t)``."""
    if isinstance(e, ast.EventAttr):
        return term(e)
    if isinstance(e, ast.Compare | ast.BinOp | ast.PredAnd | ast.PredOr):
        return dataclasses.replace(e, left=rename_terms(e.left, term),
                                   right=rename_terms(e.right, term))
    if isinstance(e, ast.Neg | ast.PredNot | ast.Like | ast.InSet):
        return dataclasses.replace(e, operand=rename_terms(e.operand, term))
    if isinstance(e, ast.InRange):
        return dataclasses.replace(e, operand=rename_terms(e.operand, term),
                                   lo=rename_terms(e.lo, term), hi=rename_terms(e.hi, term))
    return e
