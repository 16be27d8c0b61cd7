"""Event time as users have it: the time attribute reads integers (in the declared unit) and
instants -- Python datetimes, pandas datetime64, Arrow timestamp[unit, tz], ISO-8601 text in
CSV and JSON lines -- and complex events report times as the input wrote them
(DESIGN.md "Types"; cercore.types.coerce_time)."""

from __future__ import annotations

import datetime as dt
import io
import json
import subprocess
import sys
from pathlib import Path
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cercore
from cercore.errors import CEQLSemanticError, CEQLSyntaxError, EventError
from cercore.io import read_events

ROOT = Path(__file__).resolve().parents[2]
DECL = ("CREATE STREAM S { EVENT BUY { name:string, price:double, volume:int, ts:primary_time },"
        " EVENT SELL { name:string, price:double, volume:int, ts:primary_time } }")
QUERY = ("SELECT * FROM S WHERE BUY AS b ; SELL AS s FILTER b[name = 'INITECH'] AND "
         "s[name = 'INITECH'] WITHIN 30 SECONDS")
BASE = dt.datetime(2024, 3, 1, 9, 30, 0)


def test_the_bundled_trades_csv_reads_and_runs(backend):
    table = read_events(ROOT / "examples" / "data" / "trades.csv", cercore.Schema.parse(DECL))
    assert pa.types.is_timestamp(table.schema.field("ts").type)
    ces = cercore.compile(QUERY, DECL).run(table, backend=backend)
    assert ces
    for ce in ces:
        assert isinstance(ce.start_time, dt.datetime) and ce.start_time.tzinfo is None
        assert dt.timedelta(0) <= ce.end_time - ce.start_time <= dt.timedelta(seconds=30)
        assert all(isinstance(e.attributes["ts"], dt.datetime) for e in ce.events)


def _events(offsets: list[int], tz) -> list[tuple[str, dict]]:
    base = BASE if tz is None else BASE.replace(tzinfo=tz)
    return [("BUY" if k % 3 == 0 else "SELL",
             {"name": "INITECH", "price": 1.0, "volume": 1,
              "ts": base + dt.timedelta(seconds=s)}) for k, s in enumerate(offsets)]


def _frame(events):
    import pandas as pd

    return pd.DataFrame({"event_type": [t for t, _ in events],
                         **{a: [e[a] for _, e in events] for a in ("name", "price", "volume",
                                                                 "ts")}})


def _csv(events) -> bytes:
    lines = ["event_type,name,price,volume,ts"]
    lines += [f"{t},{a['name']},{a['price']},{a['volume']},{a['ts'].isoformat()}"
              for t, a in events]
    return ("\n".join(lines) + "\n").encode()


def _jsonl(events) -> bytes:
    return "".join(json.dumps({"event_type": t, **a, "ts": a["ts"].isoformat()}) + "\n"
                   for t, a in events).encode()


ZONES = [None, dt.UTC, dt.timezone(dt.timedelta(hours=1)), ZoneInfo("America/New_York")]


@settings(max_examples=25, deadline=None)
@given(gaps=st.lists(st.integers(0, 20), min_size=1, max_size=25),
       zone=st.sampled_from(range(len(ZONES))))
def test_every_form_of_timestamps_gives_the_same_complex_events_and_times(backend, gaps, zone):
    tz = ZONES[zone]
    offsets = [sum(gaps[:k + 1]) for k in range(len(gaps))]
    events = _events(offsets, tz)
    schema = cercore.Schema.parse(DECL)
    query = cercore.compile(QUERY, schema)
    # the reference: integer seconds since the epoch
    as_ints = [(t, {**a, "ts": int(a["ts"].replace(tzinfo=a["ts"].tzinfo or dt.UTC)
                                   .timestamp())}) for t, a in events]
    expected = query.run(as_ints, backend=backend)
    forms = {
        "datetimes": events,
        "pandas": _frame(events),
        "arrow": pa.Table.from_pandas(_frame(events), preserve_index=False),
        "csv": read_events(io.BytesIO(_csv(events)), schema, "csv"),
        "jsonl": read_events(io.BytesIO(_jsonl(events)), schema, "jsonl"),
    }
    for name, data in forms.items():
        got = query.run(data, backend=backend)
        assert [c.positions for c in got] == [c.positions for c in expected], name
        for c, e in zip(got, expected):
            assert isinstance(c.start_time, dt.datetime), name
            assert c.start_time == events[c.start][1]["ts"], name
            assert c.end_time == events[c.end][1]["ts"], name
            assert (c.start_time.tzinfo is None) == (tz is None), name
            assert int(c.start_time.replace(tzinfo=c.start_time.tzinfo or dt.UTC)
                       .timestamp()) == e.start_time, name
    # several queries in one pass: the shared input's form reaches every query
    multi = cercore.multi_engine({"q": query}, backend=backend)
    together = list(multi.process(forms["pandas"])) + multi.flush()
    assert [(m.ce.positions, m.ce.start_time, m.ce.end_time) for m in together] == \
        [(c.positions, events[c.start][1]["ts"], events[c.end][1]["ts"]) for c in expected]
    # one at a time (push) too
    engine = query.engine(backend=backend)
    pushed = [c for t, a in events for c in engine.push(t, a)]
    assert [c.positions for c in pushed] == [c.positions for c in expected]
    assert [c.end_time for c in pushed] == [events[c.end][1]["ts"] for c in pushed]


