"""CEQL text -> AST, the front door: ``parse_query`` reads one query, ``parse_declarations`` one
or more ``CREATE STREAM`` declarations. Every mistake raises
:class:`cercore.errors.CEQLSyntaxError` with a location, a caret snippet, what would have been
accepted there (in source form) and, where the intent can be guessed, a hint. No lark exception
escapes.

The pipeline's rooms: ``grammar`` (``grammar.lark`` and its parsers), ``diagnostics`` (syntax
errors, ``ErrorReport``), ``transform`` (parse tree -> AST, ``ToAst``); the trend-aggregation
form (``cercore.trends.parse``) and PrePP's PATTERN notation (``cercore.network.pattern``)
go through the same ``parse_text`` with their own start symbol, report and transformer.
"""

from __future__ import annotations

from lark import Lark, Token, Tree
from lark.exceptions import LarkError, UnexpectedInput, VisitError

from cercore.ceql import ast
from cercore.ceql.diagnostics import ErrorReport
from cercore.ceql.grammar import get_parser, grammar_parser
from cercore.ceql.transform import ATTRIBUTE_TYPES, ToAst
from cercore.errors import CEQLError, CEQLSyntaxError

__all__ = ["ATTRIBUTE_TYPES", "get_parser", "parse_declarations", "parse_predicate", "parse_query",
           "parse_text"]


# ---------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------


def parse_query(text: str) -> ast.Query:
    """Parse one CEQL query.

    Raises :class:`~cercore.errors.CEQLSyntaxError` for text that does not follow the grammar.
    """
    return parse_text(text, "query", what="query")


def parse_declarations(text: str) -> list[ast.StreamDecl]:
    """Parse one or more ``CREATE STREAM S { EVENT T { a:int, ... }, ... }`` declarations.

    Raises :class:`~cercore.errors.CEQLSyntaxError` for text that does not follow the grammar.
    """
    return parse_text(text, "declarations", what="declaration")


def parse_predicate(text: str) -> ast.Pred:
    """Parse one condition over an event's attributes, as written inside ``X[...]``
    (``price > 10 AND name LIKE 'A.*'``).

    Raises :class:`~cercore.errors.CEQLSyntaxError` for text that is not such a condition.
    """
    return parse_text(text, "pred", parser=grammar_parser("pred"), transformer=_PredicateRoot,
                      what="condition")


class _PredicateRoot(ToAst):
    """``ToAst`` for the ``pred`` start symbol: the root must be a condition, not a value."""

    def transform(self, tree):
        return self._pred(super().transform(tree))


def parse_text(text: str, start: str, *, parser: Lark | None = None,
               report: type[ErrorReport] = ErrorReport, transformer: type = ToAst,
               what: str = "query"):
    """The one parse pipeline of ``grammar.lark``, for every start symbol: lex and parse (a
    mistake becomes ``report``'s CEQLSyntaxError), refuse trees too deep for the recursive
    stages, then ``transformer(text)`` builds the AST (CEQL errors it raises pass through).
    ``parser``: the LALR parser for ``start`` (default: the CEQL one)."""
    if not isinstance(text, str):
        raise TypeError(f"{what} text must be a str, not {type(text).__name__}")
    parser = parser or get_parser()
    tokens: list[Token] = []
    ip = parser.parse_interactive(text, start=start)
    try:
        for tok in ip.iter_parse():
            tokens.append(tok)
        tree = ip.feed_eof(tokens[-1] if tokens else None)
    except UnexpectedInput as e:
        raise report(e, ip, tokens, text, start).build() from None
    except LarkError as e:  # pragma: no cover - defensive
        raise CEQLSyntaxError(f"cannot parse: {e}", text=text) from None
    check_depth(tree, text)
    try:
        return transformer(text).transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, CEQLError):
            raise e.orig_exc from None
        raise


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
