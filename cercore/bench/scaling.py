"""The constant-cost-per-event experiments (``cercore-bench scaling``), each measured in one
run on the same events:

* ``backends``: Cython vs Python throughput on the paper's sequence workloads (P_n with output,
  P'_n without), as ratios;
* ``window``: throughput of P'_3 as its window grows T, 2T, 4T, 8T, 16T;
* ``length``: throughput of P_3 and P'_3 on generated stock streams of growing length;
* ``memory``: tECS arena nodes and resident memory sampled every 10,000 events over one long
  windowed stream of P'_3 (never completes, so only the window frees memory) — flat when the
  engine reclaims what the window expires;
* ``workers`` (``--workers N``): keyed and windowed queries over one Arrow table with 1, 2, ...
  N workers (``process_arrays(table, workers=w)``), wall and CPU time, speed-up and efficiency;
* ``workers-memory`` (``--workers-memory EVENTS``): the memory experiment's stream cut into N
  T-CER slices, each worker's tECS nodes and the process's RSS sampled every 10,000 events of
  its run -- flat per worker when each run's engine frees what its window expires.
"""

from __future__ import annotations

import gc
import threading
import time
from dataclasses import asdict, dataclass

import cercore
from cercore.bench import datasets, runner, workloads
from cercore.errors import CercoreError
from cercore.runtime.processes import workers_cpu_seconds
from cercore.runtime.slices import evaluate_in_slices, workers_plan


@dataclass
class Point:
    """One throughput measurement of a scaling experiment."""

    experiment: str  # backends | window | length
    dataset: str
    workload: str
    backend: str
    x: float  # what the experiment varies: n, window factor or stream length
    events: int
    complex_events: int
    seconds: float

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else float("inf")

    def to_dict(self) -> dict:
        return asdict(self) | {"events_per_second": self.events_per_second}


def _time(experiment: str, w: workloads.Workload, table, backends: list[str], x: float,
          repeat: int, methodology: bool, clock: str) -> list[Point]:
    query = cercore.compile(w.text(methodology), datasets.schema(w.dataset))
    count = runner.check_equal(query, table, backends)
    for b in backends:
        runner.consume(query, table.slice(0, 1000), b)  # warm-up
    best = runner.best_of_each({b: lambda b=b: runner.consume(query, table, b)
                                for b in backends}, repeat, clock)
    return [Point(experiment, w.dataset, w.name, b, x, table.num_rows, count, best[b])
            for b in backends]


def backend_ratios(dataset: str, table, backends: list[str], repeat: int = 3,
                   methodology: bool = True, sizes=workloads.SIZES,
                   clock: str = "wall") -> list[Point]:
    """P_n and P'_n on every backend (n in ``sizes``)."""
    chosen = [w for w in workloads.select(dataset, families=["sequence", "no-output"])
              if w.n in sizes]
    return [p for w in chosen
            for p in _time("backends", w, table, backends, w.n, repeat, methodology, clock)]


def window_sweep(dataset: str, table, backends: list[str], repeat: int = 3,
                 methodology: bool = True, factors=(1, 2, 4, 8, 16),
                 clock: str = "wall") -> list[Point]:
    """P'_3 with the window k·T, k in ``factors``."""
    chosen = [w for w in workloads.select(dataset, families=["window"])
              if w.window_factor in factors]
    return [p for w in chosen
            for p in _time("window", w, table, backends, w.window_factor, repeat, methodology,
                           clock)]


def length_sweep(lengths: list[int], backends: list[str], repeat: int = 1, seed: int = 0,
                 methodology: bool = True, names=("P3", "P'3"),
                 clock: str = "wall") -> list[Point]:
    """P_3 and P'_3 on generated stock streams of each length (one stream, prefixes of it)."""
    full = datasets.stocks(max(lengths), seed)
    chosen = workloads.select("stocks", list(names))
    return [p for n in sorted(lengths) for w in chosen
            for p in _time("length", w, full.slice(0, n), backends, n, repeat, methodology,
                           clock)]


def memory_over_stream(events: int, backend: str, seed: int = 0, every: int = 10_000,
                       name: str = "P'3", methodology: bool = True
                       ) -> list[runner.MemorySample]:
    """Memory samples of one long windowed stock stream. P'_3 by default: it never completes,
    so nothing is ever consumed and only the window can free memory."""
    (w,) = workloads.select("stocks", [name])
    query = cercore.compile(w.text(methodology), datasets.schema("stocks"))
    return runner.memory_profile(query, datasets.stocks(events, seed), backend, every)


