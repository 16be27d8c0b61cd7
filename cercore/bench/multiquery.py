"""Many queries, one pass: K queries in one multi-query engine vs one query vs K engines.

    cercore-bench multi [--queries 1,10] [--replay 8] [--backend cython]

The queries are S'3-shaped sequences (SELL; BUY; BUY; BUY of a ticker that never trades, within
10 s: evaluated in full, no output) over different tickers of the stock trace, so they share
some predicates and not others; ``--with-output`` drops the never-trading ticker and adds the
paper's CONSUME BY ANY and LIMIT 1000 (S3-shaped, every query reports). Reported: CPU
seconds of one query alone, of K queries in one
``cercore.multi_engine`` pass, and of K separate engines, each over the same Arrow table,
with the ratio to one query, and how many events the K queries' evaluators step together
relative to the one query's (``steps x one``): the evaluation work that cannot be shared, which
bounds what one pass can save.
"""

from __future__ import annotations

import argparse

import cercore
from cercore.errors import CercoreError

TICKERS = ["INTC", "RIMM", "QQQ", "IPIX", "AMAT", "CSCO", "YHOO", "DELL", "ORCL", "MSFT"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--queries", default="1,2,5,10", metavar="K,K,..",
                   help="numbers of queries to run together (default 1,2,5,10)")
    p.add_argument("--replay", type=int, default=8, metavar="R",
                   help="replay the stock trace R times (default 8)")
    p.add_argument("--backend", default="auto", choices=["auto", "python", "cython"])
    p.add_argument("--repeat", type=int, default=3, metavar="R", help="best of R (default 3)")
    p.add_argument("--with-output", action="store_true",
                   help="S3-shaped queries that report (CONSUME BY ANY, LIMIT 1000)")


def stock_queries(k: int, output: bool = False) -> list[str]:
    """``k`` S'3-shaped queries (S3-shaped with ``output``) over rotating tickers."""
    out = []
    for i in range(k):
        a, b, c = (TICKERS[(i + j) % len(TICKERS)] for j in range(3))
        if output:
            out.append("SELECT * FROM S WHERE (SELL AS T1; BUY AS T2; BUY AS T3)\n"
                       f"FILTER T1[name = '{a}'] AND T2[name = '{b}'] AND T3[name = '{c}']\n"
                       "WITHIN 10000 [stock_time]\nCONSUME BY ANY\nLIMIT 1000")
        else:
            out.append("SELECT * FROM S WHERE (SELL AS T1; BUY AS T2; BUY AS T3; BUY AS NE)\n"
                       f"FILTER T1[name = '{a}'] AND T2[name = '{b}'] AND T3[name = '{c}'] "
                       "AND NE[name = 'NotExists']\nWITHIN 10000 [stock_time]")
    return out


def run(args) -> int:
    from cercore.bench.breakdown import replayed_trace
    from cercore.bench.datasets import schema
    from cercore.bench.runner import best_of

    try:
        ks = [int(x) for x in args.queries.split(",") if x.strip()]
    except ValueError:
        raise CercoreError(f"--queries must be integers separated by commas, "
                           f"not {args.queries!r}") from None
    if not ks or min(ks) < 1 or args.replay < 1 or args.repeat < 1:
        raise CercoreError("--queries, --replay and --repeat must be >= 1")
    table = replayed_trace(args.replay)
    sch = schema("stock_trace")
    texts = stock_queries(max(ks), args.with_output)
    compiled = [cercore.compile(t, sch) for t in texts]

    def stepped(engines) -> int:
        return sum(e.evaluator.work_counts()["events"] for e in engines)

    def one():
        return sum(1 for _ in compiled[0].engine(args.backend).process(table, workers=1))

    alone_engine = compiled[0].engine(args.backend)
    sum(1 for _ in alone_engine.process(table, workers=1))
    alone_steps = max(stepped([alone_engine]), 1)

    alone = best_of(one, args.repeat, "cpu")
    n = table.num_rows
    print(f"cercore {cercore.__version__}: {n:,} events, backend {args.backend}, CPU seconds, "
          f"best of {args.repeat}")
    print(f"{'queries':>8}{'one pass s':>12}{'x one query':>13}{'separate s':>12}"
          f"{'x one query':>13}{'steps x one':>13}{'outputs':>10}")
    for k in ks:
        count = [0, 0]

        def together(k=k, count=count):
            engine = cercore.multi_engine(compiled[:k], backend=args.backend)
            count[0] = sum(1 for _ in engine.process(table))
            count[1] = stepped(engine.engines)

        def separate(k=k):
            return sum(sum(1 for _ in q.engine(args.backend).process(table, workers=1))
                       for q in compiled[:k])

        t = best_of(together, args.repeat, "cpu")
        s = best_of(separate, args.repeat, "cpu")
        print(f"{k:>8}{t:>12.3f}{t / alone:>12.2f}x{s:>12.3f}{s / alone:>12.2f}x"
              f"{count[1] / alone_steps:>12.2f}x{count[0]:>10,}")
    return 0
