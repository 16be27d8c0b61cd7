"""COGRA trend aggregation vs the two-step approach (CORE enumerates every trend, then aggregate).

Workload: a stock-like price random walk, one ``Stock`` event per time unit, tumbling windows
of ``n`` events (``WITHIN n SLIDE n``), and the paper's q3 pattern without its adjacent
predicate (the paper's default, since A-Seq cannot run it), under two semantics:

* ``any`` -- ``RETURN COUNT(*), SUM(S.price) PATTERN Stock S+ SEMANTICS skip-till-any-match``:
  2^n - 1 trends per window. The two-step baseline runs ``SELECT * FROM Market WHERE Stock+``.
  Counts are exact: beyond n = 62 they leave int64 and the window continues on Python ints,
  whose additions cost O(n) -- the price of exact counts, measured as such.
* ``contiguous`` -- ``... SEMANTICS contiguous``: n(n+1)/2 trends per window (int64 throughout).
  The two-step baseline runs ``SELECT STRICT * FROM Market WHERE Stock+`` (on a one-type stream
  without predicates, STRICT's contiguous runs are exactly COGRA's contiguous trends).

The baseline enumerates every complex event with ``cercore.compile(...).engine(backend)`` on
each window's events and sums COUNT and SUM; it runs only where a window has at most
``--two-step-max-trends`` trends. Where both run, their results are checked equal. Metrics
(COGRA §8.1): throughput = events / second; latency = mean seconds from a window's last event
to its result; state = the most aggregators and stored events the COGRA engine held.
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
COGRA_QUERY = ("RETURN COUNT(*), SUM(S.price) PATTERN Stock S+ SEMANTICS {semantics} "
               "WITHIN {n} SLIDE {n}")
SEMANTICS = {"any": "skip-till-any-match", "contiguous": "contiguous"}
CORE_QUERY = {"any": "SELECT * FROM Market WHERE Stock+",
              "contiguous": "SELECT STRICT * FROM Market WHERE Stock+"}


def trends_per_window(semantics: str, n: int) -> int:
    return 2 ** n - 1 if semantics == "any" else n * (n + 1) // 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events-per-window", default="4,8,12,16,64,1000,10000,100000",
                        help="comma-separated window sizes n (events per window)")
    parser.add_argument("--semantics", default="any,contiguous",
                        help="comma-separated: any, contiguous (default both)")
    parser.add_argument("--windows", type=int, default=3, help="windows per point (default 3)")
    parser.add_argument("--two-step-max-trends", type=int, default=300_000,
                        help="largest number of trends per window the two-step baseline "
                             "enumerates (default 300000)")
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


def run_cogra(semantics: str, n: int, events: list,
              backend: str) -> tuple[list[dict], float, float, dict]:
    """(rows, seconds, mean latency, peak state): events fed window by window; latency runs
    from feeding a window's last event to holding its result (a watermark at its end)."""
    from cercore.trends import compile_trend

    query = COGRA_QUERY.format(semantics=SEMANTICS[semantics], n=n)
    engine = compile_trend(query, SCHEMA).engine(backend)
    rows, latencies, peak = [], [], {"aggregators": 0, "stored_events": 0}
    untimed = 0.0
    t0 = time.perf_counter()
    for k in range(0, len(events), n):
        rows += engine.process(events[k:k + n - 1])
        t_last = time.perf_counter()
        rows += engine.process(events[k + n - 1:k + n])
        t_state = time.perf_counter()
        size = engine.state_size()  # (not timed) the window's state just before it closes
        for key in peak:
            peak[key] = max(peak[key], size[key])
        t_last += time.perf_counter() - t_state
        untimed += time.perf_counter() - t_state
        rows += engine.advance(k + n)  # the window [k, k + n) is complete
        latencies.append(time.perf_counter() - t_last)
    rows += engine.flush()
    return rows, time.perf_counter() - t0 - untimed, sum(latencies) / len(latencies), peak


def _count_and_sum(ces, prices: list) -> tuple[int, int]:
    """COUNT(*) and SUM(S.price) over complex events of a fresh engine (positions from 0)."""
    count = total = 0
    for ce in ces:
        count += 1
        total += sum(prices[p] for p in ce.positions)
    return count, total