@dataclass(frozen=True)
class WorkerSample:
    """One memory sample of one worker of a table cut in T-CER slices."""

    worker: int  # the run's index: runs are in event order, worker 0 evaluates the first
    events: int  # events this worker has evaluated so far, its prefix included
    run_events: int  # of those, events of its own run (0 while it evaluates its prefix)
    tecs_nodes: int  # the worker's engine's tECS arena (engine.stats)
    rss_bytes: int | None  # the whole process's resident memory (every worker's, the table's)
    thread: str  # the thread that evaluated it (one per run)


def memory_per_worker(events: int, workers: int, backend: str, seed: int = 0,
                      every: int = 10_000, name: str = "P'3", query: str | None = None
                      ) -> list[list[WorkerSample]]:
    """Memory samples of each worker of one long windowed stock stream cut into ``workers``
    T-CER slices (``runtime/slices.py``, as ``process_arrays(table, workers=...)`` cuts it):
    each run's engine is fed its prefix, then its own events, ``every`` events at a time, and
    sampled after each chunk, in its own thread. One list per worker, in run order.

    The memory experiment's stream and query (``memory_over_stream``), without the paper's
    ``CONSUME BY ANY`` and ``LIMIT 1000``: T-CER slices need a query whose complex events
    depend on the window only. P'_3 never completes, so neither clause has a complex event
    to act on; one engine's tECS arena has the same ceiling either way (about 16,300 nodes
    over 3 M events), its reclamation falling at other events. ``query``: another CEQL text
    over the stocks schema. Raises ``CercoreError`` when the query over this stream is not cut
    into ``workers`` slices (the figures would be one engine's, or key shards')."""
    if every < 1:
        raise CercoreError(f"every must be >= 1, not {every}")
    if query is None:
        (w,) = workloads.select("stocks", [name])
        query = w.text(methodology=False)
    compiled = cercore.compile(query, datasets.schema("stocks"))
    table = datasets.stocks(events, seed)
    engine = compiled.engine(backend)
    slices, shards, why = workers_plan(engine, workers, table)
    if slices != workers:
        how = f"{shards} key shards instead: " if shards > 1 else ""
        raise CercoreError(f"cannot measure {workers} workers' memory: {events:,} events of "
                           f"this query are not cut into {workers} T-CER slices ({how}{why})")
    by_run: dict[int, list[tuple]] = {}  # id(run engine) -> (events, tECS nodes, RSS, thread)
    calls: dict[int, list[int]] = {}  # id(run engine) -> samples before each of its calls

    def collect(run, part, stream):
        # called for the run's prefix (not for the first run), then for its own events
        samples = by_run.setdefault(id(run), [])
        calls.setdefault(id(run), []).append(len(samples))
        done = samples[-1][0] if samples else 0
        for offset in range(0, part.num_rows, every):
            chunk = part.slice(offset, every)
            run.process_arrays(chunk, stream, workers=1)  # (complex events dropped)
            gc.collect()
            done += chunk.num_rows
            samples.append((done, run.stats["tecs_nodes"], runner.rss_bytes(),
                            threading.current_thread().name))
        return id(run)  # the run's own events' call comes last: its value is the run's

    runs = evaluate_in_slices(engine, table, None, workers, collect)
    if runs is None:
        raise CercoreError("the table was evaluated again by one worker (out of time order?)")
    out = []
    for p, key in enumerate(runs):
        samples, own = by_run[key], calls[key][-1]  # samples before the run's own events
        prefix = samples[own - 1][0] if own else 0
        out.append([WorkerSample(p, done, max(done - prefix, 0) if i >= own else 0, nodes,
                                 rss, thread)
                    for i, (done, nodes, rss, thread) in enumerate(samples)])
    return out


def worker_memory_rows(runs: list[list[WorkerSample]]) -> list[dict]:
    """Per worker: its run's events, tECS nodes at 10 %, 50 % and 100 % of its run and the
    most over it, the process's RSS at its run's start and end, and whether its nodes stay
    flat (the most over the second half of its run <= 1.5 x the most over the first half)."""
    rows = []
    for samples in runs:
        own = [s for s in samples if s.run_events > 0]
        total = own[-1].run_events

        def at(share, own=own, total=total):
            return next(s for s in own if s.run_events >= share * total)

        first = max((s.tecs_nodes for s in own if s.run_events <= total / 2), default=0)
        second = max((s.tecs_nodes for s in own if s.run_events > total / 2), default=0)
        rows.append({"experiment": "workers-memory", "worker": own[0].worker,
                     "thread": own[0].thread, "prefix_events": samples[-1].events - total,
                     "run_events": total, "samples": len(own),
                     "nodes_10": at(0.1).tecs_nodes, "nodes_50": at(0.5).tecs_nodes,
                     "nodes_100": own[-1].tecs_nodes,
                     "nodes_max": max(s.tecs_nodes for s in own),
                     "nodes_max_first_half": first, "nodes_max_second_half": second,
                     "rss_start_bytes": own[0].rss_bytes, "rss_end_bytes": own[-1].rss_bytes,
                     "flat": second <= 1.5 * first})
    return rows


