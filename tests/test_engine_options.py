"""One set of engine options (cercore.EngineOptions), checked in one place and taken the same way
-- keywords, whole, or both -- by every engine and front door."""

from __future__ import annotations

import numpy as np
import pytest

import cercore
from cercore import ConfigError, EngineOptions
from cercore.spark.base.frames import spark_options

SCHEMA = cercore.Schema.parse("CREATE STREAM S { EVENT A { v:int, ts:primary_time } }")
CEQL = cercore.compile("SELECT * FROM S WHERE A AS a FILTER a[v > 0]", SCHEMA)
TREND = cercore.compile("RETURN COUNT(*) PATTERN A+ WITHIN 10 SLIDE 10", SCHEMA)
# v = "x" is a wrong-type event; ts 1 after ts 3 goes back in time
EVENTS = [("A", {"v": 1, "ts": 3}), ("A", {"v": "x", "ts": 4}), ("A", {"v": 2, "ts": 1}),
          ("A", {"v": 3, "ts": 5})]


@pytest.mark.parametrize("given, message", [
    ({"backend": "fast"}, "unknown backend 'fast'"),
    ({"on_error": "ignore"}, "on_error must be 'raise' or 'skip', not 'ignore'"),
    ({"type_column": ""}, "type_column must name a column"),
    ({"stream_column": 3}, "stream_column must name a column"),
    ({"reorder_slack": -1}, "reorder_slack must be >= 0, got -1"),
    ({"reorder_slack": 1.5}, "reorder_slack must be a whole number"),
    ({"reorder_slack": True}, "reorder_slack must be a whole number"),
])
def test_bad_options_are_config_errors_wherever_they_are_given(given, message):
    with pytest.raises(ConfigError, match=message):
        EngineOptions(**given)
    for make in (lambda: CEQL.engine(**given), lambda: TREND.engine(**given),
                 lambda: cercore.multi_engine([CEQL], **given),
                 lambda: cercore.run("SELECT * FROM S WHERE A", SCHEMA, [], **given)):
        with pytest.raises(ConfigError, match=message):
            make()


def test_an_unknown_option_names_the_options():
    with pytest.raises(TypeError, match="unknown engine option.*'on_eror'.*on_error"):
        CEQL.engine(on_eror="skip")


def test_a_misspelled_option_is_a_cercore_error_with_a_did_you_mean():
    for make in (lambda: CEQL.engine(on_eror="skip"), lambda: TREND.engine(on_eror="skip"),
                 lambda: cercore.multi_engine([CEQL], on_eror="skip"),
                 lambda: cercore.run("SELECT * FROM S WHERE A", SCHEMA, [], on_eror="skip")):
        with pytest.raises(cercore.CercoreError, match="'on_eror'; did you mean 'on_error'"):
            make()
    with pytest.raises(cercore.UnknownOptionError):
        CEQL.engine(bakend="python")


def test_attributes_that_are_not_a_dict_are_named_as_such():
    with pytest.raises(cercore.EventError, match="the attributes of a A event must be a dict "
                                                 r"\(attribute -> value\), got int 5"):
        CEQL.engine().push("A", 5)


def test_a_numpy_integer_slack_is_kept_as_an_int():
    assert EngineOptions(reorder_slack=np.int64(3)).reorder_slack == 3
    assert type(EngineOptions(reorder_slack=np.int64(3)).reorder_slack) is int


def test_keywords_replace_the_fields_of_options():
    base = EngineOptions(on_error="skip", reorder_slack=5)
    assert EngineOptions.of(base, reorder_slack=0, backend=None) == EngineOptions(
        on_error="skip", reorder_slack=0)
    assert EngineOptions.of(None) == EngineOptions()


def positions(found) -> list:
    return [ce.positions if hasattr(ce, "positions") else ce for ce in found]


def test_every_engine_reads_the_same_options(backend):
    """The same options object gives the local engines the same reading of a bad stream: the
    wrong-type event skipped, the late one reordered within the slack."""
    options = EngineOptions(backend=backend, on_error="skip", reorder_slack=5)
    ce = CEQL.engine(options=options)
    assert positions(list(ce.process(EVENTS)) + ce.flush()) == [(0,), (1,), (3,)]
    assert ce.stats["skipped"] == 1 and ce.backend == backend
    multi = cercore.multi_engine({"q": CEQL}, options=options)
    assert [(n, m.positions) for n, m in list(multi.process(EVENTS)) + multi.flush()] == [
        ("q", (0,)), ("q", (1,)), ("q", (3,))]
    trend = TREND.engine(options=options)
    assert trend.run(EVENTS) == [{"window_start": 0, "window_end": 10, "COUNT(*)": 7}]
    assert CEQL.run(EVENTS, options=options) == ce_list(options)
    # keywords win over options: raise instead of skip
    with pytest.raises(cercore.EventError, match="must be int"):
        CEQL.run(EVENTS, options=options, on_error="raise")


def ce_list(options):
    engine = CEQL.engine(options=options)
    return list(engine.process(EVENTS)) + engine.flush()


def test_spark_takes_the_options_but_the_reorder_slack():
    assert spark_options(None, {"on_error": "skip"}) == EngineOptions(on_error="skip")
    with pytest.raises(ConfigError, match="reorder_slack does not apply on Spark"):
        spark_options(EngineOptions(reorder_slack=2), {})
