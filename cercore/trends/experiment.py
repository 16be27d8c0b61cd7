"""COGRA trend aggregation vs the two-step approach (CORE enumerates every trend, then aggregate).

Workload (stock-like, the paper's q3 without its adjacent predicate -- the paper's default,
since A-Seq cannot run it): ``RETURN COUNT(*), SUM(S.price) PATTERN Stock S+ SEMANTICS
skip-till-any-match WITHIN n SLIDE n`` over a price random walk with one event per time unit,
so every tumbling window holds n events and 2^n - 1 trends. The two-step baseline runs
``SELECT * FROM Market WHERE Stock+`` through ``cercore.compile(...).engine(backend)`` on each
window's events and sums COUNT and SUM over the complex events; its cost grows like 2^n, so it
runs only up to ``--two-step-max`` events per window. Where both run, their results are
checked equal. Counts are exact (2^n - 1 needs n bits; beyond int64 the Cython kernel hands
the window to the Python reference, whose big-int arithmetic is linear in n per update, so the
largest windows measure exact big-number arithmetic). Metrics (COGRA §8.1): throughput =
events / second; latency = mean seconds from a window's last event to its result.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import time
from pathlib import Path

SCHEMA = ("CREATE STREAM Market { EVENT Stock { company:int, price:int, ts:primary_time } }")
COGRA_QUERY = ("RETURN COUNT(*), SUM(S.price) PATTERN Stock S+ SEMANTICS skip-till-any-match "
               "WITHIN {n} SLIDE {n}")
CORE_QUERY = "SELECT * FROM Market WHERE Stock+"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events-per-window", default="4,8,12,14,16,18,1000,10000,100000",
                        help="comma-separated window sizes n (events per window)")
    parser.add_argument("--windows", type=int, default=3, help="windows per point (default 3)")
    parser.add_argument("--two-step-max", type=int, default=18,
                        help="largest n the two-step baseline runs (2^n matches; default 18)")
    parser.add_argument("--backend", default="auto", choices=["auto", "python", "cython"])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default="bench-results/cogra", metavar="DIR",
                        help="directory for cogra.json, cogra.csv and the PNG plots")
    parser.add_argument("--no-plot", action="store_true", help="skip the PNG plots")


def stock_events(n_events: int, seed: int) -> list[tuple[str, dict]]:
    """A price random walk, one Stock event per time unit."""
    rng = random.Random(seed)
    price, out = 100, []
    for t in range(n_events):
        price = max(1, price + rng.choice((-1, 1)))
        out.append(("Stock", {"company": 1, "price": price, "ts": t}))
    return out


def run_cogra(n: int, events: list, backend: str) -> tuple[list[dict], float, float]:
    """(rows, seconds, mean latency): events fed window by window; a window's result is
    produced when the next window's first event arrives (or at flush)."""
    from cercore.trends import compile_trend

    engine = compile_trend(COGRA_QUERY.format(n=n), SCHEMA).engine(backend)
    rows, latencies = [], []
    t0 = time.perf_counter()
    for k in range(0, len(events), n):
        rows += engine.process(events[k:k + n - 1])
        t_last = time.perf_counter()
        rows += engine.process(events[k + n - 1:k + n])
        if k + n >= len(events):
            rows += engine.flush()
        latencies.append(time.perf_counter() - t_last)
    return rows, time.perf_counter() - t0, sum(latencies) / len(latencies)


def run_two_step(n: int, events: list, backend: str) -> tuple[list[dict], float, float]:
    """Enumerate every match with the CORE engine, window by window, then aggregate."""
    import cercore

    query = cercore.compile(CORE_QUERY, SCHEMA)
    rows, latencies = [], []
    t0 = time.perf_counter()
    for k in range(0, len(events), n):
        window = events[k:k + n]
        t_start = time.perf_counter()
        prices = [e[1]["price"] for e in window]
        count = total = 0
        engine = query.engine(backend)
        for ce in list(engine.process(window)) + engine.flush():
            count += 1
            total += sum(prices[p] for p in ce.positions)  # a fresh engine: positions from 0
        rows.append({"window_start": k, "window_end": k + n, "COUNT(*)": count,
                     "SUM(S.price)": total})
        latencies.append(time.perf_counter() - t_start)
    return rows, time.perf_counter() - t0, sum(latencies) / len(latencies)


def run(args) -> int:
    try:
        sizes = [int(x) for x in args.events_per_window.split(",") if x.strip()]
    except ValueError:
        print(f"cercore-bench cogra: --events-per-window must be integers, not "
              f"{args.events_per_window!r}", file=sys.stderr)
        return 2
    if not sizes or min(sizes) < 1 or args.windows < 1:
        print("cercore-bench cogra: window sizes and --windows must be positive",
              file=sys.stderr)
        return 2
    from cercore.trends.engine import resolve_backend

    backend = resolve_backend(args.backend)
    results = []
    for n in sizes:
        events = stock_events(n * args.windows, args.seed)
        cogra_rows, secs, lat = run_cogra(n, events, backend)
        results.append({"approach": "cogra", "backend": backend, "events_per_window": n,
                        "events": len(events), "seconds": secs,
                        "events_per_second": len(events) / max(secs, 1e-12),
                        "latency_seconds": lat,
                        "trends_per_window_bits": cogra_rows[0]["COUNT(*)"].bit_length()})
        line = f"n={n:>8}  cogra  {len(events) / max(secs, 1e-12):>14,.0f} ev/s  " \
               f"latency {lat * 1e3:>10.3f} ms"
        if n <= args.two_step_max:
            two_rows, secs2, lat2 = run_two_step(n, events, backend)
            same = two_rows == cogra_rows
            results.append({"approach": "two-step", "backend": backend,
                            "events_per_window": n, "events": len(events), "seconds": secs2,
                            "events_per_second": len(events) / max(secs2, 1e-12),
                            "latency_seconds": lat2,
                            "trends_per_window_bits": two_rows[0]["COUNT(*)"].bit_length(),
                            "equal_results": same})
            line += f" | two-step {len(events) / max(secs2, 1e-12):>12,.0f} ev/s  latency " \
                    f"{lat2 * 1e3:>10.3f} ms  ({lat2 / max(lat, 1e-12):,.0f}x)  " \
                    f"equal={same}"
            if not same:
                print(line, file=sys.stderr)
                print("cercore-bench cogra: COGRA and the two-step results differ",
                      file=sys.stderr)
                return 1
        print(line, flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cogra.json").write_text(json.dumps(results, indent=2))
    with open(out / "cogra.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=sorted({k for r in results for k in r}))
        w.writeheader()
        w.writerows(results)
    written = [out / "cogra.json", out / "cogra.csv"]
    if not args.no_plot:
        written += plot(results, out)
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def plot(results: list[dict], out: Path) -> list[Path]:
    from cercore.bench.plots import line_panels

    def series(metric):
        s: dict[str, tuple[list, list]] = {}
        for r in results:
            xs, ys = s.setdefault(r["approach"], ([], []))
            xs.append(r["events_per_window"])
            ys.append(r[metric])
        return s

    return [line_panels({"throughput": series("events_per_second")}, out / "cogra_throughput.png",
                        xlabel="events per window", log_x=True,
                        title="COGRA vs two-step (CORE enumerate + aggregate)"),
            line_panels({"latency": series("latency_seconds")}, out / "cogra_latency.png",
                        xlabel="events per window", ylabel="seconds per window", log_x=True,
                        title="COGRA vs two-step (CORE enumerate + aggregate)")]