def format_worker_memory(rows: list[dict]) -> str:
    """The per-worker memory rows as a table and a one-line verdict."""
    def mib(b):
        return f"{b / 2**20:.1f}" if b is not None else "-"

    shown = [r | {"rss_start": mib(r["rss_start_bytes"]), "rss_end": mib(r["rss_end_bytes"]),
                  "verdict": "flat" if r["flat"] else "GROWS"} for r in rows]
    head = (f"{'worker':>6}{'prefix':>9}{'run events':>12}{'nodes 10%':>11}{'50%':>8}"
            f"{'100%':>8}{'max':>8}{'RSS MiB start':>15}{'end':>8}  verdict")
    line = ("{worker:>6}{prefix_events:>9,}{run_events:>12,}{nodes_10:>11,}{nodes_50:>8,}"
            "{nodes_100:>8,}{nodes_max:>8,}{rss_start:>15}{rss_end:>8}  {verdict}")
    flat = all(r["flat"] for r in rows)
    verdict = (f"{'flat' if flat else 'NOT flat'}: per worker, the most tECS nodes over the "
               f"second half of its run {'<=' if flat else 'is not always <='} 1.5x the most "
               f"over the first half (" + ", ".join(
                   f"worker {r['worker']}: {r['nodes_max_second_half']:,} vs "
                   f"{r['nodes_max_first_half']:,}" for r in rows) + ")")
    return runner.text_table(head, line, shown) + "\n" + verdict


def format_points(points: list[Point], x_label: str) -> str:
    """A table: one line per (dataset, workload, x), events/s per backend, and each backend's
    speed relative to the first."""
    engines = list(dict.fromkeys(p.backend for p in points))
    rows: dict[tuple, dict[str, Point]] = {}
    for p in points:
        rows.setdefault((p.dataset, p.workload, p.x), {})[p.backend] = p
    head = f"{'dataset':<12}{'workload':<10}{x_label:>10}{'outputs':>10}" + "".join(
        f"{e + ' ev/s':>16}" for e in engines)
    head += "".join(f"{e + '/' + engines[0]:>16}" for e in engines[1:])
    lines = [head, "-" * len(head)]
    for (ds, wl, x), res in rows.items():
        first = res.get(engines[0])
        line = f"{ds:<12}{wl:<10}{x:>10,.0f}{next(iter(res.values())).complex_events:>10,}"
        line += "".join(f"{res[e].events_per_second:>16,.0f}" if e in res else f"{'-':>16}"
                        for e in engines)
        line += "".join(f"{first.seconds / res[e].seconds:>15.1f}x" if e in res and first
                        else f"{'-':>16}" for e in engines[1:])
        lines.append(line)
    return "\n".join(lines)


