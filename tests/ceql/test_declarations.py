"""CREATE STREAM declarations -> list[StreamDecl], and their errors."""

from __future__ import annotations

import pytest

from cercore.ceql import ast as A
from cercore.ceql.parser import parse_declarations
from cercore.errors import CEQLSyntaxError


def test_one_stream():
    decls = parse_declarations(
        "CREATE STREAM S { EVENT BUY { id:int, price:double, name:string, ok:bool, "
        "ts:primary_time }, EVENT SELL { id:int } }")
    assert decls == [A.StreamDecl("S", (
        A.EventDecl("BUY", (A.AttrDecl("id", "int"), A.AttrDecl("price", "double"),
                            A.AttrDecl("name", "string"), A.AttrDecl("ok", "bool"),
                            A.AttrDecl("ts", "primary_time"))),
        A.EventDecl("SELL", (A.AttrDecl("id", "int"),)),
    ))]


def test_several_streams_with_optional_semicolons():
    text = """
        -- two streams
        CREATE STREAM S { EVENT A { x:int } };
        create stream T { event B { }, EVENT C {y:DOUBLE} }
        CREATE STREAM U { EVENT A { x:INT } } ;
    """
    decls = parse_declarations(text)
    assert [d.name for d in decls] == ["S", "T", "U"]
    assert decls[1].events == (A.EventDecl("B", ()), A.EventDecl("C", (A.AttrDecl("y", "double"),)))
    assert decls[2].events[0].attributes == (A.AttrDecl("x", "int"),)


def test_types_are_case_insensitive_and_stored_lower_case():
    d = parse_declarations("CREATE STREAM S { EVENT A { a:Int, b:DOUBLE, c:String, d:BOOL, "
                           "e:Primary_Time } }")
    assert [a.type for a in d[0].events[0].attributes] == [
        "int", "double", "string", "bool", "primary_time"]


def test_backticks_and_positions():
    d = parse_declarations("CREATE STREAM `my s` {\n  EVENT `E 1` { `select`:int }\n}")
    assert d[0].name == "my s"
    assert d[0].events[0].name == "E 1"
    assert d[0].events[0].attributes[0].name == "select"
    assert (d[0].line, d[0].column) == (1, 15)
    assert (d[0].events[0].line, d[0].events[0].column) == (2, 9)
    assert (d[0].events[0].attributes[0].line, d[0].events[0].attributes[0].column) == (2, 17)


def test_packaged_declaration():
    from importlib.resources import files

    for path in files("cercore.data").iterdir():
        if path.name.endswith(".decl"):
            decls = parse_declarations(path.read_text())
            assert decls and all(d.events for d in decls)


def test_schema_parse_uses_declarations():
    from cercore.schema import Schema

    s = Schema.parse("CREATE STREAM S { EVENT A { x:int, ts:primary_time } }")
    assert s.time_attribute == "ts"
    assert list(s.streams) == ["S"]


@pytest.mark.parametrize("text, message, hint", [
    ("", "empty declarations", "a declaration looks like"),
    ("CREATE STREAM S { EVENT A { x int } }", "unexpected name 'int'; expected ':'",
     "write attributes as name:type"),
    ("CREATE STREAM S { A { x:int } }", "unexpected name 'A'; expected 'EVENT'",
     "declare each event type as EVENT"),
    ("STREAM S { EVENT A { x:int } }", "unexpected keyword 'STREAM'; expected 'CREATE'",
     "a declaration starts with CREATE STREAM"),
    ("CREATE STREAM S { EVENT A { x:integer } }", "unknown attribute type 'integer'",
     "did you mean 'int'?"),
    ("CREATE STREAM S { EVENT A { x:float } }", "unknown attribute type 'float'",
     "did you mean 'double'?"),
    ("CREATE STREAM S { EVENT A { x:int, } }", "unexpected '}'; expected identifier",
     "remove the trailing ','"),
    ("CREATE STREAM S { EVENT A { x:int } ", "unexpected end of declarations",
     "the '{' at line 1, column 17 is never closed: add '}'"),
    ("CREATE STREAM S { }", "unexpected '}'; expected 'EVENT'", "declare each event type"),
])
def test_declaration_errors(text, message, hint):
    with pytest.raises(CEQLSyntaxError) as info:
        parse_declarations(text)
    err = info.value
    assert err.message.startswith(message)
    assert hint in (err.hint or "")
