"""Parse tree -> AST: ``ToAst`` (a lark ``Transformer``) and the token helpers other grammars of
``grammar.lark`` share (``meta_pos``, ``token_pos``, ``name_tokens``, ``number_value``,
``unquote``, ``UNIT_SECONDS``). Mistakes only the tree shows (a unit given twice, an unknown
attribute type) raise ``CEQLSyntaxError`` at their token."""

from __future__ import annotations

import difflib
import re

from lark import Token, Transformer, v_args

from cercore.ceql import ast
from cercore.errors import CEQLSyntaxError
from cercore.types import TIME_UNITS_PER_SECOND

#: Attribute types of the declaration language (``primary_time`` marks the time attribute).
ATTRIBUTE_TYPES = ("int", "double", "string", "bool", "primary_time")

_TYPE_ALIASES = {
    "integer": "int", "long": "int", "float": "double", "real": "double", "number": "double",
    "str": "string", "text": "string", "varchar": "string", "boolean": "bool",
    "time": "primary_time", "timestamp": "primary_time",
}

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


# One constant of a LITERAL_SET token (grammar.lark matched the token, so every piece here is
# well formed): groups (sign)(number) or (string); an item is a constant, or two joined by ..
_CONSTANT = r"""(-\s*)?((?:\d+\.\d+|\.\d+|\d+)(?:[eE][+-]?\d+)?)|('(?:[^']|'')*'|"(?:[^"]|"")*")"""
_SET_ITEM = re.compile(f"(?:{_CONSTANT})(?:\\s*\\.\\.\\s*(?:{_CONSTANT}))?")


