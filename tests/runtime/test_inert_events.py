"""Events that satisfy no atom are not stepped where that cannot change the evaluation
(``inert_letters_skippable``): the complex events are exactly those of stepping every event,
each reported when the same event arrives, on random full-CEQL queries and streams. (Their
order among the complex events of one end may differ, which is why LIMIT queries step every
event.)"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import SCHEMAS, queries, streams
from support import compiled_or_discarded

import cercore
from cercore.ceql.printer import format_query


def outputs(engine, events) -> list[tuple]:
    """(end, sorted complex events ending there), in the order the ends were reported."""
    out: list[tuple] = []
    for ce in engine.process(events):
        if not out or out[-1][0] != ce.end:
            out.append((ce.end, []))
        out[-1][1].append((ce.start, ce.positions))
    return [(end, sorted(ces)) for end, ces in out]


# filter_too_much: the assumes keep only the examples where inert events were really left
# unstepped (the point of the test); with some schemas most drawn queries cannot skip
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_skipping_inert_events_changes_nothing(backend, data):
    schema = data.draw(st.sampled_from(list(SCHEMAS.values())))
    # a selection strategy or LIMIT turns the skipping off (``test_which_queries_skip``):
    # queries are drawn without them, so that most examples test something
    drawn = data.draw(queries(schema, full=True, strategies=(None, "ALL", "ANY")))
    query = compiled_or_discarded(format_query(replace(drawn, limit=None)), schema)
    events = data.draw(streams(schema, max_len=12))
    fast = query.engine(backend)
    assume(fast.intake.skip_inert)  # else both engines step every event: nothing to compare
    slow = query.engine(backend)
    slow.intake.skip_inert = False
    fast_out, slow_out = outputs(fast, events), outputs(slow, events)
    # only streams where some event was actually left unstepped test the skipping
    assume(fast.stats["work"]["events"] < slow.stats["work"]["events"])
    assert fast_out == slow_out


def test_which_queries_skip():
    schema = SCHEMAS["seconds"]
    skips = {text: cercore.compile(text, schema).engine("python").intake.skip_inert for text in [
        "SELECT * FROM S WHERE A ; B+ ; C WITHIN 2 SECONDS",
        "SELECT * FROM S WHERE A : B",
        "SELECT * FROM S WHERE A ; NOT(B) ; C",
        "SELECT NEXT * FROM S WHERE A ; B",
        "SELECT * FROM S WHERE (A ; B):+",
        "SELECT * FROM S WHERE A ; B LIMIT 3",
        "SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 2 SECONDS CONSUME BY ANY",
    ]}
    assert list(skips.values()) == [True, False, False, False, False, False, True]
