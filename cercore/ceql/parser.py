"""CEQL text -> AST.

``parse_query`` reads one query, ``parse_declarations`` one or more ``CREATE STREAM``
declarations. The grammar is ``grammar.lark`` (LALR, built once on first use). Every mistake
raises :class:`cercore.errors.CEQLSyntaxError` with a location, a caret snippet, the list of
what would have been accepted (in source form) and, where we can guess the intent, a hint.
No lark exception escapes this module.

Other grammars of ``grammar.lark`` (the trend-aggregation form, ``cercore.trends.parse``)
build on this module's parts rather than repeating them: ``ErrorReport`` (error messages,
subclassed for their own vocabulary), ``ToAst`` (the shared expression rules) and the token
helpers ``meta_pos``, ``token_pos``, ``name_tokens``, ``number_value``, ``unquote``,
``source_form`` and ``UNIT_SECONDS``.
"""

from __future__ import annotations

import difflib
import re
import threading
from pathlib import Path

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import (
    LarkError,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

from cercore.ceql import ast
from cercore.ceql.printer import KEYWORDS
from cercore.errors import CEQLError, CEQLSyntaxError

__all__ = ["parse_query", "parse_declarations", "get_parser", "ATTRIBUTE_TYPES"]

GRAMMAR_PATH = Path(__file__).with_name("grammar.lark")

#: Attribute types of the declaration language (``primary_time`` marks the time attribute).
ATTRIBUTE_TYPES = ("int", "double", "string", "bool", "primary_time")

_TYPE_ALIASES = {
    "integer": "int", "long": "int", "float": "double", "real": "double", "number": "double",
    "str": "string", "text": "string", "varchar": "string", "boolean": "bool",
    "time": "primary_time", "timestamp": "primary_time",
}

_STRATEGIES = ast.STRATEGIES
_CLAUSE_ORDER = ("SELECT", "FROM", "WHERE", "PARTITION", "WITHIN", "CONSUME", "LIMIT")
_CLAUSE_TEXT = "SELECT, FROM, WHERE, PARTITION BY, WITHIN, CONSUME BY, LIMIT"

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
                parser = _parsers[start] = Lark.open(
                    str(GRAMMAR_PATH), parser="lalr", start=list(start),
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


_WHAT = {"query": "query", "declarations": "declarations"}
_DESCRIPTIVE = {"NAME": "identifier", "QNAME": "identifier", "NUMBER": "number",
                "STRING": "string"}
_CLOSERS = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE"}
_PATTERN_START = {"NAME", "QNAME", "LPAR", "NOT"}


def source_form(term: str, end_text: str) -> str:
    if term == "$END":
        return end_text
    if term in _DESCRIPTIVE:
        return _DESCRIPTIVE[term]
    if term in _KEYWORD_TERMINALS:
        return term
    try:
        pattern = get_parser().get_terminal(term).pattern
    except KeyError:
        return term
    if pattern.type == "str":
        return pattern.value
    return term  # pragma: no cover - every regex terminal is named above


def _quote(item: str) -> str:
    if item in ("identifier", "number", "string") or item.startswith("end of"):
        return item
    return f"'{item}'"


def _join_or(items: list[str]) -> str:
    quoted = [_quote(i) for i in items]
    if len(quoted) == 1:
        return quoted[0]
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _describe(tok: Token, end_text: str) -> str:
    t = tok.type
    if t == "$END":
        return end_text
    if t in ("NAME", "QNAME"):
        return f"name '{tok.value}'" if t == "NAME" else f"name {tok.value}"
    if t == "NUMBER":
        return f"number {tok.value}"
    if t == "STRING":
        return f"string {tok.value}"
    if t in _KEYWORD_TERMINALS:
        return f"keyword '{tok.value}'"
    return f"'{tok.value}'"


class ErrorReport:
    """Turns a lark error into a CEQLSyntaxError with expected tokens and a hint."""

    def __init__(self, e: UnexpectedInput, ip, tokens: list[Token], text: str, start: str):
        self.e = e
        self.text = text
        self.start = start
        self.what = _WHAT[start]
        self.end_text = f"end of {self.what}"
        if isinstance(e, UnexpectedToken):
            self.tok: Token | None = e.token
            pos = len(text) if e.token.type == "$END" else e.token.start_pos
        else:
            self.tok = None
            pos = e.pos_in_stream
        self.pos = pos
        self.before = [t for t in tokens if t.start_pos is not None and t.start_pos < pos]
        self.acc = self._accepts(ip, start)
        self.expected = sorted({source_form(t, self.end_text) for t in self.acc})
        # Location: the token, or right after the last token at the end of input.
        if self.tok is not None and self.tok.type == "$END":
            if self.before:
                last = self.before[-1]
                self.line, self.column = last.end_line, last.end_column
            else:
                self.line, self.column = None, None
        else:
            self.line, self.column = e.line, e.column

    def _accepts(self, ip, start: str) -> set[str]:
        # Replay the tokens before the error into a fresh parser: the failed parser may
        # already have reduced on the bad token, which hides some of the choices.
        try:
            fresh = get_parser().parse_interactive("", start=start)
            for t in self.before:
                fresh.feed_token(t)
            return set(fresh.accepts())
        except Exception:  # pragma: no cover - defensive
            try:
                return set(ip.accepts())
            except Exception:
                return set(getattr(self.e, "expected", None) or ())

    # -- helpers ---------------------------------------------------------------------------
    def prev(self, k: int = 1) -> Token | None:
        return self.before[-k] if len(self.before) >= k else None

    def prev_type(self, k: int = 1) -> str | None:
        p = self.prev(k)
        return p.type if p is not None else None

    def seen(self, term: str) -> bool:
        return any(t.type == term for t in self.before)

    def error(self, message: str, hint: str | None, *, line=None, column=None,
              show_expected: bool = True) -> CEQLSyntaxError:
        if show_expected and 0 < len(self.expected) <= 4:
            message += f"; expected {_join_or(self.expected)}"
        return CEQLSyntaxError(
            message,
            expected=self.expected,
            line=line if line is not None else self.line,
            column=column if column is not None else self.column,
            text=self.text,
            hint=hint,
        )

    # -- entry -------------------------------------------------------------------------------
    def build(self) -> CEQLSyntaxError:
        if self.tok is None:
            return self.char_error()
        if self.tok.type == "$END" and not self.before:
            if self.start == "query":
                return CEQLSyntaxError(
                    "empty query", expected=self.expected, text=self.text,
                    hint="a query looks like: SELECT * FROM S WHERE A ; B")
            return CEQLSyntaxError(
                "empty declarations", expected=self.expected, text=self.text,
                hint="a declaration looks like: CREATE STREAM S { EVENT A { x:int } }")
        if self.tok.type == "SLASH" and self.text.startswith("/*", self.pos):
            return self.error("unterminated comment", "close the comment with */",
                              show_expected=False)
        special = self.relocated_error()
        if special is not None:
            return special
        message = f"unexpected {_describe(self.tok, self.end_text)}"
        return self.error(message, self.token_hint())

    # -- unexpected characters -------------------------------------------------------------
    def char_error(self) -> CEQLSyntaxError:
        ch = self.e.char
        rest = self.text[self.pos:]
        if ch in "'\"":
            return self.error(
                "unterminated string", f"close the string with {ch} (inside a string, "
                f"write {ch}{ch} for a {ch})", show_expected=False)
        if ch == "`":
            return self.error("unterminated quoted name",
                              "close the name with ` (write `` for a backtick inside it)",
                              show_expected=False)
        hint = None
        if rest.startswith("&&") or ch == "&":
            hint = "write AND instead of '&&'"
        elif rest.startswith("||") or ch == "|":
            hint = "write OR instead of '||'"
        elif ch == "!":
            hint = "write NOT for negation; '!=' means 'not equal'"
        elif ch == "." and self.prev_type() in ("NAME", "QNAME"):
            var = self.prev().value
            attr = re.match(r"\.\s*([A-Za-z_][A-Za-z0-9_]*)", rest)
            a = attr.group(1) if attr else "attr"
            hint = (f"attributes are tested inside brackets: write {var}[{a} ...] "
                    f"instead of {var}.{a}")
        elif ch == "#":
            hint = "comments start with -- (to the end of the line) or are written /* ... */"
        elif ch == "\u2018" or ch == "\u2019" or ch == "\u201c" or ch == "\u201d":
            hint = "use plain quotes ' or \" instead of typographic quotes"
        return self.error(f"unexpected character {ch!r}", hint)

    # -- errors better reported at another token --------------------------------------------
    def relocated_error(self) -> CEQLSyntaxError | None:
        tok, p1, p2 = self.tok, self.prev(), self.prev(2)
        # SELECT FIRST * ...: an unknown strategy word lexes as a projected variable.
        if (p1 is not None and p1.type in ("NAME", "QNAME") and p2 is not None
                and p2.type == "SELECT" and tok.type in ("STAR", "NONE")):
            close = difflib.get_close_matches(p1.value.upper(), _STRATEGIES, n=1, cutoff=0.6)
            hint = ("selection strategies are " + ", ".join(_STRATEGIES[:-1])
                    + f" and {_STRATEGIES[-1]}")
            if close:
                hint = f"did you mean '{close[0]}'? " + hint
            return CEQLSyntaxError(
                f"unknown selection strategy '{p1.value}'", expected=sorted(_STRATEGIES),
                line=p1.line, column=p1.column, text=self.text, hint=hint)
        return None

    # -- hints for unexpected tokens ---------------------------------------------------------
    def token_hint(self) -> str | None:
        for check in (
            self.hint_misspelled_keyword,
            self.hint_double_semicolon,
            self.hint_select_list,
            self.hint_trailing_comma,
            self.hint_as_without_name,
            self.hint_filter_without_brackets,
            self.hint_filter_before_where,
            self.hint_missing_from_where,
            self.hint_partition,
            self.hint_within,
            self.hint_consume,
            self.hint_limit,
            self.hint_in_parens,
            self.hint_equals,
            self.hint_unclosed,
            self.hint_unmatched_closer,
            self.hint_dangling_operator,
            self.hint_and_in_formula,
            self.hint_adjacent_patterns,
            self.hint_clause_order,
            self.hint_reserved_word,
            self.hint_empty_brackets,
            self.hint_declarations,
            self.hint_select_first,
        ):
            hint = check()
            if hint:
                return hint
        return None

    def hint_misspelled_keyword(self) -> str | None:
        tok = self.tok
        if tok.type not in ("NAME",):
            return None
        keywords = [t for t in self.acc if t in _KEYWORD_TERMINALS]
        close = difflib.get_close_matches(tok.value.upper(), keywords, n=1, cutoff=0.7)
        if close:
            return f"did you mean '{close[0]}'?"
        return None

    def hint_double_semicolon(self) -> str | None:
        if self.tok.type == "SEMICOLON" and self.prev_type() == "SEMICOLON":
            return "two ';' in a row: remove one (A ; B means B after A)"
        return None

    def hint_select_list(self) -> str | None:
        # SELECT a b FROM ... : a missing comma (or an unknown strategy).
        p1, p2 = self.prev(), self.prev(2)
        if (self.tok.type in ("NAME", "QNAME") and p1 is not None
                and p1.type in ("NAME", "QNAME") and p2 is not None and p2.type == "SELECT"):
            return (f"separate projected variables with ',' (SELECT {p1.value}, "
                    f"{self.tok.value}), or use a selection strategy: "
                    + ", ".join(_STRATEGIES))
        return None

    def hint_trailing_comma(self) -> str | None:
        if self.prev_type() != "COMMA":
            return None
        t = self.tok.type
        if t in _KEYWORD_TERMINALS:
            return f"remove the trailing ',' before {self.tok.value}"
        if t in ("$END", "RSQB", "RBRACE", "RPAR", "COMMA"):
            return "remove the trailing ','"
        return None

    def hint_as_without_name(self) -> str | None:
        if self.prev_type() != "AS":
            return None
        if self.tok.type in _KEYWORD_TERMINALS:
            return (f"'{self.tok.value}' is a reserved word; to use it as a variable name, "
                    f"quote it: `{self.tok.value}`")
        return "AS needs a variable name, e.g. BUY AS b"

    def hint_filter_without_brackets(self) -> str | None:
        # FILTER price > 10: a filter must name a variable and bracket its condition.
        p1, p2 = self.prev(), self.prev(2)
        if (p1 is None or p1.type not in ("NAME", "QNAME") or p2 is None
                or p2.type not in ("FILTER", "AND", "OR")):
            return None
        if "LSQB" not in self.acc:
            return None
        cond = self.text[p1.start_pos:]
        m = re.search(r"\n|\b(?:partition|within|consume|limit)\b", cond, re.IGNORECASE)
        if m:
            cond = cond[:m.start()]
        cond = " ".join(cond.split())
        if len(cond) > 40 or not cond:
            cond = f"{p1.value} ..."
        return (f"a filter is a variable with a condition in brackets: write X[{cond}], "
                "where X is a variable bound with AS (or an event type)")

    def hint_filter_before_where(self) -> str | None:
        if self.tok.type == "FILTER" and "WHERE" in self.acc:
            return ("FILTER comes after the pattern: SELECT * FROM S WHERE <pattern> "
                    "FILTER X[...]")
        return None

    def hint_missing_from_where(self) -> str | None:
        if "WHERE" not in self.acc:
            return None
        tok = self.tok
        if tok.type == "$END":
            return "a query needs WHERE and a pattern, e.g. SELECT * FROM S WHERE A ; B"
        if tok.type not in _PATTERN_START:
            return None
        later = self.text[tok.start_pos:]
        if "FROM" in self.acc and re.search(r"\bwhere\b", later, re.IGNORECASE):
            return f"add FROM before the stream name: FROM {tok.value} WHERE ..."
        if self.prev_type() in ("NAME", "QNAME") and re.search(r"\bwhere\b", later,
                                                                re.IGNORECASE):
            return "separate stream names with ',': FROM S1, S2"
        return f"add WHERE before the pattern: WHERE {tok.value} ..."

    def hint_partition(self) -> str | None:
        p1, p2 = self.prev(), self.prev(2)
        if p1 is not None and p1.type == "BY" and p2 is not None and p2.type == "PARTITION":
            if self.tok.type in ("NAME", "QNAME"):
                return (f"put the attributes in brackets: PARTITION BY [{self.tok.value}]"
                        " (several groups: PARTITION BY [a, b], [c])")
            return "write PARTITION BY [attribute, ...]"
        if p1 is not None and p1.type == "PARTITION":
            return "write PARTITION BY [attribute, ...]"
        return None

    def hint_within(self) -> str | None:
        p1, p2 = self.prev(), self.prev(2)
        if p1 is not None and p1.type == "WITHIN":
            return ("WITHIN needs an amount and a unit: WITHIN 10 EVENTS, WITHIN 5 MINUTES, "
                    "WITHIN 1 HOURS 30 MINUTES or WITHIN 100 [attribute]")
        if (p1 is not None and p1.type == "NUMBER" and p2 is not None and p2.type == "WITHIN"
                and "EVENTS" in self.acc):
            n = p1.value
            return (f"give a unit: WITHIN {n} EVENTS, WITHIN {n} SECONDS (or MINUTES, HOURS), "
                    f"or WITHIN {n} [attribute]")
        if p1 is not None and p1.type == "NUMBER" and "HOURS" in self.acc:
            return "each amount needs a unit: HOURS, MINUTES or SECONDS"
        return None

    def hint_consume(self) -> str | None:
        p1, p2 = self.prev(), self.prev(2)
        if p1 is not None and p1.type == "CONSUME":
            return "write CONSUME BY ANY, CONSUME BY PARTITION or CONSUME BY NONE"
        if p1 is not None and p1.type == "BY" and p2 is not None and p2.type == "CONSUME":
            return "consumption policies are ANY, PARTITION and NONE"
        return None

    def hint_limit(self) -> str | None:
        if self.prev_type() == "LIMIT":
            return "LIMIT needs a whole number, e.g. LIMIT 10"
        return None

    def hint_in_parens(self) -> str | None:
        if self.prev_type() == "IN" and self.tok.type == "LPAR":
            inner = _balanced(self.text, self.tok.start_pos, "(", ")")
            body = inner if inner is not None and len(inner) <= 30 else "1, 2"
            return (f"a set is written with braces: IN {{{body}}} (or IN RANGE(lo, hi) for "
                    "a range)")
        return None

    def hint_equals(self) -> str | None:
        t, p1 = self.tok.type, self.prev_type()
        if p1 == "EQ" and t == "GT":
            return "did you mean '>='?"
        if p1 == "EQ" and t == "LT":
            return "did you mean '<='?"
        if p1 in ("EQ", "EQEQ") and t in ("EQ", "EQEQ"):
            return "write '=' or '==' (they mean the same)"
        if t in ("EQ", "EQEQ", "LT", "GT", "LE", "GE", "NE", "LTGT"):
            return ("comparisons go inside a filter's brackets, e.g. "
                    "... FILTER x[price = 10]")
        return None

    def hint_unclosed(self) -> str | None:
        closers = [c for c in ("RPAR", "RSQB", "RBRACE") if c in self.acc]
        if not closers or self.tok.type in closers:
            return None
        if self.tok.type not in ("$END", "FILTER", "PARTITION", "WITHIN", "CONSUME", "LIMIT",
                                 "WHERE", "RPAR", "RSQB", "RBRACE", "FROM"):
            return None
        stack: list[Token] = []
        for t in self.before:
            if t.type in _CLOSERS:
                stack.append(t)
            elif t.type in _CLOSERS.values() and stack:
                stack.pop()
        if not stack:
            return None
        opener = stack[-1]
        closer = {"LPAR": ")", "LSQB": "]", "LBRACE": "}"}[opener.type]
        return (f"the '{opener.value}' at line {opener.line}, column {opener.column} is never "
                f"closed: add '{closer}'")

    def hint_unmatched_closer(self) -> str | None:
        if self.tok.type in ("RPAR", "RSQB", "RBRACE") and self.tok.type not in self.acc:
            opener = {"RPAR": "LPAR", "RSQB": "LSQB", "RBRACE": "LBRACE"}[self.tok.type]
            depth = 0
            for t in self.before:
                if t.type == opener:
                    depth += 1
                elif t.type == self.tok.type:
                    depth -= 1
            if depth <= 0:
                return f"this '{self.tok.value}' has no matching opening bracket"
        return None

    def hint_dangling_operator(self) -> str | None:
        p1 = self.prev()
        if p1 is None:
            return None
        op = p1.value
        if p1.type == "WHERE":
            return "WHERE needs a pattern, e.g. WHERE A ; B"
        if p1.type == "FILTER":
            return "FILTER needs a variable and a condition, e.g. FILTER x[price > 10]"
        if p1.type == "NOT" and self.acc == {"LPAR"}:
            inner = self.tok.value if self.tok.type in ("NAME", "QNAME") else "A"
            return f"NOT takes a pattern in parentheses: NOT({inner})"
        if "NAME" not in self.acc:
            return None
        if p1.type == "SEMICOLON" and self.tok.type == "$END":
            return "remove the trailing ';': a query does not end with ';'"
        if p1.type in ("LT", "LE", "GT", "GE", "EQ", "EQEQ", "NE", "LTGT", "PLUS", "MINUS",
                       "STAR", "SLASH", "PERCENT"):
            return f"'{op}' must be followed by a value, e.g. price {op} 10"
        if p1.type not in ("SEMICOLON", "COLON", "OR", "AND", "NOT"):
            return None
        if "MINUS" in self.acc:
            what = "condition, e.g. price > 10"
        elif "NOT" in self.acc:
            what = f"pattern, e.g. A {op} B"
        else:
            what = "filter, e.g. x[price > 10]"
        return f"'{op}' must be followed by a {what}"

    def hint_and_in_formula(self) -> str | None:
        if self.tok.type == "AND" and "SEMICOLON" in self.acc:
            return ("AND only joins filters (FILTER x[...] AND y[...]); to combine patterns "
                    "use ';' (followed by), ':' (immediately followed by) or OR")
        return None

    def hint_adjacent_patterns(self) -> str | None:
        if self.tok.type in _PATTERN_START and "SEMICOLON" in self.acc:
            return ("two patterns in a row: join them with ';' (followed by), ':' "
                    "(immediately followed by) or OR")
        return None

    def hint_clause_order(self) -> str | None:
        t = self.tok.type
        if t not in _CLAUSE_ORDER or t in self.acc:
            return None
        if self.seen(t):
            word = t + (" BY" if t in ("PARTITION", "CONSUME") else "")
            return f"a query has at most one {word} clause"
        return f"clauses go in this order: {_CLAUSE_TEXT}"

    def hint_reserved_word(self) -> str | None:
        t = self.tok.type
        if (t in _KEYWORD_TERMINALS and "NAME" in self.acc
                and not self.acc & _KEYWORD_TERMINALS.keys()):
            return (f"'{self.tok.value}' is a reserved word; to use it as a name, quote it: "
                    f"`{self.tok.value}`")
        return None

    def hint_empty_brackets(self) -> str | None:
        if self.tok.type == "RSQB" and self.prev_type() == "LSQB" and "NAME" in self.acc:
            return "write a condition inside the brackets, e.g. x[price > 10]"
        return None

    def hint_select_first(self) -> str | None:
        if "SELECT" in self.acc:
            return "a query starts with SELECT, e.g. SELECT * FROM S WHERE A ; B"
        return None

    def hint_declarations(self) -> str | None:
        if self.start != "declarations":
            return None
        t, p1 = self.tok.type, self.prev_type()
        if "COLON" in self.acc and p1 in ("NAME", "QNAME"):
            return "write attributes as name:type, e.g. price:double"
        if "EVENT" in self.acc:
            return "declare each event type as EVENT Name { attribute:type, ... }"
        if "CREATE" in self.acc or t == "STREAM":
            return ("a declaration starts with CREATE STREAM, "
                    "e.g. CREATE STREAM S { EVENT A { x:int } }")
        if "STREAM" in self.acc:
            return "write CREATE STREAM Name { ... }"
        return None


def _balanced(text: str, start: int, open_: str, close: str) -> str | None:
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return text[start + 1:i].strip()
    return None


# ---------------------------------------------------------------------------------------
# Parse tree -> AST
# ---------------------------------------------------------------------------------------
_PRED_TYPES = (ast.Compare, ast.Like, ast.InSet, ast.InRange, ast.PredAnd, ast.PredOr,
               ast.PredNot, ast.PredConst)
_EXPR_TYPES = (ast.Literal, ast.AttrRef, ast.BinOp, ast.Neg)
_CMP = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "=": "==", "==": "==", "!=": "!=",
        "<>": "!="}
UNIT_SECONDS = {"HOUR": 3600, "MINUTE": 60, "SECOND": 1}


def meta_pos(meta) -> dict:
    if getattr(meta, "empty", True):
        return {}
    return {"line": meta.line, "column": meta.column}


def token_pos(tok: Token) -> dict:
    return {"line": tok.line, "column": tok.column}


def _node_pos(node) -> dict:
    return {"line": getattr(node, "line", None), "column": getattr(node, "column", None)}


def name_tokens(children) -> list[Token]:
    return [c for c in children if isinstance(c, Token) and c.type == "NAME"]


def number_value(tok: Token) -> int | float:
    s = tok.value
    if re.fullmatch(r"\d+", s):
        return int(s)
    return float(s)


def unquote(s: str) -> str:
    q = s[0]
    return s[1:-1].replace(q + q, q)


@v_args(meta=True)
class ToAst(Transformer):
    """Builds cercore.ceql.ast nodes; every node gets the line/column where it starts."""

    def __init__(self, text: str):
        super().__init__(visit_tokens=False)
        self.text = text
        self._paren_ids: set[int] = set()
        self._keep: list = []

    # -- errors ----------------------------------------------------------------------------
    def _error(self, message: str, where, hint: str | None = None) -> CEQLSyntaxError:
        pos = token_pos(where) if isinstance(where, Token) else _node_pos(where)
        return CEQLSyntaxError(message, text=self.text, hint=hint, **pos)

    def _int(self, tok: Token, what: str) -> int:
        v = number_value(tok)
        if not isinstance(v, int):
            raise self._error(f"{what} must be a whole number, not {tok.value}", tok)
        return v

    def _expr(self, x, context: str = "arithmetic"):
        if isinstance(x, _EXPR_TYPES):
            return x
        raise self._error(
            f"a condition cannot be used as a value in {context}", x,
            hint="parentheses here must hold an arithmetic expression, e.g. (price + 1) * 2")

    def _pred(self, x):
        if isinstance(x, _PRED_TYPES):
            return x
        if isinstance(x, ast.Literal) and isinstance(x.value, bool):
            return ast.PredConst(x.value, **_node_pos(x))
        shown = self.text_of(x)
        raise self._error(
            f"{shown} is not a condition", x,
            hint="compare it with something, e.g. price > 10, flag == true or "
                 "name LIKE 'A.*'")

    def text_of(self, x) -> str:
        from cercore.ceql.printer import format_expr

        try:
            return f"'{format_expr(x)}'"
        except Exception:  # pragma: no cover - defensive
            return "this expression"

    # -- names -----------------------------------------------------------------------------
    def name(self, meta, ch):
        tok = ch[0]
        value = tok.value if tok.type == "NAME" else unquote(tok.value)
        return Token.new_borrow_pos("NAME", value, tok)

    # -- query -----------------------------------------------------------------------------
    def query(self, meta, ch):
        kw: dict = {}
        formula = None
        for c in ch:
            if isinstance(c, tuple) and c and isinstance(c[0], str) and c[0].startswith("@"):
                tag = c[0][1:]
                if tag == "select":
                    kw["strategy"], kw["projection"] = c[1], c[2]
                else:
                    kw[tag] = c[1]
            elif not isinstance(c, Token):
                formula = c
        return ast.Query(formula, **kw, **meta_pos(meta))

    def select_clause(self, meta, ch):
        strategy = None
        projection = "*"
        for c in ch:
            if isinstance(c, Token):
                continue
            if isinstance(c, tuple) and c and c[0] == "@strategy":
                strategy = c[1]
            else:
                projection = c
        return ("@select", strategy, projection)

    def strategy(self, meta, ch):
        return ("@strategy", str(ch[0].value.upper()))

    def project_all(self, meta, ch):
        return "*"

    def project_none(self, meta, ch):
        return "NONE"

    def project_items(self, meta, ch):
        return tuple(ch)

    def projection_item(self, meta, ch):
        names = name_tokens(ch)
        var = names[0]
        bracketed = meta.end_pos > var.end_pos
        attrs = tuple(n.value for n in names[1:]) if bracketed else None
        return ast.ProjectionItem(var.value, attrs, **meta_pos(meta))

    def from_clause(self, meta, ch):
        return ("@streams", tuple(n.value for n in name_tokens(ch)))

    def partition_clause(self, meta, ch):
        return ("@partition_by", tuple(c for c in ch if isinstance(c, tuple)))

    def partition_group(self, meta, ch):
        return tuple(n.value for n in name_tokens(ch))

    def within_events(self, meta, ch):
        num = next(c for c in ch if isinstance(c, Token) and c.type == "NUMBER")
        return ("@within", ast.EventsWindow(self._int(num, "an EVENTS window"), **meta_pos(meta)))

    def within_attr(self, meta, ch):
        num = next(c for c in ch if isinstance(c, Token) and c.type == "NUMBER")
        attr = name_tokens(ch)[0]
        return ("@within", ast.AttrWindow(number_value(num), attr.value, **meta_pos(meta)))

    def within_time(self, meta, ch):
        total: int | float = 0
        seen: dict[str, Token] = {}
        for amount, unit, tok in (c for c in ch if isinstance(c, tuple)):
            if unit in seen:
                raise self._error(f"{tok.value.upper()} is given twice in WITHIN", tok,
                                  hint="write each unit once, e.g. WITHIN 1 HOURS 30 MINUTES")
            seen[unit] = tok
            total += amount * UNIT_SECONDS[unit]
        # whole seconds are exact ints (a float would round a large window)
        seconds = total if isinstance(total, int) else \
            int(total) if float(total).is_integer() else float(total)
        return ("@within", ast.TimeWindow(seconds, **meta_pos(meta)))

    def time_span(self, meta, ch):
        num, unit = ch[0], ch[1]
        return (number_value(num), unit.type[:-1], unit)

    def consume_clause(self, meta, ch):
        return ("@consume", ch[-1].value.upper())

    def limit_clause(self, meta, ch):
        num = ch[-1]
        return ("@limit", self._int(num, "LIMIT"))

    # -- formulas --------------------------------------------------------------------------
    def event_atom(self, meta, ch):
        names = name_tokens(ch)
        if len(names) == 2:
            return ast.EventAtom(names[1].value, names[0].value, **meta_pos(meta))
        return ast.EventAtom(names[0].value, **meta_pos(meta))

    def filter(self, meta, ch):
        return ast.Filter(ch[0], ch[-1], **meta_pos(meta))

    def or_(self, meta, ch):
        return ast.Or(ch[0], ch[-1], **meta_pos(meta))

    def contig(self, meta, ch):
        return ast.Contig(ch[0], ch[-1], **meta_pos(meta))

    def seq(self, meta, ch):
        return ast.Seq(ch[0], ch[-1], **meta_pos(meta))

    def as_(self, meta, ch):
        return ast.As(ch[0], ch[-1].value, **meta_pos(meta))

    def iter(self, meta, ch):
        return ast.Iter(ch[0], False, **meta_pos(meta))

    def contig_iter(self, meta, ch):
        return ast.Iter(ch[0], True, **meta_pos(meta))

    def not_(self, meta, ch):
        formula = next(c for c in ch if not isinstance(c, Token))
        return ast.Not(formula, **meta_pos(meta))

    # -- filters ---------------------------------------------------------------------------
    def filter_or(self, meta, ch):
        return ast.FilterOr(ch[0], ch[-1], **meta_pos(meta))

    def filter_and(self, meta, ch):
        return ast.FilterAnd(ch[0], ch[-1], **meta_pos(meta))

    def atomic_filter(self, meta, ch):
        var = ch[0]
        pred = self._pred(ch[-1])
        return ast.AtomicFilter(var.value, pred, **meta_pos(meta))

    # -- predicates ------------------------------------------------------------------------
    def pred_or(self, meta, ch):
        return ast.PredOr(self._pred(ch[0]), self._pred(ch[-1]), **meta_pos(meta))

    def pred_and(self, meta, ch):
        return ast.PredAnd(self._pred(ch[0]), self._pred(ch[-1]), **meta_pos(meta))

    def pred_not(self, meta, ch):
        return ast.PredNot(self._pred(ch[-1]), **meta_pos(meta))

    def bare_pred(self, meta, ch):
        return ch[0]  # checked by whoever uses it, as a condition or as a value

    def cmp_op(self, meta, ch):
        return _CMP[ch[0].value]

    def compare(self, meta, ch):
        left, op, right = ch
        return ast.Compare(op, self._expr(left, "a comparison"),
                           self._expr(right, "a comparison"), **meta_pos(meta))

    def like(self, meta, ch):
        operand = self._expr(ch[0], "LIKE")
        return ast.Like(operand, unquote(ch[-1].value), **meta_pos(meta))

    def in_set(self, meta, ch):
        operand = self._expr(ch[0], "IN")
        negated = any(isinstance(c, Token) and c.type == "NOT" for c in ch)
        items = tuple(c for c in ch[1:] if not isinstance(c, Token))
        return ast.InSet(operand, items, negated, **meta_pos(meta))

    def set_item(self, meta, ch):
        values = [c for c in ch if not isinstance(c, Token)]
        if len(values) == 2:
            return ast.Range(self._expr(values[0], "a range"), self._expr(values[1], "a range"),
                             **meta_pos(meta))
        v = self._expr(values[0], "a set")
        if not isinstance(v, ast.Literal):
            raise self._error("set items must be constants", v,
                              hint="write numbers, strings or ranges like 1..5 inside { }")
        return v

    def in_range(self, meta, ch):
        values = [c for c in ch if not isinstance(c, Token)]
        operand, lo, hi = (self._expr(v, "IN RANGE") for v in values)
        negated = any(isinstance(c, Token) and c.type == "NOT" for c in ch)
        return ast.InRange(operand, lo, hi, negated, **meta_pos(meta))

    # -- arithmetic ------------------------------------------------------------------------
    def binop(self, meta, ch):
        left, op, right = ch
        return ast.BinOp(op.value, self._expr(left), self._expr(right), **meta_pos(meta))

    def neg(self, meta, ch):
        operand = self._expr(ch[-1])
        if (isinstance(operand, ast.Literal) and isinstance(operand.value, (int, float))
                and not isinstance(operand.value, bool) and id(operand) not in self._paren_ids):
            # "-5" is the literal -5; "-(5)" stays Neg(5).
            return ast.Literal(-operand.value, **meta_pos(meta))
        return ast.Neg(operand, **meta_pos(meta))

    def number(self, meta, ch):
        return ast.Literal(number_value(ch[0]), **token_pos(ch[0]))

    def string(self, meta, ch):
        return ast.Literal(unquote(ch[0].value), **token_pos(ch[0]))

    def true(self, meta, ch):
        return ast.Literal(True, **token_pos(ch[0]))

    def false(self, meta, ch):
        return ast.Literal(False, **token_pos(ch[0]))

    def attr_ref(self, meta, ch):
        return ast.AttrRef(ch[0].value, **token_pos(ch[0]))

    def paren(self, meta, ch):
        inner = ch[0]
        self._paren_ids.add(id(inner))
        self._keep.append(inner)
        return inner

    # -- declarations ----------------------------------------------------------------------
    def declarations(self, meta, ch):
        return list(ch)

    def stream_decl(self, meta, ch):
        name = name_tokens(ch)[0]
        events = tuple(c for c in ch if isinstance(c, ast.EventDecl))
        return ast.StreamDecl(name.value, events, **token_pos(name))

    def event_decl(self, meta, ch):
        name = name_tokens(ch)[0]
        attrs = tuple(c for c in ch if isinstance(c, ast.AttrDecl))
        return ast.EventDecl(name.value, attrs, **token_pos(name))

    def attr_decl(self, meta, ch):
        name, typ = name_tokens(ch)
        t = typ.value.lower()
        if t not in ATTRIBUTE_TYPES:
            guess = _TYPE_ALIASES.get(t) or next(
                iter(difflib.get_close_matches(t, ATTRIBUTE_TYPES, n=1, cutoff=0.6)), None)
            hint = (f"did you mean '{guess}'? " if guess else "") + (
                "types are int, double, string, bool and primary_time")
            raise self._error(f"unknown attribute type '{typ.value}'", typ, hint=hint)
        return ast.AttrDecl(name.value, t, **token_pos(name))
