"""Real time: events pushed one at a time (push per backend, vs pycer), push-to-output latency.

    cercore-bench realtime [--events N] [--backend auto|python|cython|all] [--repeat R]
                           [--clock cpu|wall] [--no-pycer] [--out DIR]

What a streaming application does -- a consumer loop handing cercore one event at a time --
on the bundled real stock trace (``datasets.stock_trace``: ``stocks.decl``, times in ms), read
into ``(type, attrs)`` records before anything is timed:

* ``S3`` (``data/s3_sell_buy_buy.ceql``), ``S3'`` (the same with a ticker that never trades:
  no output) and ``PARTITION BY`` (SELL; BUY of one ticker within a second):
  ``engine.push(type, attrs)`` per event, then ``flush()``;
* ``multi x10``: ``cercore.multi_engine`` of ten S'3-shaped queries over different tickers
  (``multiquery.stock_queries``), pushed per event;
* ``trend``: a trend aggregation engine's ``push`` per event, then ``flush()``;
* ``pycer``: the CORE authors' C++ engine on the three CEQL workloads, fed as an application
  would (dict -> ``PyEvent`` -> ``send_events([e])`` per event; ``peers.run_pycer``), when a
  Python 3.13 with pycer is found (``peers.find_pycer``).

Every figure is checked first: what ``push`` returned over the stream must equal what a fresh
engine's bulk ``process(table)`` (plus ``flush()``) returns on the same events -- same complex
events (query, start, end, positions) in the same order, or the same trend rows -- and pycer's
[start, end] intervals must equal cercore's. A figure whose outputs differ is not reported.
Throughput: best of R passes, a fresh engine per pass built before the clock starts, the
garbage collector paused (``runner.best_of_each``, backends interleaved), this process's CPU
time by default.

Latency (``S3``): for each event that completes at least one complex event, the wall time
(``perf_counter_ns``) from the call of ``push`` to its return; and for ``process(generator)``,
from the generator yielding the completing event to the first of its complex events reaching
the consumer. One pass per backend after the checks, the garbage collector left on (as an
application runs); p50, p99 and max in microseconds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import cercore
from cercore.bench.runner import rss_bytes, text_table
from cercore.errors import CercoreError

ABSENT = "NotExists"  # a ticker that never trades (S3': evaluated in full, no output)
PARTITIONED = ("SELECT * FROM S WHERE (SELL as T1; BUY as T2) PARTITION BY [name] "
               "WITHIN 1000 [stock_time]")
TREND = ("RETURN name, COUNT(*), SUM(B.volume) PATTERN SEQ(SELL S, BUY B+) WHERE [name] "
         "GROUP-BY name WITHIN 10 seconds SLIDE 10 seconds")
MULTI_QUERIES = 10
Record = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class PushWorkload:
    """One engine fed event by event: ``kind`` "ceql" (one query), "multi" (``texts`` in one
    ``multi_engine``) or "trend"; ``pycer``: also fed to pycer one event at a time."""

    name: str
    kind: str
    texts: tuple[str, ...]
    pycer: bool = False


def push_workloads() -> list[PushWorkload]:
    """S3, S3', PARTITION BY, ten queries in one multi-query engine, a trend query."""
    from cercore.bench.datasets import DATA
    from cercore.bench.multiquery import stock_queries

    s3 = (DATA / "s3_sell_buy_buy.ceql").read_text()
    return [PushWorkload("S3", "ceql", (s3,), True),
            PushWorkload("S3'", "ceql", (s3.replace("'QQQ'", f"'{ABSENT}'"),), True),
            PushWorkload("PARTITION BY", "ceql", (PARTITIONED,), True),
            PushWorkload(f"multi x{MULTI_QUERIES}", "multi",
                         tuple(stock_queries(MULTI_QUERIES))),
            PushWorkload("trend", "trend", (TREND,))]


def records(table: pa.Table, type_column: str = "event_type") -> list[Record]:
    """``table`` as the ``(type, attrs)`` records an application would push."""
    return [(row.pop(type_column), row) for row in table.to_pylist()]


