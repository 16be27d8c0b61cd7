"""The CEQL grammar (``grammar.lark``): one LALR parser per set of start symbols, built on first
use and shared -- CEQL queries and declarations, and the trend-aggregation form
(``cercore.trends.parse``)."""

from __future__ import annotations

import threading
from functools import cache
from importlib import resources

from lark import Lark

#: Reserved words of CEQL (upper case): tests check ``grammar_keywords`` matches grammar.lark;
#: the printer quotes names that are keywords.
KEYWORDS = frozenset("""
    SELECT FROM WHERE FILTER AS OR AND NOT PARTITION BY WITHIN EVENTS HOUR HOURS MINUTE MINUTES
    SECOND SECONDS CONSUME LIMIT ALL ANY NEXT LAST MAX STRICT NONE LIKE IN RANGE TRUE FALSE
    CREATE STREAM EVENT ABSENT
""".split())

@cache
def grammar_text() -> str:
    """The text of ``grammar.lark``, read as package data (``importlib.resources``: also from
    a zip or a wheel on ``sys.path``, as Spark ships packages to its executors)."""
    return resources.files(__package__).joinpath("grammar.lark").read_text(encoding="utf-8")


_parsers: dict[tuple[str, ...], Lark] = {}
_parser_lock = threading.Lock()


def grammar_parser(*start: str) -> Lark:
    """The LALR parser of ``grammar.lark`` for these start symbols (built on first use, then
    shared): ``("query", "declarations")`` for CEQL, ``("trend_query",)`` for trends."""
    parser = _parsers.get(start)
    if parser is None:
        with _parser_lock:
            parser = _parsers.get(start)
            if parser is None:
                parser = _parsers[start] = Lark(
                    grammar_text(), parser="lalr", start=list(start),
                    propagate_positions=True, maybe_placeholders=False, cache=False)
    return parser


def get_parser() -> Lark:
    """The CEQL parser (queries and declarations)."""
    return grammar_parser("query", "declarations")


def grammar_keywords() -> set[str]:
    """The keyword terminals the grammar defines (tests keep ``KEYWORDS`` in step)."""
    return {t.name for t in get_parser().terminals if t.name in _KEYWORD_TERMINALS}


# Keyword terminal name -> its source text.
_KEYWORD_TERMINALS = {k: k for k in KEYWORDS if k not in ("HOUR", "MINUTE", "SECOND")}
