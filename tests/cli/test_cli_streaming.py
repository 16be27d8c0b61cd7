"""``cercore run`` streams: standard input (CSV, JSON Lines) and ``--follow`` are read line by
line, and each complex event (trend row) is written and flushed as soon as the line that
completes it has been read -- before the next line is even written.

The subprocess tests talk to ``python -m cercore run`` through pipes: after each line that
completes a complex event they read that complex event before writing the next line. Every
read has a generous hang guard (``HANG`` seconds): output held back fails the test instead of
hanging it. No test measures speed.
"""

from __future__ import annotations

import io
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import cercore
from cercore.cli import main
from cercore.errors import CercoreError, EventError
from cercore.input.decode import Rejected
from cercore.input.lines import FollowedFile, LineEvents, stream_lines
from cercore.io import read_events, write_complex_events, write_rows

HANG = 60.0  # seconds: a hang guard, not a timing requirement
DECL = "CREATE STREAM S { EVENT A { id:int, v:double }, EVENT B { id:int, v:double } }"
QUERY = "SELECT * FROM S WHERE A AS a ; B AS b FILTER a[v > 1]"
LATE_B = "SELECT * FROM S WHERE B AS b FILTER b[v > 1]"
# (event, the (start, end) of the complex events of QUERY that it completes)
SCRIPT = [(("A", 1, 2.0), []), (("B", 2, 0.5), [(0, 1)]), (("A", 3, 0.5), []),
          (("B", 4, 1.5), [(0, 3)]), (("A", 5, 3.0), []), (("B", 6, 0.0), [(4, 5), (0, 5)])]
TREND_DECL = "CREATE STREAM S { EVENT A {v:int, t:primary_time}, EVENT B {v:int, t:primary_time} }"
TREND = ("RETURN COUNT(*), SUM(A.v) PATTERN SEQ(A+,B) SEMANTICS skip-till-any-match "
         "WITHIN 10 SLIDE 10")
DATA = Path(cercore.__file__).parent / "data"


def csv_line(ev) -> str:
    return ",".join(map(str, ev)) + "\n"


def json_line(ev) -> str:
    return json.dumps({"event_type": ev[0], "id": ev[1], "v": ev[2]}) + "\n"


# ---- a live `cercore run` ------------------------------------------------------------------
class Live:
    """``python -m cercore run ARGS`` with pipes; stdout and stderr drained by threads."""

    def __init__(self, *args, stdin: bool = True) -> None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # it must flush
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cercore", "run", *map(str, args)],
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=env)
        self.out: queue.Queue = queue.Queue()
        self.err: list[bytes] = []
        self.threads = [threading.Thread(target=self._drain_out, daemon=True),
                        threading.Thread(target=self._drain_err, daemon=True)]
        for t in self.threads:
            t.start()

    def _drain_out(self) -> None:
        for line in self.proc.stdout:
            self.out.put(line.decode())
        self.out.put(None)  # end of output

    def _drain_err(self) -> None:
        self.err.extend(self.proc.stderr)

    def write(self, text: str) -> None:
        self.proc.stdin.write(text.encode())
        self.proc.stdin.flush()

    def read(self, what: str = "a complex event") -> str:
        try:
            line = self.out.get(timeout=HANG)
        except queue.Empty:
            self.kill()
            pytest.fail(f"{what} was not written within {HANG} s: held back")
        if line is None:
            self.finish(close_stdin=False)
            pytest.fail(f"the output ended before {what}; stderr: {self.stderr()}")
        return line

    def finish(self, close_stdin: bool = True) -> tuple[int, list[str], str]:
        """Close stdin, wait for the exit; (exit code, the rest of stdout, stderr)."""
        if close_stdin and self.proc.stdin:
            self.proc.stdin.close()
        try:
            code = self.proc.wait(HANG)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"cercore run did not exit within {HANG} s")
        for t in self.threads:
            t.join(HANG)
        rest = []
        while not self.out.empty():
            line = self.out.get()
            if line is not None:
                rest.append(line)
        return code, rest, self.stderr()

    def stderr(self) -> str:
        return b"".join(self.err).decode()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def live():
    started: list[Live] = []

    def start(*args, **kw) -> Live:
        started.append(Live(*args, **kw))
        return started[-1]

    yield start
    for run in started:
        run.kill()