def test_integer_times_are_reported_as_integers(backend):
    events = [("BUY", {"name": "INITECH", "price": 1.0, "volume": 1, "ts": 10}),
              ("SELL", {"name": "INITECH", "price": 1.0, "volume": 1, "ts": 12})]
    (ce,) = cercore.compile(QUERY, DECL).run(events, backend=backend)
    assert (ce.start_time, ce.end_time) == (10, 12)


def test_a_declared_unit_changes_what_an_integer_means(backend):
    events = [("BUY", {"name": "INITECH", "price": 1.0, "volume": 1, "ts": 0}),
              ("SELL", {"name": "INITECH", "price": 1.0, "volume": 1, "ts": 20_000})]
    seconds = cercore.compile(QUERY, DECL).run(events, backend=backend)
    millis = cercore.compile(QUERY, DECL.replace("primary_time", "primary_time(ms)"))
    assert len(seconds) == 0  # 20,000 s apart
    assert len(millis.run(events, backend=backend)) == 1  # 20 s apart
    assert millis.schema.time_unit == "ms"
    assert "primary_time(ms)" in millis.schema.to_text()
    assert cercore.Schema.parse(millis.schema.to_text()) == millis.schema


def test_instants_are_read_in_the_declared_unit(backend):
    decl = DECL.replace("primary_time", "primary_time(ms)")
    events = [("BUY", {"name": "INITECH", "price": 1.0, "volume": 1,
                       "ts": "2024-03-01T09:30:00.250Z"}),
              ("SELL", {"name": "INITECH", "price": 1.0, "volume": 1,
                        "ts": "2024-03-01T09:30:30.250Z"}),
              ("SELL", {"name": "INITECH", "price": 1.0, "volume": 1,
                        "ts": "2024-03-01T09:30:30.251Z"})]
    (ce,) = cercore.compile(QUERY, decl).run(events, backend=backend)
    assert ce.positions == (0, 1)
    assert ce.end_time == dt.datetime(2024, 3, 1, 9, 30, 30, 250000, tzinfo=dt.UTC)


def test_an_instant_with_a_fraction_of_the_unit_is_refused_with_the_way_out():
    events = [("BUY", {"name": "A", "price": 1.0, "volume": 1, "ts": "2024-03-01T09:30:00.5"})]
    with pytest.raises(EventError, match=r"not a whole number of s .*primary_time\(ms\)"):
        cercore.compile(QUERY, DECL).run(events)


def test_a_value_that_is_no_time_names_both_forms():
    events = [("BUY", {"name": "A", "price": 1.0, "volume": 1, "ts": "yesterday"})]
    with pytest.raises(EventError, match=r"BUY.ts must be an integer .* or a timestamp"):
        cercore.compile(QUERY, DECL).run(events)


def test_declared_unit_errors():
    with pytest.raises(CEQLSyntaxError, match="unknown time unit 'mz'"):
        cercore.Schema.parse(DECL.replace("ts:primary_time", "ts:primary_time(mz)", 1))
    with pytest.raises(CEQLSyntaxError, match="only primary_time takes a unit"):
        cercore.Schema.parse("CREATE STREAM S { EVENT A { v:int(ms) } }")
    with pytest.raises(CEQLSemanticError, match="time unit 's' given"):
        cercore.Schema.parse(DECL.replace("primary_time", "primary_time(ms)"), time_unit="s")


def test_a_time_window_on_an_unstated_unit_is_told_once():
    warned = cercore.compile(QUERY, DECL).warnings
    told = [w for w in warned if "primary_time(ms)" in w]
    assert len(told) == 1 and "seconds" in told[0]
    stated = cercore.compile(QUERY, DECL.replace("primary_time", "primary_time(s)")).warnings
    assert not [w for w in stated if "primary_time(ms)" in w]
    assert not [w for w in cercore.compile(QUERY, DECL, time_unit="ms").warnings
                if "primary_time(ms)" in w]
    events_window = cercore.compile(QUERY.replace("30 SECONDS", "3 EVENTS"), DECL).warnings
    assert not [w for w in events_window if "primary_time(ms)" in w]
    twice = QUERY.replace("SELL AS s FILTER", "SELL AS s ; ABSENT(BUY) WITHIN 5 SECONDS FILTER")
    assert len([w for w in cercore.compile(twice, DECL).warnings
                if "primary_time(ms)" in w]) == 1
    assert "primary_time(ms)" in cercore.compile(QUERY, DECL).explain()


