"""An asyncio service: events arrive on a queue (as from a socket or a message broker), the
engine evaluates each as it arrives, and each alert is handled before the next event is
awaited.

    python examples/asyncio_service.py [--events 2000] [--seed 0]

A producer task puts temperature readings on an ``asyncio.Queue``; the consumer feeds the
queue to ``engine.aprocess`` and collects the alerts: three rising readings of one machine
within 10 seconds. The same readings given as a list afterwards (bulk evaluation) must give
the same alerts.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys

import cercore

DECLARATION = "CREATE STREAM M { EVENT T { machine:int, celsius:double, ts:primary_time(ms) } }"
QUERY = """
SELECT * FROM M WHERE T AS a ; T AS b ; T AS c
FILTER a.celsius < b.celsius AND b.celsius < c.celsius AND c[celsius > 90]
PARTITION BY [machine] WITHIN 10 SECONDS"""
DONE = object()


async def producer(queue: asyncio.Queue, events: list) -> None:
    for event in events:
        await queue.put(event)
        await asyncio.sleep(0)  # let the consumer run, as a network read would
    await queue.put(DONE)


async def from_queue(queue: asyncio.Queue):
    while (item := await queue.get()) is not DONE:
        yield item


async def serve(events: list, query) -> list:
    queue: asyncio.Queue = asyncio.Queue(maxsize=100)
    engine = query.engine()
    task = asyncio.create_task(producer(queue, events))
    alerts = [ce async for ce in engine.aprocess(from_queue(queue))]
    await task
    return alerts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    events = [("T", {"machine": rng.randrange(5), "celsius": round(rng.uniform(60, 100), 1),
                     "ts": k * 250}) for k in range(args.events)]
    query = cercore.compile(QUERY, cercore.Schema.parse(DECLARATION))
    alerts = asyncio.run(serve(events, query))
    for ce in alerts[:3]:
        print(f"machine {ce.events[0].attributes['machine']}: "
              f"{[e.attributes['celsius'] for e in ce.events]} by {ce.end_time} ms")
    print(f"{len(events):,} readings, {len(alerts):,} alerts")
    if [ce.positions for ce in alerts] != [ce.positions for ce in query.run(events)]:
        print("the live alerts differ from bulk evaluation", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
