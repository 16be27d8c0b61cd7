"""PARTITION BY: composite keys, alternatives, null and missing keys, global positions."""

from __future__ import annotations

import pytest
from support import outputs

import cercore
from cercore.errors import CEQLSemanticError

DECL = ("CREATE STREAM S { EVENT LOAD { plug:int, household:int, value:double }, "
        "EVENT ALARM { household:int, level:int }, EVENT NOTE { text:string } }")


def test_positions_stay_global(backend):
    evs = [("LOAD", {"plug": 1, "household": 1, "value": 1.0}),
           ("LOAD", {"plug": 2, "household": 1, "value": 1.0}),
           ("LOAD", {"plug": 1, "household": 1, "value": 2.0}),
           ("LOAD", {"plug": 2, "household": 1, "value": 2.0})]
    q = "SELECT * FROM S WHERE LOAD ; LOAD PARTITION BY [plug]"
    assert outputs(q, DECL, evs, backend) == {(0, 2, (0, 2)), (1, 3, (1, 3))}


def test_alternatives_key_different_types_by_different_attributes(backend):
    """[plug, household]: one key that LOAD calls plug and ALARM household (as pycer reads
    it); each type has exactly one of the bracket's attributes."""
    decl = ("CREATE STREAM S { EVENT LOAD { plug:int, value:double }, "
            "EVENT ALARM { household:int, level:int } }")
    evs = [("LOAD", {"plug": 7, "value": 1.0}),
           ("ALARM", {"household": 7, "level": 3}),
           ("ALARM", {"household": 1, "level": 3})]
    q = "SELECT * FROM S WHERE LOAD ; ALARM PARTITION BY [plug, household]"
    assert outputs(q, decl, evs, backend) == {(0, 1, (0, 1))}
    trend = cercore.compile("SELECT COUNT(*) FROM S WHERE LOAD AS L ; ALARM AS A "
                            "PARTITION BY [plug, household]", decl)
    assert trend.run(evs, backend=backend) == [{"COUNT(*)": 1}]


def test_a_type_with_several_attributes_of_one_bracket_is_an_error_suggesting_the_pair():
    """LOAD has plug and household: [plug, household] cannot say which is its key; the hint
    writes the composite key. CEQL and trend queries read it alike."""
    with pytest.raises(CEQLSemanticError, match=r"LOAD has 2 of the attributes of PARTITION "
                                                r"BY \[plug, household\]") as err:
        cercore.compile("SELECT * FROM S WHERE LOAD ; ALARM PARTITION BY [plug, household]",
                        DECL)
    assert "PARTITION BY [plug], [household]" in str(err.value)
    assert (err.value.line, err.value.column) == (1, 50)  # at "plug"
    with pytest.raises(CEQLSemanticError, match=r"(?s)LOAD has 2 .* \[plug\], \[household\]"):
        cercore.compile("SELECT COUNT(*) FROM S WHERE LOAD AS L ; ALARM AS A "
                        "PARTITION BY [plug, household]", DECL)


def test_explain_names_the_key_attributes_of_each_event_type():
    decl = ("CREATE STREAM S { EVENT LOAD { plug:int, value:double }, "
            "EVENT ALARM { household:int, level:int } }")
    for text in ("SELECT * FROM S WHERE LOAD ; ALARM PARTITION BY [plug, household]",
                 "SELECT COUNT(*) FROM S WHERE LOAD AS L ; ALARM AS A "
                 "PARTITION BY [plug, household]"):
        assert "key per event type: ALARM: household; LOAD: plug" in \
            cercore.compile(text, decl).explain()


def test_composite_key(backend):
    evs = [("LOAD", {"plug": 1, "household": 1, "value": 1.0}),
           ("LOAD", {"plug": 1, "household": 2, "value": 1.0}),
           ("LOAD", {"plug": 1, "household": 1, "value": 1.0})]
    q = "SELECT * FROM S WHERE LOAD ; LOAD PARTITION BY [plug], [household]"
    assert outputs(q, DECL, evs, backend) == {(0, 2, (0, 2))}


def test_null_key_belongs_to_no_partition(backend):
    evs = [("LOAD", {"plug": None, "household": 1, "value": 1.0}),
           ("LOAD", {"plug": None, "household": 1, "value": 1.0}),
           ("LOAD", {"plug": 3, "household": 1, "value": 1.0}),
           ("LOAD", {"plug": 3, "household": 1, "value": 1.0})]
    q = "SELECT * FROM S WHERE LOAD ; LOAD PARTITION BY [plug]"
    assert outputs(q, DECL, evs, backend) == {(2, 3, (2, 3))}


def test_type_without_key_attribute_never_matches(backend):
    evs = [("NOTE", {"text": "a"}), ("NOTE", {"text": "b"})]
    q = "SELECT * FROM S WHERE NOTE ; NOTE PARTITION BY [plug]"
    assert outputs(q, DECL, evs, backend) == set()


def test_partition_with_events_window_counts_the_whole_query_stream(backend):
    evs = [("LOAD", {"plug": 1, "household": 1, "value": 1.0}),
           ("LOAD", {"plug": 2, "household": 1, "value": 1.0}),
           ("LOAD", {"plug": 1, "household": 1, "value": 1.0})]
    q = "SELECT * FROM S WHERE LOAD ; LOAD PARTITION BY [plug] WITHIN {} EVENTS"
    assert outputs(q.format(2), DECL, evs, backend) == {(0, 2, (0, 2))}
    assert outputs(q.format(1), DECL, evs, backend) == set()
