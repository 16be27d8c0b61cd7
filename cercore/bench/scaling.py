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
  N workers (``process_arrays(table, workers=w)``), wall and CPU time, speed-up and efficiency.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import cercore
from cercore.bench import datasets, runner, workloads


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


def workers_sweep(table, max_workers: int, repeat: int = 3) -> list[dict]:
    """Each of ``WORKER_QUERIES`` (``process_arrays``) and ``TREND_WORKER_QUERIES`` (``run``)
    over ``table`` with 1..``max_workers`` workers, passes interleaved; best wall time of
    ``repeat`` and its CPU time (the process's, all threads); the outputs checked equal to
    one worker's."""
    import time

    from cercore.trends import compile_trend

    schema = datasets.schema("stock_trace")
    rows = []

    def arrays(out) -> tuple:
        return out.start.tolist(), out.positions.tolist()

    shapes = [(name, cercore.compile(text, schema), "process_arrays", arrays)
              for name, text in WORKER_QUERIES.items()]
    shapes += [(name, compile_trend(text, schema), "run", lambda out: out)
               for name, text in TREND_WORKER_QUERIES.items()]
    for name, query, method, key_of in shapes:
        getattr(query.engine(), method)(table.slice(0, 2000), workers=1)  # warm-up
        want = None
        best: dict[int, tuple[float, float]] = {}
        for _ in range(max(repeat, 1)):
            for w in range(1, max_workers + 1):
                wall0, cpu0 = time.perf_counter(), time.process_time()
                out = getattr(query.engine(), method)(table, workers=w)
                took = (time.perf_counter() - wall0, time.process_time() - cpu0)
                key = key_of(out)
                if want is None:
                    want = key
                elif key != want:
                    raise cercore.CercoreError(f"{name}: {w} workers disagree with one")
                best[w] = min(best.get(w, took), took)
        outputs = len(want) if method == "run" else len(want[0])  # (rows, complex events)
        for w, (wall, cpu) in sorted(best.items()):
            rows.append({"experiment": "workers", "query": name, "workers": w,
                         "events": table.num_rows, "complex_events": outputs,
                         "wall_seconds": wall, "cpu_seconds": cpu,
                         "speedup": best[1][0] / wall, "efficiency": best[1][0] / wall / w})
    return rows


def format_workers(rows: list[dict]) -> str:
    """The workers sweep as a table."""
    head = (f"{'query':<22}{'workers':>8}{'events':>11}{'outputs':>11}{'wall s':>9}"
            f"{'cpu s':>9}{'speed-up':>10}{'efficiency':>12}")
    line = ("{query:<22}{workers:>8}{events:>11,}{complex_events:>11,}{wall_seconds:>9.3f}"
            "{cpu_seconds:>9.3f}{speedup:>9.2f}x{efficiency:>12.0%}")
    return runner.text_table(head, line, rows)