def spans(line: str) -> tuple:
    d = json.loads(line)
    return (d.get("query"), d["start"], d["end"]) if "query" in d else (d["start"], d["end"])


# ---- stdin: CEQL, several queries, trends -----------------------------------------------------
@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_stdin_writes_each_complex_event_before_the_next_line(live, fmt):
    run = live(QUERY, "--schema", DECL, "--input-format", fmt)
    if fmt == "csv":
        run.write("event_type,id,v\n")
    for ev, expected in SCRIPT:
        run.write(csv_line(ev) if fmt == "csv" else json_line(ev))
        got = [spans(run.read(f"the complex event ending at {end}")) for _, end in expected]
        assert sorted(got) == sorted(expected)
    code, rest, err = run.finish()
    assert (code, rest) == (0, []), err


def test_stdin_csv_output_and_table_output_stream(live):
    for fmt in ("csv", "table"):
        run = live(QUERY, "--schema", DECL, "--format", fmt)
        run.write("event_type,id,v\n")
        run.write(csv_line(SCRIPT[0][0]))
        run.write(csv_line(SCRIPT[1][0]))
        if fmt == "csv":
            assert run.read("the header").startswith("start,end,")
            assert run.read().startswith('0,1,,,"[0,1]"')
        else:
            assert run.read("the table heading").split() == ["#", "start", "end", "events"]
            assert set(run.read("the heading's rule").split()) <= {"-" * n for n in range(50)}
            assert run.read().split()[:3] == ["1", "0", "1"]
        run.write(csv_line(SCRIPT[2][0]) + csv_line(SCRIPT[3][0]))
        line = run.read()
        if fmt == "csv":
            assert line.startswith('0,3,,,"[0,3]"')
        else:
            assert line.split()[:3] == ["2", "0", "3"]
        code, rest, err = run.finish()
        assert (code, rest) == (0, []), err


def test_stdin_several_queries_stream(live):
    run = live(QUERY, LATE_B, "--schema", DECL)
    run.write("event_type,id,v\n")
    for ev, expected in SCRIPT:
        run.write(csv_line(ev))
        want = [("q0", s, e) for s, e in expected]
        if ev[0] == "B" and ev[2] > 1:
            want.append(("q1", SCRIPT.index((ev, expected)), SCRIPT.index((ev, expected))))
        got = [spans(run.read()) for _ in want]
        assert sorted(got) == sorted(want)
    code, rest, err = run.finish()
    assert (code, rest) == (0, []), err


def test_stdin_trend_rows_come_out_as_windows_close(live):
    run = live(TREND, "--schema", TREND_DECL)
    run.write("event_type,v,t\n")
    # (line, the rows of the windows it closes)
    for line, rows in [("A,1,1", []), ("B,2,3", []),
                       ("A,5,12", [{"window_start": 0, "window_end": 10, "COUNT(*)": 1,
                                    "SUM(A.v)": 1}]),
                       ("B,1,13", []),
                       ("A,2,25", [{"window_start": 10, "window_end": 20, "COUNT(*)": 1,
                                    "SUM(A.v)": 5}])]:
        run.write(line + "\n")
        assert [json.loads(run.read("a trend row")) for _ in rows] == rows
    code, rest, err = run.finish()
    assert code == 0, err
    assert rest == []  # the last window holds no trend


# ---- --follow --------------------------------------------------------------------------------
def test_follow_reads_appended_lines_then_stops_when_idle(live, tmp_path):
    path = tmp_path / "growing.csv"
    path.write_text("event_type,id,v\n" + csv_line(SCRIPT[0][0]))
    run = live(QUERY, "--schema", DECL, "--input", path, "--follow", "--idle-timeout", "3",
               stdin=False)

    def append(text: str) -> None:
        with open(path, "a") as f:
            f.write(text)

    append(csv_line(SCRIPT[1][0]))
    assert spans(run.read()) == (0, 1)
    append(csv_line(SCRIPT[2][0]))
    append("B,4")  # half a line: read as it is, it would be a bad row (2 fields)
    time.sleep(0.5)  # give the follower a chance to see it (it must wait for the newline)
    append(",1.5\n")
    assert spans(run.read()) == (0, 3)
    append("A,7")  # never finished: not read, a warning at the end
    code, rest, err = run.finish(close_stdin=False)  # stops after 3 s without new data
    assert (code, rest) == (0, []), err
    assert "the last line has no newline yet (3 bytes); it was not read" in err