def engine_maker(w: PushWorkload, schema: cercore.Schema) -> Callable[[str], Any]:
    """``make(backend)``: a fresh engine for ``w`` (queries compiled once)."""
    compiled = [cercore.compile(t, schema) for t in w.texts]
    if w.kind == "multi":
        return lambda backend: cercore.multi_engine(compiled, backend=backend)
    return lambda backend: compiled[0].engine(backend)


def output_key(w: PushWorkload, out: Any) -> Any:
    """What is compared between push and bulk: a trend row as is; a complex event's
    (query,) start, end and positions."""
    if w.kind == "trend":
        return out
    key = (out.start, out.end, tuple(out.positions))
    return (out.query, *key) if w.kind == "multi" else key


def pushed(engine: Any, events: list[Record]) -> list:
    """Every output of pushing ``events`` one at a time, then ``flush()``."""
    push = engine.push
    return [out for typ, attrs in events for out in push(typ, attrs)] + engine.flush()


def push_count(engine: Any, events: list[Record]) -> int:
    """The timed loop: push each event, count what comes out (flush included)."""
    push = engine.push
    n = 0
    for typ, attrs in events:
        n += len(push(typ, attrs))
    return n + len(engine.flush())


def check_push(w: PushWorkload, make: Callable[[str], Any], table: pa.Table,
               events: list[Record], backend: str) -> tuple[list, str | None]:
    """(bulk outputs, None) when pushing ``events`` gives exactly what bulk ``process(table)``
    gives on a fresh engine; else (bulk outputs, where they first differ)."""
    bulk_engine = make(backend)
    bulk = list(bulk_engine.process(table)) + bulk_engine.flush()
    want = [output_key(w, o) for o in bulk]
    got = [output_key(w, o) for o in pushed(make(backend), events)]
    if got == want:
        return bulk, None
    i = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    return bulk, (f"push gave {len(got):,} outputs, process(table) {len(want):,}; first "
                  f"difference at output {i}: push {got[i] if i < len(got) else None}, "
                  f"bulk {want[i] if i < len(want) else None}")


def pycer_query(text: str) -> str:
    """``text`` for pycer: its attribute windows ``WITHIN n [attr]`` exclude a span of exactly
    n, cercore's include it (CORE: end - start <= n); on integer times ``n + 1`` asks pycer
    for the same complex events (the comparison of intervals checks it)."""
    import re

    return re.sub(r"WITHIN\s+(\d+)\s*\[", lambda m: f"WITHIN {int(m[1]) + 1} [", text)


def pycer_row(python: str, w: PushWorkload, table: pa.Table, bulk: list, repeat: int,
              clock: str) -> dict | None:
    """pycer fed one event at a time on ``w``; its intervals checked against cercore's
    (``bulk``). None (with a note) when pycer fails."""
    from cercore.bench import datasets, peers

    try:
        res = peers.run_pycer(python, datasets.DECLARATIONS["stocks"], pycer_query(w.texts[0]),
                              table, repeat, clock, one_at_a_time=True)
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"cercore-bench realtime: pycer failed on {w.name}: {exc}", file=sys.stderr)
        return None
    ours = sorted((ce.start_time, ce.end_time) for ce in bulk)
    agrees = [tuple(i) for i in res["intervals"]] == ours
    if not agrees:
        print(f"cercore-bench realtime: pycer and cercore disagree on {w.name}: pycer "
              f"{res['complex_events']:,} complex events, cercore {len(ours):,}; its figure "
              "is not reported", file=sys.stderr)
    return _row(w, "pycer", res["events"], res["complex_events"], res["seconds"], agrees)


def _row(w: PushWorkload, backend: str, events: int, outputs: int, seconds: float | None,
         checked: bool) -> dict:
    return {"experiment": "push", "workload": w.name, "kind": w.kind, "backend": backend,
            "events": events, "outputs": outputs, "checked": checked,
            "seconds": seconds if checked else None,
            "events_per_second": events / seconds if checked and seconds else None}