def test_the_cli_warns_and_writes_iso_times(tmp_path):
    decl = tmp_path / "s.decl"
    decl.write_text(DECL)
    run = subprocess.run([sys.executable, "-m", "cercore", "run", QUERY, "--schema", str(decl),
                          "--input", str(ROOT / "examples" / "data" / "trades.csv")],
                         capture_output=True, text=True, cwd=ROOT, check=True)
    assert "primary_time(ms)" in run.stderr
    first = json.loads(run.stdout.splitlines()[0])
    assert dt.datetime.fromisoformat(first["start_time"]) == \
        dt.datetime.fromisoformat(first["events"][0]["attributes"]["ts"])


def test_reorder_slack_orders_datetimes(backend):
    events = _events([0, 5, 3, 9], None)
    query = cercore.compile(QUERY, DECL)
    got = query.run(events, backend=backend, reorder_slack=10)
    assert got and all(c.start_time <= c.end_time for c in got)
    assert {c.end_time for c in got} <= {a["ts"] for _, a in events}


def test_json_lines_keep_a_single_offset_and_csv_naive_times(backend):
    events = _events([0, 10, 20], dt.timezone(dt.timedelta(hours=2)))
    schema = cercore.Schema.parse(DECL)
    table = read_events(io.BytesIO(_jsonl(events)), schema, "jsonl")
    (ce, *_) = cercore.compile(QUERY, schema).run(table, backend=backend)
    assert ce.start_time.utcoffset() == dt.timedelta(hours=2)
    assert ce.start_time.isoformat() == "2024-03-01T09:30:00+02:00"
    naive = read_events(io.BytesIO(_csv(_events([0, 10, 20], None))), schema, "csv")
    (ce, *_) = cercore.compile(QUERY, schema).run(naive, backend=backend)
    assert ce.start_time == BASE and ce.start_time.tzinfo is None


def test_a_trend_window_on_an_unstated_unit_is_told_too():
    text = "RETURN COUNT(*) PATTERN SEQ(SELL S, BUY B+) WITHIN 30 minutes SLIDE 30 minutes"
    (told,) = cercore.compile(text, DECL).warnings
    assert "primary_time(ms)" in told
    assert "primary_time(ms)" in cercore.compile(text, DECL).explain()
    assert cercore.compile(text, DECL.replace("primary_time", "primary_time(s)")).warnings == []
    assert cercore.compile(text.replace(" minutes", ""), DECL).warnings == []  # raw units


def test_watermarks_and_trend_windows_speak_timestamps_too(backend, tmp_path):
    """advance() takes a timestamp as events do; a trend query over timestamps reports its
    windows as datetimes, and the CLI writes them as ISO-8601 text."""
    start = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
    deadline = cercore.compile("SELECT * FROM S WHERE SELL AS s ; ABSENT(BUY) WITHIN 5 SECONDS",
                               DECL)
    engine = deadline.engine(backend=backend)
    assert list(engine.process([("SELL", {"name": "A", "price": 1.0, "volume": 1,
                                          "ts": start})])) == []
    assert engine.advance(start + dt.timedelta(seconds=5)) == []  # not passed yet
    (ce,) = engine.advance("2024-03-01T00:00:06Z")
    assert ce.start_time == start
    with pytest.raises(cercore.ConfigError, match="advance.*must be an integer"):
        engine.advance("soon")
    trend = cercore.compile("RETURN COUNT(*) PATTERN SEQ(SELL S, BUY B+) "
                            "WITHIN 10 seconds SLIDE 10 seconds", DECL)
    events = _events([0, 3, 4, 6], dt.UTC)  # BUY, SELL, SELL, BUY
    (row,) = trend.run(events, backend=backend)
    assert row["window_start"] == BASE.replace(tzinfo=dt.UTC)  # 09:30:00, a multiple of 10 s
    assert row["window_end"] - row["window_start"] == dt.timedelta(seconds=10)
    assert row["COUNT(*)"] == 2
    decl = tmp_path / "s.decl"
    decl.write_text(DECL)
    data = tmp_path / "e.jsonl"
    data.write_bytes(_jsonl(events))
    run = subprocess.run([sys.executable, "-m", "cercore", "run",
                          "RETURN COUNT(*) PATTERN SEQ(SELL S, BUY B+) WITHIN 10 seconds "
                          "SLIDE 10 seconds", "--schema", str(decl), "--input", str(data)],
                         capture_output=True, text=True, cwd=ROOT, check=True)
    assert json.loads(run.stdout.splitlines()[0])["window_start"] == "2024-03-01T09:30:00+00:00"
