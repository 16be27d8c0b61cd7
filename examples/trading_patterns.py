"""Trading patterns over the bundled trades (examples/data/trades.csv, ISO-8601 times):

1. a sell, then within 30 seconds a buy of the same stock more than 1.00 dearer;
2. runs of three or more buys of one stock at rising prices within a minute;
3. how many such rising runs each stock has per 5-minute window (trend aggregation: counted,
   not listed).

    python examples/trading_patterns.py [--input examples/data/trades.csv]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import cercore
from cercore.io import read_events

HERE = Path(__file__).resolve().parent
DECLARATION = """
CREATE STREAM Market {
  EVENT BUY  { name:string, price:double, volume:int, ts:primary_time(s) },
  EVENT SELL { name:string, price:double, volume:int, ts:primary_time(s) } }"""
REBOUND = """
SELECT * FROM Market WHERE SELL AS s ; BUY AS b
FILTER b.price > s.price + 1
PARTITION BY [name] WITHIN 30 SECONDS"""
RISING = """
SELECT * FROM Market WHERE BUY{3,} AS b
FILTER b.price < NEXT(b).price
PARTITION BY [name] WITHIN 1 MINUTE"""
RUNS_PER_WINDOW = """
SELECT name, COUNT(*) FROM Market WHERE BUY+ AS b
FILTER b.price < NEXT(b).price
PARTITION BY [name] GROUP BY name WINDOW 5 minutes SLIDE 5 minutes"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--input", default=str(HERE / "data" / "trades.csv"))
    args = p.parse_args(argv)
    schema = cercore.Schema.parse(DECLARATION)
    table = read_events(args.input, schema)
    queries = cercore.multi_engine({"rebound": REBOUND, "rising": RISING}, schema)
    found = Counter()
    for m in queries.process(table):
        found[m.query] += 1
        if found[m.query] <= 3:
            names = {e.attributes["name"] for e in m.ce.events}
            print(f"{m.query:8} {m.ce.start_time:%H:%M:%S}-{m.ce.end_time:%H:%M:%S} "
                  f"{', '.join(sorted(names))}: {[e.attributes['price'] for e in m.ce.events]}")
    rows = cercore.compile(RUNS_PER_WINDOW, schema).run(table)
    for row in rows[:4]:
        print(row)
    print(f"{table.num_rows:,} trades: {found['rebound']:,} rebounds, "
          f"{found['rising']:,} rising runs")
    rising_names = {e.attributes["name"] for ce in cercore.compile(RISING, schema).run(table)
                    for e in ce.events}
    counted = {row["name"] for row in rows}
    if not rising_names <= counted:  # every stock with a listed run has counted runs
        print("the counts miss a stock with a rising run", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