# --- latency ---------------------------------------------------------------------------------
def push_latencies(engine: Any, events: list[Record]) -> tuple[list[int], int]:
    """(ns from the call of ``push`` to its return, for each event that completes a complex
    event; the number of complex events)."""
    push, clock = engine.push, time.perf_counter_ns
    out, n = [], 0
    for typ, attrs in events:
        t0 = clock()
        found = push(typ, attrs)
        t1 = clock()
        if found:
            out.append(t1 - t0)
            n += len(found)
    return out, n


def generator_latencies(engine: Any, events: list[Record]) -> tuple[list[int], int]:
    """(ns from a generator yielding an event to the first complex event it completes
    reaching the consumer of ``engine.process(generator)``, per completing event; the number
    of complex events)."""
    clock = time.perf_counter_ns
    yielded = [0] * len(events)

    def feed() -> Iterator[Record]:
        for i, rec in enumerate(events):
            yielded[i] = clock()
            yield rec

    base = engine.stats["events"]  # positions count from the engine's first event
    out, n, last = [], 0, -1
    for ce in engine.process(feed()):
        now = clock()
        n += 1
        if ce.end != last:
            last = ce.end
            out.append(now - yielded[ce.end - base])
    return out, n


def latency_row(backend: str, path: str, ns: list[int], outputs: int) -> dict:
    us = np.asarray(ns, dtype=np.float64) / 1e3
    p50, p99, top = (np.percentile(us, 50), np.percentile(us, 99), us.max()) if len(us) \
        else (float("nan"),) * 3
    return {"experiment": "latency", "workload": "S3", "backend": backend, "path": path,
            "completing_events": len(ns), "outputs": outputs, "p50_us": float(p50),
            "p99_us": float(p99), "max_us": float(top)}


# --- tables ----------------------------------------------------------------------------------
def format_push(rows: list[dict]) -> str:
    """One line per (workload, engine): events, outputs, k events/s, whether the outputs were
    checked, and on cython's line its speed over python and over pycer from the same run."""
    rate = {(r["workload"], r["backend"]): r["events_per_second"] for r in rows}

    def ratio(w: str, b: str, peer: str) -> str:
        ours, theirs = rate.get((w, "cython")), rate.get((w, peer))
        return f"{ours / theirs:.1f}x" if b == "cython" and ours and theirs else "-"

    head = (f"{'workload':<14}{'engine':<8}{'events':>9}{'outputs':>11}{'k ev/s':>10}"
            f"{'cython/python':>15}{'cython/pycer':>14}  checked")
    lines = [head, "-" * len(head)]
    for r in rows:
        w, b = r["workload"], r["backend"]
        speed = f"{r['events_per_second'] / 1e3:,.1f}" if r["events_per_second"] else "-"
        check = ("= cercore" if b == "pycer" else "= bulk") if r["checked"] else "DIFFERS"
        lines.append(f"{w:<14}{b:<8}{r['events']:>9,}{r['outputs']:>11,}{speed:>10}"
                     f"{ratio(w, b, 'python'):>15}{ratio(w, b, 'pycer'):>14}  {check}")
    return "\n".join(lines)


def format_latency(rows: list[dict]) -> str:
    """The latency table (microseconds)."""
    head = (f"{'backend':<8}{'path':<20}{'events':>8}{'outputs':>10}{'p50 us':>10}"
            f"{'p99 us':>10}{'max us':>11}")
    return text_table(head, "{backend:<8}{path:<20}{completing_events:>8,}{outputs:>10,}"
                      "{p50_us:>10.1f}{p99_us:>10.1f}{max_us:>11.1f}", rows)


