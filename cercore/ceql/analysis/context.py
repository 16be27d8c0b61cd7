"""What every stage of the analysis shares: the query, its schema and text, the warnings
found so far, and errors that point into the query text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cercore.ceql import ast
from cercore.errors import CEQLSemanticError

if TYPE_CHECKING:  # (annotations only: the schema layer sits above this one)
    from cercore.schema import Schema


@dataclass(frozen=True)
class Spot:
    """A place in the query text (1-based), for errors about names the AST keeps no place of."""

    line: int | None
    column: int | None


class Context:
    """One analysis: the query, the schema it is analysed against, the query text (for errors
    with a caret) and the warnings every stage adds to."""

    def __init__(self, query: ast.Query, schema: Schema, text: str | None) -> None:
        self.q = query
        self.schema = schema
        self.text = text
        self.attr_types = schema.attribute_types()
        self.warnings: list[str] = []

    def error(self, msg: str, node=None, hint: str | None = None) -> CEQLSemanticError:
        return CEQLSemanticError(msg, line=getattr(node, "line", None),
                                 column=getattr(node, "column", None), text=self.text, hint=hint)

    def spot(self, clause: str, name: str | None) -> Spot:
        """Where ``name`` (or, when None, the value) follows the clause matching the regex
        ``clause`` in the query text: the names of FROM, PARTITION BY and LIMIT keep no
        position in the AST. Falls back to the query's own position."""
        m = re.search(clause, self.text or "", re.IGNORECASE)
        if m is not None:
            target = r"\S" if name is None else rf"(?<![\w.]){re.escape(name)}(?![\w])"
            hit = re.compile(target).search(self.text, m.end())
            if hit is not None:
                before = self.text[:hit.start()]
                return Spot(before.count("\n") + 1, hit.start() - before.rfind("\n"))
        return Spot(self.q.line, self.q.column)


class Stage:
    """A stage of the analysis: reads the shared context under short names."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.q = ctx.q
        self.schema = ctx.schema
        self.text = ctx.text
        self.attr_types = ctx.attr_types
        self.warnings = ctx.warnings

    def error(self, msg: str, node=None, hint: str | None = None) -> CEQLSemanticError:
        return self.ctx.error(msg, node, hint)

    def spot(self, clause: str, name: str | None) -> Spot:
        return self.ctx.spot(clause, name)