def run_two_step(semantics: str, n: int, events: list,
                 backend: str) -> tuple[list[dict], float, float]:
    """Enumerate every match with the CORE engine, window by window, then aggregate; latency
    runs from feeding a window's last event to the aggregate over every match, as for
    COGRA (the matches of earlier events are aggregated as they come)."""
    import cercore

    query = cercore.compile(CORE_QUERY[semantics], SCHEMA)
    rows, latencies = [], []
    t0 = time.perf_counter()
    for k in range(0, len(events), n):
        window = events[k:k + n]
        prices = [e[1]["price"] for e in window]
        engine = query.engine(backend)
        count, total = _count_and_sum(engine.process(window[:-1]), prices)
        t_last = time.perf_counter()
        c2, s2 = _count_and_sum(list(engine.process(window[-1:])) + engine.flush(), prices)
        rows.append({"window_start": k, "window_end": k + n, "COUNT(*)": count + c2,
                     "SUM(S.price)": total + s2})
        latencies.append(time.perf_counter() - t_last)
    return rows, time.perf_counter() - t0, sum(latencies) / len(latencies)


def run(args) -> int:
    try:
        sizes = [int(x) for x in args.events_per_window.split(",") if x.strip()]
    except ValueError:
        print(f"cercore-bench cogra: --events-per-window must be integers, not "
              f"{args.events_per_window!r}", file=sys.stderr)
        return 2
    semantics = [x.strip() for x in args.semantics.split(",") if x.strip()]
    if not semantics or any(x not in SEMANTICS for x in semantics):
        print(f"cercore-bench cogra: --semantics takes any, contiguous; not "
              f"{args.semantics!r}", file=sys.stderr)
        return 2
    if not sizes or min(sizes) < 1 or args.windows < 1:
        print("cercore-bench cogra: window sizes and --windows must be positive",
              file=sys.stderr)
        return 2
    from cercore.runtime.backend import resolve_backend

    backend = resolve_backend(args.backend)
    results = []
    for sem in semantics:
        for n in sizes:
            events = stock_events(n * args.windows, args.seed)
            cogra_rows, secs, lat, peak = run_cogra(sem, n, events, backend)
            trends = cogra_rows[0]["COUNT(*)"]
            assert trends == trends_per_window(sem, n)
            eps = len(events) / max(secs, 1e-12)
            results.append({"approach": "cogra", "semantics": sem, "backend": backend,
                            "events_per_window": n, "events": len(events), "seconds": secs,
                            "events_per_second": eps, "latency_seconds": lat,
                            "trends_per_window_bits": trends.bit_length(),
                            "peak_aggregators": peak["aggregators"],
                            "peak_stored_events": peak["stored_events"]})
            line = (f"{sem:>10} n={n:>7}  cogra {eps:>12,.0f} ev/s  latency "
                    f"{lat * 1e3:>9.3f} ms  state {peak['aggregators']} aggregator(s), "
                    f"{peak['stored_events']} stored events")
            if trends <= args.two_step_max_trends:
                two_rows, secs2, lat2 = run_two_step(sem, n, events, backend)
                same = two_rows == cogra_rows
                results.append({"approach": "two-step", "semantics": sem,
                                "backend": backend, "events_per_window": n,
                                "events": len(events), "seconds": secs2,
                                "events_per_second": len(events) / max(secs2, 1e-12),
                                "latency_seconds": lat2,
                                "trends_per_window_bits": trends.bit_length(),
                                "equal_results": same})
                line += (f" | two-step {len(events) / max(secs2, 1e-12):>10,.0f} ev/s  "
                         f"latency {lat2 * 1e3:>9.3f} ms ({lat2 / max(lat, 1e-12):,.0f}x)  "
                         f"equal={same}")
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
        panels: dict[str, dict[str, tuple[list, list]]] = {}
        for r in results:
            s = panels.setdefault(r["semantics"], {})
            xs, ys = s.setdefault(r["approach"], ([], []))
            xs.append(r["events_per_window"])
            ys.append(r[metric])
        return panels

    return [line_panels(series("events_per_second"), out / "cogra_throughput.png",
                        xlabel="events per window", log_x=True,
                        title="COGRA vs two-step (CORE enumerate + aggregate)"),
            line_panels(series("latency_seconds"), out / "cogra_latency.png",
                        xlabel="events per window", ylabel="seconds per window", log_x=True,
                        title="COGRA vs two-step (CORE enumerate + aggregate)")]
