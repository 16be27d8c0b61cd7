"""PARTITION BY: composite keys, alternatives, null and missing keys, global positions."""

from __future__ import annotations

from support import outputs

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
    """[plug, household]: LOAD uses plug (its first listed attribute), ALARM household."""
    evs = [("LOAD", {"plug": 7, "household": 1, "value": 1.0}),
           ("ALARM", {"household": 7, "level": 3}),
           ("ALARM", {"household": 1, "level": 3})]
    q = "SELECT * FROM S WHERE LOAD ; ALARM PARTITION BY [plug, household]"
    assert outputs(q, DECL, evs, backend) == {(0, 1, (0, 1))}


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