def test_follow_stops_cleanly_on_sigint_with_output_flushed(live, tmp_path):
    path, out = tmp_path / "growing.jsonl", tmp_path / "out.jsonl"
    path.write_text(json_line(SCRIPT[0][0]) + json_line(SCRIPT[1][0]))
    run = live(QUERY, "--schema", DECL, "--input", path, "--follow", "--output", out,
               stdin=False)
    deadline = time.monotonic() + HANG
    while not (out.exists() and out.read_text().endswith("\n")):  # the complex event, flushed
        assert time.monotonic() < deadline and run.proc.poll() is None, run.stderr()
        time.sleep(0.05)
    run.proc.send_signal(signal.SIGINT)
    code, _, err = run.finish(close_stdin=False)
    assert code == 130, err
    assert "Traceback" not in err
    assert [spans(line) for line in out.read_text().splitlines()] == [(0, 1)]


def test_follow_and_idle_timeout_usage_errors(tmp_path, capsys):
    (tmp_path / "e.parquet").write_bytes(b"")
    for args, message in [(["--follow"], "--follow needs a file"),
                          (["--idle-timeout", "1"], "--idle-timeout goes with --follow"),
                          (["-i", tmp_path / "e.parquet", "--follow"],
                           "--follow reads CSV or JSON Lines, not parquet")]:
        assert main(["run", QUERY, "--schema", DECL, *map(str, args)]) == 2
        assert message in capsys.readouterr().err


# ---- bad lines on stdin ---------------------------------------------------------------------
def test_stdin_bad_line_skipped_or_raised(live):
    run = live(QUERY, "--schema", DECL, "--on-error", "skip")
    run.write("event_type,id,v\nA,1,2.0\nB,2,x\n")  # line 3 does not convert
    run.write("B,3,0.5\n")
    assert json.loads(run.read())["positions"] == [0, 2]  # the bad line keeps its position
    run.write("C,4,1\nB,5,1\n")  # an unknown type: skipped too
    assert json.loads(run.read())["positions"] == [0, 4]
    code, rest, err = run.finish()
    assert (code, rest) == (0, []), err
    assert "skipped 2 invalid event(s) (unreadable in the file: 1, unknown event type: 1)" in err

    run = live(QUERY, "--schema", DECL)
    run.write("event_type,id,v\nA,1,2.0\nB,2,0.5\n")
    assert spans(run.read()) == (0, 1)  # written before the bad line
    run.write("B,3,x\n")
    code, rest, err = run.finish(close_stdin=False)
    assert (code, rest) == (2, []), err
    assert "cercore: error: <stdin>, line 4 (row 3), column 'v': cannot read 'x' as double" in err

    run = live(QUERY, "--schema", DECL, "--input-format", "jsonl")
    run.write(json_line(("A", 1, 2.0)) + "\n" + '{"event_type": "C"}\n')
    code, rest, err = run.finish(close_stdin=False)
    assert (code, rest) == (2, []), err
    assert "cercore: error: event 1: unknown event type 'C' (<stdin>, line 3)" in err


# ---- stdin gives what the file gives ----------------------------------------------------------
def _stock_jsonl(tmp_path: Path, limit: int | None = None) -> Path:
    table = read_events(DATA / "stock_trace_prefix.csv", cercore.cli.stock_schema())
    rows = table.to_pylist()[:limit]
    path = tmp_path / "stocks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("queries", [["block_sells"], ["rising_price_run"],
                                     ["block_sells", "rising_price_run"], ["trend"]])
def test_stdin_equals_the_file_on_the_bundled_example(tmp_path, queries):
    jsonl = _stock_jsonl(tmp_path)
    args = [str(DATA / f"{q}.ceql") if q != "trend" else
            "RETURN name, COUNT(*), MAX(B.price) PATTERN SEQ(SELL S, BUY B+) "
            "SEMANTICS contiguous WHERE [name] AND S.price < NEXT(B).price "
            "GROUP-BY name WITHIN 30 minutes SLIDE 30 minutes" for q in queries]
    args += ["--schema", str(DATA / "stocks.decl"), "--time-unit", "ms", "--stats"]
    for data, fmt in [(DATA / "stock_trace_prefix.csv", "csv"), (jsonl, "jsonl")]:
        bulk = subprocess.run([sys.executable, "-m", "cercore", "run", *args, "-i", str(data)],
                              capture_output=True, timeout=600)
        streamed = subprocess.run([sys.executable, "-m", "cercore", "run", *args,
                                   "--input-format", fmt], input=data.read_bytes(),
                                  capture_output=True, timeout=600)  # through a pipe
        assert bulk.returncode == streamed.returncode == 0, streamed.stderr.decode()
        assert bulk.stdout.count(b"\n") > 10
        assert streamed.stdout == bulk.stdout
        assert streamed.stderr == bulk.stderr  # warnings and --stats: same counters


