"""CEQL text -> AST, the front door: ``parse_query`` reads one query, ``parse_declarations`` one
or more ``CREATE STREAM`` declarations. Every mistake raises
:class:`cercore.errors.CEQLSyntaxError` with a location, a caret snippet, what would have been
accepted there (in source form) and, where the intent can be guessed, a hint. No lark exception
escapes.

The pipeline's rooms: ``grammar`` (``grammar.lark`` and its parsers), ``diagnostics`` (syntax
errors, ``ErrorReport``), ``transform`` (parse tree -> AST, ``ToAst``); the trend-aggregation
form (``cercore.trends.parse``) reuses all three.
"""

from __future__ import annotations

from lark import Token, Tree
from lark.exceptions import LarkError, UnexpectedInput, VisitError

from cercore.ceql import ast
from cercore.ceql.diagnostics import ErrorReport
from cercore.ceql.grammar import get_parser
from cercore.ceql.transform import ATTRIBUTE_TYPES, ToAst
from cercore.errors import CEQLError, CEQLSyntaxError

__all__ = ["ATTRIBUTE_TYPES", "get_parser", "parse_declarations", "parse_query"]


# ---------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------


def parse_query(text: str) -> ast.Query:
    """Parse one CEQL query.

    Raises :class:`~cercore.errors.CEQLSyntaxError` for text that does not follow the grammar.
    """
    if not isinstance(text, str):
        raise TypeError(f"query text must be a str, not {type(text).__name__}")
    tree = _parse(text, "query")
    return _transform(tree, text)


def parse_declarations(text: str) -> list[ast.StreamDecl]:
    """Parse one or more ``CREATE STREAM S { EVENT T { a:int, ... }, ... }`` declarations.

    Raises :class:`~cercore.errors.CEQLSyntaxError` for text that does not follow the grammar.
    """
    if not isinstance(text, str):
        raise TypeError(f"declaration text must be a str, not {type(text).__name__}")
    tree = _parse(text, "declarations")
    return _transform(tree, text)


# ---------------------------------------------------------------------------------------
# Parsing with error translation
# ---------------------------------------------------------------------------------------
def _parse(text: str, start: str):
    parser = get_parser()
    tokens: list[Token] = []
    ip = parser.parse_interactive(text, start=start)
    try:
        for tok in ip.iter_parse():
            tokens.append(tok)
        return ip.feed_eof(tokens[-1] if tokens else None)
    except UnexpectedInput as e:
        err = ErrorReport(e, ip, tokens, text, start).build()
    except LarkError as e:  # pragma: no cover - defensive
        err = CEQLSyntaxError(f"cannot parse: {e}", text=text)
    raise err


# Deepest parse tree the later stages (transform, analysis, automaton, printer) walk safely
# within Python's recursion limit: about 250 chained atoms or 125 nested parentheses.
MAX_TREE_DEPTH = 256


def check_depth(tree, text: str) -> None:
    """Refuse, before any recursive stage runs, a parse tree deeper than MAX_TREE_DEPTH,
    pointing at where the nesting goes too deep (counted without recursion)."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_TREE_DEPTH:
            tok = _first_token(node)
            raise CEQLSyntaxError(
                f"the query is nested too deeply (more than {MAX_TREE_DEPTH} levels: about "
                f"{MAX_TREE_DEPTH - 6} chained atoms or conditions, or {MAX_TREE_DEPTH // 2 - 3} "
                "nested parentheses)", line=getattr(tok, "line", None),
                column=getattr(tok, "column", None), text=text,
                hint="split the query, or group repeated alternatives into one condition")
        stack.extend((c, depth + 1) for c in node.children if isinstance(c, Tree))


def _first_token(node) -> Token | None:
    """The first token under ``node`` (iteratively, depth first)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Token):
            return n
        if isinstance(n, Tree):
            stack.extend(reversed(n.children))
    return None


def _transform(tree, text: str):
    check_depth(tree, text)
    try:
        return ToAst(text).transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, CEQLError):
            raise e.orig_exc from None
        raise