def literal_set_items(tok: Token) -> tuple[ast.Literal | ast.Range, ...]:
    """The items of a LITERAL_SET token as ``set_item`` builds them from tokens: Literals (a
    negative number is one Literal placed at its '-', as ``neg`` makes it) and Ranges, each
    with the line and column where it starts. Linear in the token's length."""
    text, base = tok.value, tok.start_pos
    line, line_start = tok.line, tok.start_pos - tok.column + 1  # offset where ``line`` starts
    counted = 0  # newlines of ``text`` are counted up to this offset

    def constant(m: re.Match, g: int) -> ast.Literal:
        nonlocal line, line_start, counted
        start = m.start(g + 2) if m.group(g + 2) is not None else m.start(g) \
            if m.group(g) is not None else m.start(g + 1)
        newlines = text.count("\n", counted, start)
        if newlines:
            line += newlines
            line_start = base + text.rindex("\n", counted, start) + 1
        counted = start
        pos = {"line": line, "column": base + start - line_start + 1}
        if m.group(g + 2) is not None:
            return ast.Literal(unquote(m.group(g + 2)), **pos)
        digits = m.group(g + 1)
        value = int(digits) if digits.isdecimal() else float(digits)  # as number_value
        return ast.Literal(-value if m.group(g) is not None else value, **pos)

    items: list[ast.Literal | ast.Range] = []
    for m in _SET_ITEM.finditer(text):
        lo = constant(m, 1)
        if m.group(5) is None and m.group(6) is None:
            items.append(lo)
        else:
            items.append(ast.Range(lo, constant(m, 4), line=lo.line, column=lo.column))
    return tuple(items)


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

    def var_name(self, meta, ch):
        """``x`` or ``S>R``: one NAME token spanning the whole name (``S>R`` as its text)."""
        names = name_tokens(ch)
        if len(names) == 1:
            return names[0]
        first, last = names[0], names[-1]
        return Token("NAME", ast.qualified_name(first.value, last.value), start_pos=first.start_pos,
                     line=first.line, column=first.column, end_line=last.end_line,
                     end_column=last.end_column, end_pos=last.end_pos)

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

    def count_exact(self, meta, ch):
        n = self._int(ch[0], "a repetition count")
        return (n, n, ch[0])

    def count_range(self, meta, ch):
        nums = [c for c in ch if isinstance(c, Token) and c.type == "NUMBER"]
        lo = self._int(nums[0], "a repetition count")
        hi = self._int(nums[1], "a repetition count") if len(nums) > 1 else None
        return (lo, hi, nums[0])

    def repeat(self, meta, ch):
        return self._repeat(meta, ch, False)

    def contig_repeat(self, meta, ch):
        return self._repeat(meta, ch, True)

    def _repeat(self, meta, ch, contiguous: bool):
        lo, hi, tok = next(c for c in ch if isinstance(c, tuple))
        return ast.Repeat(ch[0], lo, hi, contiguous, **meta_pos(meta))

    def not_(self, meta, ch):
        formula = next(c for c in ch if not isinstance(c, Token))
        return ast.Not(formula, **meta_pos(meta))

    def absent_(self, meta, ch):
        formula = next(c for c in ch if not isinstance(c, Token | tuple))
        deadline = next((c[1] for c in ch if isinstance(c, tuple)), None)
        return ast.Absent(formula, deadline, **meta_pos(meta))

    def deadline_time(self, meta, ch):
        return ("@deadline", self.within_time(meta, ch)[1])

    def deadline_attr(self, meta, ch):
        return ("@deadline", self.within_attr(meta, ch)[1])

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

    def in_literal_set(self, meta, ch):
        """``x IN {constants}`` lexed as one LITERAL_SET token: the same InSet as ``in_set``
        builds, each item placed where it stands in the text."""
        operand = self._expr(ch[0], "IN")
        negated = any(isinstance(c, Token) and c.type == "NOT" for c in ch)
        return ast.InSet(operand, literal_set_items(ch[-1]), negated, **meta_pos(meta))

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

    # -- predicates between events (the leaves are the trend rules'; trends override) -------
    def event_predicate(self, meta, ch):
        left, op, right = ch
        return ast.EventPredicate(ast.Compare(op, left, right, **meta_pos(meta)),
                                  **meta_pos(meta))

    def t_binop(self, meta, ch):
        left, op, right = ch
        return ast.BinOp(op.value, left, right, **meta_pos(meta))

    def t_neg(self, meta, ch):
        operand = ch[-1]
        if isinstance(operand, ast.Literal) and type(operand.value) in (int, float):
            return ast.Literal(-operand.value, **meta_pos(meta))
        return ast.Neg(operand, **meta_pos(meta))

    def t_number(self, meta, ch):
        return self.number(meta, ch)

    def t_string(self, meta, ch):
        return self.string(meta, ch)

    def t_true(self, meta, ch):
        return self.true(meta, ch)

    def t_false(self, meta, ch):
        return self.false(meta, ch)

    def t_ref(self, meta, ch):
        var, attr = name_tokens(ch)
        return ast.EventAttr(var.value, attr.value, **token_pos(var))

    def t_next_ref(self, meta, ch):
        var, attr = name_tokens(ch)
        return ast.EventAttr(var.value, attr.value, True, **meta_pos(meta))

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
        name, typ, *unit_tok = name_tokens(ch)
        t = typ.value.lower()
        if t not in ATTRIBUTE_TYPES:
            guess = _TYPE_ALIASES.get(t) or next(
                iter(difflib.get_close_matches(t, ATTRIBUTE_TYPES, n=1, cutoff=0.6)), None)
            hint = (f"did you mean '{guess}'? " if guess else "") + (
                "types are int, double, string, bool and primary_time")
            raise self._error(f"unknown attribute type '{typ.value}'", typ, hint=hint)
        unit = None
        if unit_tok:
            unit = unit_tok[0].value.lower()
            if t != "primary_time":
                raise self._error(f"only primary_time takes a unit, not {t}", unit_tok[0],
                                  hint=f"write {name.value}:primary_time({unit_tok[0].value})")
            if unit not in TIME_UNITS_PER_SECOND:
                raise self._error(f"unknown time unit '{unit_tok[0].value}'", unit_tok[0],
                                  hint="units are " + ", ".join(TIME_UNITS_PER_SECOND))
        return ast.AttrDecl(name.value, t, unit, **token_pos(name))
