"""PrePP's own query notation, as the paper prints it::

    PATTERN SEQ(C c, B b, AND(A a, D)) WHERE a.id = b.id AND b.v < c.v AND c.price > 10
    WITHIN 30

Operators SEQ / AND / OR nest; a leaf is an event type with an optional alias. Conditions are
joined by AND (or ∧): ``x.attr op y.attr`` over two types is a pairwise predicate,
``x.attr op literal`` a single-type filter. The window is a number in the time unit of the
events' ``t``. Mistakes raise :class:`cercore.CEQLSyntaxError` (with a caret) or
:class:`cercore.CEQLSemanticError`.
"""

from __future__ import annotations

import threading

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from cercore.ceql.printer import format_literal, format_name
from cercore.errors import CEQLSemanticError, CEQLSyntaxError
from cercore.network.errors import NetworkError
from cercore.network.query import Leaf, NetQuery, Node, Op, Predicate

GRAMMAR = r"""
start: _PATTERN node [_WHERE cond (_AND cond)*] _WITHIN number
node: OPNAME "(" node ("," node)+ ")"   -> op
    | NAME [NAME]                         -> leaf
cond: ref CMP ref                         -> pairwise
    | ref CMP value                       -> unary
ref: NAME "." NAME
value: number | STRING | TRUE | FALSE
number: SIGNED_NUMBER
_PATTERN.3: /PATTERN\b/i
_WHERE.3: /WHERE\b/i
_WITHIN.3: /WITHIN\b/i
_AND.3: /AND\b/i | "∧"
OPNAME.2: /(SEQ|AND|OR)(?=\s*\()/i
TRUE.3: /true\b/i
FALSE.3: /false\b/i
CMP: "==" | "!=" | "<>" | "<=" | ">=" | "=" | "<" | ">"
NAME: /[A-Za-z_][A-Za-z0-9_]*/
STRING: /'(?:[^']|'')*'/
%import common.SIGNED_NUMBER
%import common.WS
%ignore WS
"""

_parser: Lark | None = None
_lock = threading.Lock()


def _get_parser() -> Lark:
    global _parser
    with _lock:
        if _parser is None:
            _parser = Lark(GRAMMAR, parser="lalr", propagate_positions=True)
    return _parser


def parse_pattern(text: str, time_attribute: str = "t") -> NetQuery:
    """Parse PrePP notation into a :class:`NetQuery`."""
    try:
        tree = _get_parser().parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, text) from None
    return _Builder(text, time_attribute).build(tree)


def net_query(query: NetQuery | str, schema=None) -> NetQuery:
    """``query`` as a :class:`NetQuery`: as it is, parsed from PrePP notation
    (``PATTERN ...``), or mapped from CEQL text checked against ``schema`` (a Schema or
    declaration text; see :mod:`cercore.network.from_ceql`)."""
    if isinstance(query, NetQuery):
        return query
    text = query.strip()
    if text[:7].upper() == "PATTERN":
        return parse_pattern(text)
    if schema is None:
        raise NetworkError("a CEQL query needs --schema (schema= in Python), or write it in "
                           "PrePP notation: PATTERN ...")
    from cercore.network.from_ceql import query_from_ceql
    return query_from_ceql(text, schema)


def _syntax_error(exc: UnexpectedInput, text: str) -> CEQLSyntaxError:
    expected: list[str] = []
    if isinstance(exc, UnexpectedToken | UnexpectedEOF):
        expected = sorted(str(e) for e in (exc.expected or ()))
    elif isinstance(exc, UnexpectedCharacters):
        expected = sorted(exc.allowed or ())
    got = "end of text" if isinstance(exc, UnexpectedEOF) or (
        isinstance(exc, UnexpectedToken) and exc.token.type == "$END") else repr(
        text[exc.pos_in_stream] if exc.pos_in_stream is not None and
        exc.pos_in_stream < len(text) else "")
    line = getattr(exc, "line", None)
    col = getattr(exc, "column", None)
    if line in (None, -1):
        lines = text.splitlines() or [""]
        line, col = len(lines), len(lines[-1]) + 1
    return CEQLSyntaxError(f"unexpected {got} in PrePP pattern", expected=expected, line=line,
                           column=col, text=text,
                           hint="form: PATTERN SEQ(A a, AND(B b, C)) WHERE a.x = b.x "
                                "WITHIN 30")


class _Builder:
    def __init__(self, text: str, time_attribute: str) -> None:
        self.text = text
        self.time_attribute = time_attribute
        self.alias: dict[str, str] = {}
        self.types: list[str] = []

    def error(self, message: str, tok) -> CEQLSemanticError:
        return CEQLSemanticError(message, line=getattr(tok, "line", None),
                                 column=getattr(tok, "column", None), text=self.text)

    def build(self, tree: Tree) -> NetQuery:
        node_t, *conds, window_t = tree.children
        root = self.node(node_t)
        preds: list[Predicate] = []
        filters: dict[str, list[str]] = {}
        for c in conds:
            if c is None:
                continue
            if c.data == "pairwise":
                (lt, la), op, (rt, ra) = self.ref(c.children[0]), c.children[1], \
                    self.ref(c.children[2])
                if lt == rt:
                    filters.setdefault(lt, []).append(
                        f"{format_name(la)} {_op(op)} {format_name(ra)}")
                    continue
                preds.append(Predicate(lt, la, _op(op), rt, ra))
            else:
                (t, a), op, v = self.ref(c.children[0]), c.children[1], c.children[2]
                filters.setdefault(t, []).append(f"{format_name(a)} {_op(op)} {self.value(v)}")
        window = float(window_t.children[0])
        try:
            return NetQuery(root, window, tuple(preds),
                            {t: " AND ".join(f"({f})" if len(fs) > 1 else f for f in fs)
                             for t, fs in filters.items()}, self.time_attribute)
        except NetworkError as exc:
            raise CEQLSemanticError(str(exc), text=self.text) from None

    def node(self, t: Tree) -> Node:
        if t.data == "op":
            kind, *kids = t.children
            return Op(str(kind).upper(), tuple(self.node(k) for k in kids))
        name, alias = t.children
        if name in self.types:
            raise self.error(f"event type {name} is used twice; PrePP queries reference each "
                             "type at most once", name)
        self.types.append(str(name))
        for key in (str(name), str(alias) if alias is not None else None):
            if key is None:
                continue
            if key in self.alias and self.alias[key] != str(name):
                raise self.error(f"name {key} is used for two types", alias)
            self.alias[key] = str(name)
        return Leaf(str(name))

    def ref(self, t: Tree) -> tuple[str, str]:
        var, attr = t.children
        if str(var) not in self.alias:
            raise self.error(f"unknown event or alias {var}; known: "
                             f"{', '.join(sorted(self.alias))}", var)
        return self.alias[str(var)], str(attr)

    def value(self, t: Tree) -> str:
        (v,) = t.children
        if isinstance(v, Tree):  # number
            s = str(v.children[0])
            return format_literal(float(s) if any(c in s for c in ".eE") else int(s))
        if isinstance(v, Token) and v.type == "STRING":
            return format_literal(v[1:-1].replace("''", "'"))
        return "true" if str(v).lower() == "true" else "false"


def _op(tok) -> str:
    return {"=": "==", "<>": "!="}.get(str(tok), str(tok))
