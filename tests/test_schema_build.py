"""``Schema.build``: the schema ``Schema.parse`` makes of the same declarations, and its
errors (the checks are ``Schema``'s own, shared with ``parse``)."""

from __future__ import annotations

import pickle

import pytest

from cercore.errors import CEQLSemanticError
from cercore.schema import Schema
from cercore.types import AttrType

TEXT = """
CREATE STREAM S { EVENT BUY { name:string, price:double, ok:bool, ts:int },
                  EVENT SELL { name:string, ts:int } }
CREATE STREAM T { EVENT SELL { name:string, ts:int } }
"""
TYPES = {"BUY": [("name", "string"), ("price", AttrType.DOUBLE), ("ok", "bool"), ("ts", "int")],
         "SELL": [("name", AttrType.STRING), ("ts", "int")]}
STREAMS = {"S": ["BUY", "SELL"], "T": ["SELL"]}


@pytest.mark.parametrize("kw", [{}, {"time_attribute": "ts"},
                                {"time_attribute": "ts", "time_unit": "ms"},
                                {"time_unit": "ns"}])
def test_build_equals_parse(kw):
    built = Schema.build(TYPES, STREAMS, **kw)
    assert built == Schema.parse(TEXT, **kw)
    assert built.type_names == ["BUY", "SELL"]
    assert built.stream_ids == {"S": 0, "T": 1}
    assert built.time_unit_stated is ("time_unit" in kw)
    assert pickle.loads(pickle.dumps(built)) == built


def test_build_round_trips_through_text():
    built = Schema.build(TYPES, STREAMS, time_attribute="ts", time_unit="us")
    assert Schema.parse(built.to_text()) == built


def test_default_stream_carries_every_type():
    built = Schema.build({"A": [("x", "int")], "B": []})
    assert built == Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { } }")


def test_names_are_taken_as_they_are():
    odd = "my type"
    built = Schema.build({odd: [("a b", "int")]}, {"the stream": [odd]})
    assert built == Schema.parse("CREATE STREAM `the stream` { EVENT `my type` { `a b`:int } }")


@pytest.mark.parametrize("types, streams, kw, message", [
    ({"A": [("x", "int"), ("x", "int")]}, None, {}, "attribute 'x' is declared twice in event A"),
    ({"A": [("x", "float")]}, None, {}, "type 'float'; use one of int, double, string, bool"),
    ({"A": [("t", "primary_time")]}, None, {}, "time_attribute="),
    ({"A": [("x", "int")]}, {"S": ["A", "AA"]}, {}, "event type 'AA', which is not declared"),
    ({"A": [("x", "int")], "B": []}, {"S": ["A"]}, {}, "in no stream: B"),
    ({"A": [("x", "int")]}, None, {"time_attribute": "y"}, "time attribute 'y' is not declared"),
    ({"A": [("x", "double")]}, None, {"time_attribute": "x"}, "must be int, not double"),
    ({"A": [("x", "int")], "B": []}, None, {"time_attribute": "x"}, "missing from event type"),
    ({"A": [("x", "int")]}, None, {"time_unit": "h"}, "unknown time unit 'h'"),
    ({"A": [("x", "int")], "B": [("x", "string")]}, None, {}, "cercore needs one type"),
])
def test_build_errors(types, streams, kw, message):
    with pytest.raises(CEQLSemanticError, match=message.replace("(", r"\(")):
        Schema.build(types, streams, **kw)


def test_parse_and_build_share_their_errors():
    with pytest.raises(CEQLSemanticError, match="stream 'S' is declared twice"):
        Schema.parse("CREATE STREAM S { EVENT A { } } CREATE STREAM S { EVENT B { } }")
    with pytest.raises(CEQLSemanticError, match="is declared again with different attributes"):
        Schema.parse("CREATE STREAM S { EVENT A { x:int } } CREATE STREAM T { EVENT A { } }")