# --- the experiment --------------------------------------------------------------------------
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--events", type=int, default=20_000, metavar="N",
                   help="first N events of the real stock trace (default 20,000; it has 24,887)")
    p.add_argument("--backend", default="all", choices=["auto", "python", "cython", "all"],
                   help="backends to run (default: all available, with ratios)")
    p.add_argument("--repeat", type=int, default=3, metavar="R", help="best of R (default 3)")
    p.add_argument("--clock", default="cpu", choices=["cpu", "wall"],
                   help="this process's CPU time (default) or wall-clock time")
    p.add_argument("--no-pycer", action="store_true", help="do not run pycer even if found")
    p.add_argument("--memory", type=int, default=0, metavar="N",
                   help="also push N events (the trace cycled) per backend in a fresh process "
                        "and report RSS growth (e.g. 10000000)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="write results.json and results.csv there")


def measure(w: PushWorkload, schema: cercore.Schema, table: pa.Table, events: list[Record],
            backends: list[str], repeat: int, clock: str) -> tuple[list[dict], list | None]:
    """Check, then time, pushing ``events`` on each backend (passes interleaved). The rows,
    and the bulk outputs for pycer's check (None when no backend passed its check); a
    backend whose push outputs differ from bulk gets a row with no figure."""
    from cercore.bench import runner

    make = engine_maker(w, schema)
    rows, checked, bulk = [], {}, []
    for b in backends:
        bulk, problem = check_push(w, make, table, events, b)
        if problem:
            print(f"cercore-bench realtime: {w.name} on {b}: push and process(table) differ "
                  f"({problem}); its figure is not reported", file=sys.stderr)
            rows.append(_row(w, b, len(events), len(bulk), None, False))
        else:
            checked[b] = len(bulk)
    fresh = {b: iter([make(b) for _ in range(repeat)]) for b in checked}
    counts: dict[str, int] = {}

    def timed(b: str) -> Callable[[], None]:
        return lambda: counts.__setitem__(b, push_count(next(fresh[b]), events))

    seconds = runner.best_of_each({b: timed(b) for b in checked}, repeat, clock)
    for b in checked:
        if counts[b] != checked[b]:
            raise CercoreError(f"{w.name} on {b}: a timed pass gave {counts[b]:,} outputs, "
                               f"the checked one {checked[b]:,}")
        rows.append(_row(w, b, len(events), checked[b], seconds[b], True))
    return rows, bulk if checked else None


def latencies(w: PushWorkload, schema: cercore.Schema, events: list[Record],
              backends: list[str], expected: int) -> list[dict]:
    """The latency rows of ``w`` on each backend: push, and process(generator); each pass's
    complex events counted against ``expected`` (the checked count)."""
    make = engine_maker(w, schema)
    out = []
    for b in backends:
        for path, fn in (("push", push_latencies), ("process(generator)", generator_latencies)):
            ns, n = fn(make(b), events)
            if n != expected:
                raise CercoreError(f"{w.name} on {b}: {path} gave {n:,} complex events, "
                                   f"process(table) {expected:,}")
            out.append(latency_row(b, path, ns, n))
    return out


# ---- memory under push ------------------------------------------------------------------------
MEMORY_SAMPLES = 20


def cycled(events: list[Record], n: int, time_attribute: str = "stock_time") -> Iterator[Record]:
    """``n`` records: ``events`` again and again, each pass shifted later in time by the
    trace's span (a fresh attribute dict per record, as a feed hands them over)."""
    times = [a[time_attribute] for _, a in events]
    span = max(times) - min(times) + 1
    done = 0
    shift = 0
    while done < n:
        for typ, attrs in events[:n - done]:
            row = dict(attrs)
            row[time_attribute] += shift
            yield typ, row
        done += min(len(events), n - done)
        shift += span


def memory_child(backend: str, n: int, query: str = PARTITIONED) -> dict:
    """Push ``n`` cycled trace events through ``query`` (default: the PARTITION BY query,
    WITHIN 1000 [stock_time]) on ``backend``, sampling RSS ``MEMORY_SAMPLES`` times."""
    from cercore.bench import datasets

    schema = datasets.schema("stock_trace")
    events = records(datasets.stock_trace(None))
    engine = cercore.compile(query, schema).engine(backend)
    push = engine.push
    every = max(n // MEMORY_SAMPLES, 1)
    samples = []
    outputs = 0
    for k, (typ, attrs) in enumerate(cycled(events, n), start=1):
        outputs += len(push(typ, attrs))
        if k % every == 0:
            samples.append((k, rss_bytes() or 0))  # (0 where it cannot be read)
    return {"backend": backend, "events": n, "outputs": outputs, "samples": samples}


def memory_rows(backends: list[str], n: int, query: str = PARTITIONED) -> list[dict]:
    """RSS under push per backend, each in a fresh interpreter (what one backend allocated
    does not hide the other's growth): RSS after the first tenth of the stream (warm) and at
    its end, and the largest sample."""
    rows = []
    for b in backends:
        code = ("import json, sys; from cercore.bench.realtime import memory_child; "
                f"print(json.dumps(memory_child({b!r}, {n}, {query!r})))")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=False)
        if done.returncode != 0:
            raise CercoreError(f"the memory run on {b} failed: {done.stderr.strip()[-500:]}")
        got = json.loads(done.stdout.strip().splitlines()[-1])
        samples = got["samples"]
        warm = next(r for k, r in samples if k >= n // 10)
        rows.append({"experiment": "memory", "backend": b, "events": n, "outputs": got["outputs"],
                     "rss_warm_mib": warm / 2**20, "rss_end_mib": samples[-1][1] / 2**20,
                     "rss_max_mib": max(r for _, r in samples) / 2**20,
                     "growth": samples[-1][1] / warm - 1 if warm else 0.0})
    return rows


def format_memory(rows: list[dict]) -> str:
    head = (f"{'backend':<8}{'events':>13}{'outputs':>13}{'RSS warm MiB':>14}"
            f"{'RSS end MiB':>13}{'max MiB':>10}{'growth':>9}")
    return text_table(head, "{backend:<8}{events:>13,}{outputs:>13,}{rss_warm_mib:>14.1f}"
                      "{rss_end_mib:>13.1f}{rss_max_mib:>10.1f}{growth:>+9.1%}", rows)


def run(args: argparse.Namespace) -> int:
    """``cercore-bench realtime``: print the push and latency tables (``--out``: write
    results.json and results.csv). Exit status 1 when some push outputs differed."""
    from cercore.bench import datasets, peers
    from cercore.bench.cli import _backends, _write

    if args.events < 1 or args.repeat < 1:
        raise CercoreError("--events and --repeat must be >= 1")
    backends = _backends(args.backend)
    schema = datasets.schema("stock_trace")
    table = datasets.stock_trace(args.events)
    events = records(table)
    pycer = None if args.no_pycer else peers.find_pycer()
    rows: list[dict] = []
    for w in push_workloads():
        found, bulk = measure(w, schema, table, events, backends, args.repeat, args.clock)
        rows += found
        if pycer and w.pycer and bulk is not None:
            row = pycer_row(pycer, w, table, bulk, args.repeat, args.clock)
            if row is not None:
                rows.append(row)
    s3 = [r for r in rows if r["workload"] == "S3" and r["checked"] and r["backend"] != "pycer"]
    latency = latencies(push_workloads()[0], schema, events, [r["backend"] for r in s3],
                        s3[0]["outputs"]) if s3 else []
    print(f"cercore {cercore.__version__}: {len(events):,} events of the stock trace pushed one "
          f"at a time; best of {args.repeat} ({args.clock} clock), fresh engine per pass; "
          "outputs checked equal to bulk process(table)"
          + ("" if pycer or args.no_pycer else "; pycer not found (set CERCORE_PYCER_PYTHON to "
             "a Python 3.13 with pycer): skipped"))
    print(format_push(rows))
    print("\nLatency, S3: from push (or the generator yielding the event) to its first complex "
          "event,\nper event completing at least one (wall clock, one pass, GC on)")
    print(format_latency(latency))
    memory = []
    if args.memory:
        memory = memory_rows(backends, args.memory)
        print(f"\nMemory under push: {args.memory:,} events of the trace cycled (times shifted "
              "each pass) through PARTITION BY ... WITHIN 1000 [stock_time], RSS sampled "
              f"{MEMORY_SAMPLES} times; warm = after the first tenth")
        print(format_memory(memory))
    if args.out:
        _write(rows + latency + memory, Path(args.out), "realtime")
    return 0 if all(r["checked"] for r in rows) else 1
