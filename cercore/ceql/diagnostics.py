"""Syntax errors a person can act on: where the text went wrong (line, column, a caret), what
the grammar would have accepted there in source form, and, where the intent can be guessed, a
hint. ``ErrorReport`` turns lark's ``UnexpectedInput`` into a ``CEQLSyntaxError``; the trend
parser subclasses it for its own vocabulary (``cercore.trends.parse``)."""

from __future__ import annotations

import difflib
import re

from lark import Token
from lark.exceptions import UnexpectedInput, UnexpectedToken

from cercore.ceql import ast
from cercore.ceql.grammar import _KEYWORD_TERMINALS, get_parser
from cercore.errors import CEQLSyntaxError

_STRATEGIES = ast.STRATEGIES
_CLAUSE_ORDER = ("SELECT", "FROM", "WHERE", "PARTITION", "WITHIN", "CONSUME", "LIMIT")
_CLAUSE_TEXT = "SELECT, FROM, WHERE, PARTITION BY, WITHIN, CONSUME BY, LIMIT"

_WHAT = {"query": "query", "declarations": "declarations", "trend_query": "query",
         "pattern_query": "pattern", "pred": "condition"}
_DESCRIPTIVE = {"NAME": "identifier", "QNAME": "identifier", "NUMBER": "number",
                "STRING": "string"}
_CLOSERS = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE"}
_PATTERN_START = {"NAME", "QNAME", "LPAR", "NOT", "ABSENT"}


def source_form(term: str, end_text: str) -> str:
    if term == "$END":
        return end_text
    if term == "LITERAL_SET":  # a whole set of constants, one token: it opens with '{'
        return "{"
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
        # Location: the token, or right after the last token at the end of input, or where
        # the text starts when it holds no token at all (empty, blank, only comments)
        if self.tok is not None and self.tok.type == "$END":
            if self.before:
                last = self.before[-1]
                self.line, self.column = last.end_line, last.end_column
            else:
                self.line, self.column = 1, 1
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
            return self.error(f"empty {self.what}", self.empty_hint(), show_expected=False)
        if self.tok.type == "SLASH" and self.text.startswith("/*", self.pos):
            return self.error("unterminated comment", "close the comment with */",
                              show_expected=False)
        special = self.relocated_error()
        if special is not None:
            return special
        if self.tok.type == "DOT":  # '.' is a token only in V.attr of trend/PATTERN rules
            return self.char_error()
        message = f"unexpected {_describe(self.tok, self.end_text)}"
        return self.error(message, self.token_hint())

    def empty_hint(self) -> str:
        """What the text should hold, for an error at its start (no token at all)."""
        if self.start == "declarations":
            return "a declaration looks like: CREATE STREAM S { EVENT A { x:int } }"
        if self.start == "pred":
            return "a condition looks like: price > 10 AND name LIKE 'A.*'"
        return "a query looks like: SELECT * FROM S WHERE A ; B"

    # -- unexpected characters -------------------------------------------------------------
    def char_error(self) -> CEQLSyntaxError:
        ch = self.e.char if self.tok is None else self.tok.value
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
        # FILTER price > 10: 'price >' reads as the start of a stream-qualified variable
        # (S>R[...]); the mistake is the missing brackets at '>'.
        if (p1 is not None and p1.type == "GT" and tok.type not in ("NAME", "QNAME")):
            hint = self.hint_filter_without_brackets(back=1)
            if hint is not None:
                return CEQLSyntaxError("unexpected '>'; expected '['", expected=["'['"],
                                       line=p1.line, column=p1.column, text=self.text,
                                       hint=hint)
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

    def hint_filter_without_brackets(self, back: int = 0) -> str | None:
        # FILTER price > 10: a filter must name a variable and bracket its condition.
        # ``back``: how many tokens before the error the name stands beyond the usual one.
        p1, p2 = self.prev(1 + back), self.prev(2 + back)
        if (p1 is None or p1.type not in ("NAME", "QNAME") or p2 is None
                or p2.type not in ("FILTER", "AND", "OR")):
            return None
        if not back and "LSQB" not in self.acc:
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
        if "NEXT" in self.acc:  # a FILTER: X[...] or a predicate between events
            what = "filter, e.g. x[price > 10] or x.price > y.price"
        elif "MINUS" in self.acc:
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