def _run_main(capsys, monkeypatch, data: bytes, *args) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code = main(["run", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


BAD_CSV = ("\ufeffevent_type,id,v,note\r\n"
           "A,1,2.0,plain\r\n"
           "\r\n"                                  # a blank line
           'B,2,0.5,"two\nlines"\r\n'              # a quoted newline
           "B,x,1.5,\r\n"                          # a cell that does not convert
           "B,3\r\n"                               # too few fields
           "C,4,1.0,\r\n"                          # an unknown type
           "A,5,,\r\n"                             # a null
           "B,6,9.5,\r\n"
           ",7,1.0,\r\n"                           # no type
           "B,9223372036854775808,1,\r\n"          # beyond int64
           "B,8,1e1,last")                         # no newline at the end
BAD_JSONL = (b'{"event_type": "A", "id": 1, "v": 2.0}\n'
             b"\n"
             b'{"event_type": "B", "id": 2}\n'                 # an absent key: null
             b'{"event_type": "B", "id": "x", "v": 1.5}\n'     # a value that does not convert
             b'{"event_type": "B", "id": 3, \n'                # invalid JSON
             b"[1, 2]\n"                                       # not an object
             b'{"event_type": "C", "id": 4, "v": 1.0}\n'       # an unknown type
             b'{"event_type": "A", "id": 5, "v": null}\n'
             b'{"event_type": "B", "id": 6, "v": 9.5, "note": "n"}\n'
             b'{"event_type": "B", "id": 7.0, "v": 3}')


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("on_error", ["skip", "raise"])
def test_stdin_reads_bad_rows_as_the_file_reader(tmp_path, capsys, monkeypatch, fmt, on_error):
    decl = DECL.replace("EVENT B { id:int, v:double }", "EVENT B { id:int, v:double, note:string }")
    data = BAD_CSV.encode() if fmt == "csv" else BAD_JSONL
    path = tmp_path / f"bad.{fmt}"
    path.write_bytes(data)
    args = ["SELECT * FROM S WHERE A ; B", "--schema", decl, "--on-error", on_error, "--stats"]
    bulk = _run_main(capsys, monkeypatch, b"", *args, "-i", path)
    streamed = _run_main(capsys, monkeypatch, data, *args, "--input-format", fmt)
    if on_error == "skip":
        assert bulk == streamed
        assert bulk[0] == 0 and bulk[1].count("\n") >= 2
        assert "unreadable in the file: " in bulk[2]
    else:  # the bulk reader fails before evaluating; the stream has written what came before
        assert bulk[0] == streamed[0] == 2
        assert bulk[2].splitlines()[-1].replace(str(path), "<stdin>") == \
            streamed[2].splitlines()[-1]
        assert bulk[1] == ""
        assert [json.loads(x)["positions"] for x in streamed[1].splitlines()] == [[0, 1]]


def test_stdin_stream_column_tags_each_event(tmp_path, capsys, monkeypatch):
    decl = ("CREATE STREAM S { EVENT A { v:int, ts:int } } "
            "CREATE STREAM T { EVENT A { v:int, ts:int } }")
    data = b"event_type,v,ts,src\nA,0,1,S\nA,1,0,T\nA,2,2,\nA,3,3,U\nA,4,4,T\n"
    path = tmp_path / "ev.csv"
    path.write_bytes(data)
    args = ["SELECT * FROM S, T WHERE S>A ; T>A", "--schema", decl, "--stream-column", "src"]
    bulk = _run_main(capsys, monkeypatch, b"", *args, "-i", path)
    streamed = _run_main(capsys, monkeypatch, data, *args)
    assert bulk[0] == streamed[0] == 2  # stream U is unknown
    assert "unknown stream 'U'" in streamed[2] and "<stdin>, line 5" in streamed[2]
    assert streamed[1] == bulk[1]  # the complex events before it
    bulk = _run_main(capsys, monkeypatch, b"", *args, "-i", path, "--on-error", "skip")
    streamed = _run_main(capsys, monkeypatch, data, *args, "--on-error", "skip")
    assert bulk[0] == streamed[0] == 0
    assert bulk[1] == streamed[1]
    assert [json.loads(x)["positions"] for x in bulk[1].splitlines()] == [[0, 1], [0, 2],
                                                                         [2, 4], [0, 4]]


def test_stdin_from_a_regular_file_is_read_in_bulk(tmp_path):
    path = tmp_path / "ev.csv"
    path.write_text("event_type,id,v\n" + "".join(csv_line(ev) for ev, _ in SCRIPT)
                    + "B,7,x\n")
    with open(path, "rb") as stdin:  # a bad row: the bulk reader fails before evaluating
        run = subprocess.run([sys.executable, "-m", "cercore", "run", QUERY, "--schema", DECL],
                             stdin=stdin, capture_output=True, timeout=600)
    assert run.returncode == 2 and run.stdout == b""
    assert b"<stdin>, line 8 (row 7), column 'v'" in run.stderr


def test_stdin_json_array_is_read_whole(capsys, monkeypatch):
    data = json.dumps([{"event_type": e[0], "id": e[1], "v": e[2]} for e, _ in SCRIPT]).encode()
    code, out, err = _run_main(capsys, monkeypatch, b"\n" + data, QUERY, "--schema", DECL,
                               "--input-format", "jsonl")
    assert code == 0, err
    assert sorted(spans(x) for x in out.splitlines()) == sorted(
        s for _, ex in SCRIPT for s in ex)


# ---- the pieces --------------------------------------------------------------------------------
def test_line_events_read_a_line_only_when_the_engine_asks():
    asked: list[int] = []  # lines handed out so far, when each complex event came out

    def lines():
        yield b"event_type,id,v\n"
        for k, (ev, _) in enumerate(SCRIPT):
            asked.append(k)
            yield csv_line(ev).encode()

    schema = cercore.Schema.parse(DECL)
    engine = cercore.compile(QUERY, schema).engine()
    records = LineEvents(lines(), schema, "csv")
    for ce in engine.process(r for r, _ in records):
        assert asked[-1] == ce.end  # the line completing it is the last one read
        assert records.line == ce.end + 2  # the header is line 1


def test_follow_gives_whole_lines_only(tmp_path):
    path = tmp_path / "f.csv"
    path.write_bytes(b"a\nb")
    it = iter(FollowedFile(path, idle_timeout=HANG))
    assert next(it) == b"a\n"
    def finish_line() -> None:
        with path.open("ab") as f:
            f.write(b"c\n")

    timer = threading.Timer(0.3, finish_line)
    timer.start()
    assert next(it) == b"bc\n"  # not b"b": the rest of the line is waited for
    timer.join()
    follow = FollowedFile(path, idle_timeout=0.2)
    path.write_bytes(b"x\ny")
    assert list(follow) == [b"x\n"] and follow.unterminated == b"y"
    with pytest.raises(CercoreError, match="negative|>= 0"):
        FollowedFile(path, idle_timeout=-1)


def test_follow_refuses_a_truncated_file(tmp_path):
    path = tmp_path / "f.csv"
    path.write_bytes(b"a\nb\n")
    it = iter(FollowedFile(path, idle_timeout=HANG))
    assert next(it) == b"a\n" and next(it) == b"b\n"
    path.write_bytes(b"")
    with pytest.raises(CercoreError, match="truncated"):
        next(it)


def test_line_events_records_and_rejects():
    schema = cercore.Schema.parse(DECL)
    text = b'{"event_type": "A", "id": 1}\n{"event_type": "B", "id": true}\n\xff\n'
    got = list(LineEvents(stream_lines(io.BytesIO(text)), schema, "jsonl", on_error="skip"))
    assert got[0] == (("A", {"id": 1, "v": None}), None)  # an absent key is null
    assert isinstance(got[1][0], Rejected) and "line 2" in got[1][0].message
    assert isinstance(got[2][0], Rejected) and got[2][0].message == \
        "<stdin>, line 3: not UTF-8 text (byte 0xff)"
    with pytest.raises(EventError, match="line 2, column 'id'"):
        list(LineEvents(stream_lines(io.BytesIO(text)), schema, "jsonl"))
    with pytest.raises(EventError, match="empty CSV file"):
        list(LineEvents(iter([]), schema, "csv"))
    with pytest.raises(EventError, match="not an attribute of any event type"):
        list(LineEvents(iter([b"event_type,id,w\n"]), schema, "csv"))
    with pytest.raises(CercoreError, match="line by line"):
        LineEvents(iter([]), schema, "parquet")


class _Recorder(io.StringIO):
    """A text stream that remembers what had been flushed at each flush."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed = ""

    def flush(self) -> None:
        super().flush()
        self.flushed = self.getvalue()


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "table"])
def test_writer_flushes_each_complex_event_when_streaming(fmt):
    ces = cercore.run(QUERY, DECL, [(ev[0], {"id": ev[1], "v": ev[2]}) for ev, _ in SCRIPT])
    out = _Recorder()
    seen: list[str] = []

    def feed():
        for ce in ces:
            seen.append(out.flushed)  # asked for the next: everything before it is flushed
            yield ce
        seen.append(out.flushed)

    assert write_complex_events(feed(), out, fmt, stream=True) == len(ces) == 4
    for k in range(1, len(seen)):
        assert seen[k].count("\n") > seen[k - 1].count("\n")
        assert seen[k] == out.getvalue()[:len(seen[k])]
    assert seen[-1] == out.getvalue()
    if fmt == "table":  # columns sized from the first complex event, with room to grow
        lines = out.getvalue().splitlines()
        assert lines[0].startswith(" " * 5 + "#") and lines[2].split()[:3] == ["1", "0", "1"]


def test_trend_rows_flush_one_by_one_when_streaming():
    rows = [{"a": 1, "b": "x"}, {"a": 22222, "b": "yy"}]
    for fmt in ("jsonl", "csv", "table"):
        out = _Recorder()
        seen: list[str] = []

        def feed(out=out, seen=seen):
            for r in rows:
                seen.append(out.flushed)
                yield r

        assert write_rows(feed(), ["a", "b"], out, fmt, stream=True) == 2
        assert seen[1] and seen[1].count("\n") > seen[0].count("\n")
        assert out.flushed == out.getvalue()
        if fmt == "table":
            assert out.getvalue().split() == ["a", "b", "1", "x", "22222", "yy"]


def test_trend_queries_take_the_reorder_slack_and_stream_column(tmp_path, capsys):
    """``cercore run`` gives a trend query the engine options a CEQL query gets: events out
    of order within the slack are reordered, and the stream column tags each event."""
    schema = ("CREATE STREAM S { EVENT A { v:int, ts:primary_time } } "
              "CREATE STREAM T { EVENT A { v:int, ts:primary_time } }")
    query = "SELECT COUNT(*) FROM S WHERE A+ AS X WINDOW 10 SLIDE 10"
    events = tmp_path / "events.csv"
    events.write_text("event_type,v,ts,src\nA,1,1,S\nA,2,3,S\nA,3,2,S\nA,4,9,T\nA,5,4,S\n")
    args = ["run", query, "--schema", schema, "--input", str(events), "--stream-column", "src"]
    assert main(args) == 2  # S's time goes back from 3 to 2 (T's event at 9 is not read)
    assert "time goes backwards" in capsys.readouterr().err
    assert main(args + ["--reorder-slack", "5"]) == 0
    # the four S events, in time order: 2^4 - 1 trends; T's event is in no trend
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == [
        {"window_start": 0, "window_end": 10, "COUNT(*)": 15}]


def test_a_stop_request_interrupts_a_followed_file_between_lines(tmp_path):
    """What Ctrl-C does to ``--follow`` (``_stop_on_interrupt``): the lines already there are
    given, then the next wait for data raises KeyboardInterrupt."""
    path = tmp_path / "growing.jsonl"
    path.write_text(json_line(SCRIPT[0][0]) + json_line(SCRIPT[1][0]))
    followed = FollowedFile(path, poll=0.01)
    lines = iter(followed)
    first = next(lines)
    followed.request_stop()
    assert next(lines) != first  # a line already there: given
    with pytest.raises(KeyboardInterrupt):
        next(lines)