def format_memory(samples: list[runner.MemorySample]) -> str:
    lines = [f"{'events':>10}{'tECS nodes':>12}{'RSS MiB':>10}", "-" * 32]
    step = max(1, len(samples) // 10)  # about ten lines, the last one always
    for s in samples[step - 1::step] if samples[-1] in samples[step - 1::step] \
            else [*samples[step - 1::step], samples[-1]]:
        rss = f"{s.rss_bytes / 2**20:>10.1f}" if s.rss_bytes is not None else f"{'-':>10}"
        lines.append(f"{s.events:>10,}{s.tecs_nodes:>12,}{rss}")
    return "\n".join(lines)


WORKER_QUERIES = {  # query shapes a user writes
    "keyed": "SELECT * FROM S WHERE SELL AS s ; BUY AS b PARTITION BY [name] "
             "WITHIN 10 SECONDS",
    "keyed, higher price": "SELECT * FROM S WHERE SELL AS s ; BUY AS b FILTER "
                           "b.price > s.price PARTITION BY [name] WITHIN 10 SECONDS",
    "keyed, no output": "SELECT * FROM S WHERE SELL AS s ; BUY AS b ; BUY AS c FILTER "
                        "s[price < 0] PARTITION BY [name] WITHIN 10 SECONDS",
    # without PARTITION BY (nor an equality between events, which the analyser turns into
    # one): T-CER slices (runtime/slices.py)
    "unkeyed, dearer": "SELECT * FROM S WHERE SELL AS s ; BUY AS b FILTER "
                       "b.price > s.price AND s[price > 110] WITHIN 10 SECONDS",
    "unkeyed, no output": "SELECT * FROM S WHERE SELL AS s ; BUY AS b ; BUY AS c FILTER "
                          "s[price < 0] WITHIN 10 SECONDS",
}


TREND_WORKER_QUERIES = {  # a trend query with GROUP BY: T-CER slices when workers are asked
    "trend, GROUP BY": "SELECT name, COUNT(*), SUM(b.price) FROM S WHERE BUY+ AS b FILTER "
                       "b.price < NEXT(b).price SEMANTICS any GROUP BY name "
                       "WINDOW 10 SECONDS SLIDE 5 SECONDS",
}


# several queries in one engine (multi_engine): cut in time together
MULTI_WORKER_QUERIES = {
    "3 queries at once": [WORKER_QUERIES["keyed, higher price"],
                          WORKER_QUERIES["unkeyed, dearer"],
                          WORKER_QUERIES["keyed, no output"]],
}


def workers_sweep(table, max_workers: int, repeat: int = 3) -> list[dict]:
    """Each of ``WORKER_QUERIES`` (``process_arrays``), ``MULTI_WORKER_QUERIES``
    (``process_arrays`` of one multi-query engine) and ``TREND_WORKER_QUERIES`` (``run``)
    over ``table`` with 1..``max_workers`` workers, passes interleaved; best wall time of
    ``repeat`` and its CPU time (the process's, all threads, and its worker processes'); the
    outputs checked equal to one worker's."""

    from cercore.trends import compile_trend

    schema = datasets.schema("stock_trace")
    rows = []

    def arrays(out) -> tuple:
        return out.start.tolist(), out.positions.tolist()

    def arrays_per_query(out) -> tuple:
        return tuple(arrays(a) for a in out.values())

    shapes = [(name, cercore.compile(text, schema).engine, "process_arrays", arrays)
              for name, text in WORKER_QUERIES.items()]
    shapes += [(name, lambda texts=texts: cercore.multi_engine(texts, schema),
                "process_arrays", arrays_per_query)
               for name, texts in MULTI_WORKER_QUERIES.items()]
    shapes += [(name, compile_trend(text, schema).engine, "run", lambda out: out)
               for name, text in TREND_WORKER_QUERIES.items()]
    for name, engine, method, key_of in shapes:
        getattr(engine(), method)(table.slice(0, 2000), workers=1)  # warm-up
        want = None
        best: dict[int, tuple[float, float]] = {}
        for _ in range(max(repeat, 1)):
            for w in range(1, max_workers + 1):
                wall0, cpu0 = time.perf_counter(), _cpu_seconds()
                out = getattr(engine(), method)(table, workers=w)
                took = (time.perf_counter() - wall0, _cpu_seconds() - cpu0)
                key = key_of(out)
                if want is None:
                    want = key
                elif key != want:
                    raise cercore.CercoreError(f"{name}: {w} workers disagree with one")
                best[w] = min(best.get(w, took), took)
        # (rows, or complex events: of every query)
        outputs = len(want) if method == "run" else \
            sum(len(w[0]) for w in (want if key_of is arrays_per_query else [want]))
        for w, (wall, cpu) in sorted(best.items()):
            rows.append({"experiment": "workers", "query": name, "workers": w,
                         "events": table.num_rows, "complex_events": outputs,
                         "wall_seconds": wall, "cpu_seconds": cpu,
                         "speedup": best[1][0] / wall, "efficiency": best[1][0] / wall / w})
    return rows


def _cpu_seconds() -> float:
    """CPU time of this process (every thread) and of its worker processes
    (``runtime/processes.py``: a trend query's runs), where the system tells it."""
    return time.process_time() + (workers_cpu_seconds() or 0.0)


def format_workers(rows: list[dict]) -> str:
    """The workers sweep as a table."""
    head = (f"{'query':<22}{'workers':>8}{'events':>11}{'outputs':>11}{'wall s':>9}"
            f"{'cpu s':>9}{'speed-up':>10}{'efficiency':>12}")
    line = ("{query:<22}{workers:>8}{events:>11,}{complex_events:>11,}{wall_seconds:>9.3f}"
            "{cpu_seconds:>9.3f}{speedup:>9.2f}x{efficiency:>12.0%}")
    return runner.text_table(head, line, rows)
