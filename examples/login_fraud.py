"""Login fraud: three failed logins of one user within two minutes, then a success.

    python examples/login_fraud.py [--users 50] [--events 20000] [--seed 0]

The generator writes a JSON Lines authentication log (ISO-8601 timestamps with a time zone);
cercore reads it and reports, for each suspicious success, the last three failures before
it (``SELECT LAST``). A plain Python check over the same log confirms the successes found.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
import tempfile
from pathlib import Path

import cercore
from cercore.io import read_events

DECLARATION = """
CREATE STREAM Auth {
  EVENT FAIL    { user:string, ip:string, ts:primary_time(s) },
  EVENT SUCCESS { user:string, ip:string, ts:primary_time(s) } }"""
QUERY = """
SELECT LAST * FROM Auth
WHERE FAIL{3} ; SUCCESS
PARTITION BY [user] WITHIN 2 MINUTES"""
START = dt.datetime(2024, 5, 1, 8, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))


def generate(path: Path, users: int, events: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows, t = [], 0
    for _ in range(events):
        t += rng.randint(0, 3)
        kind = "FAIL" if rng.random() < 0.35 else "SUCCESS"
        rows.append({"event_type": kind, "user": f"u{rng.randrange(users)}",
                     "ip": f"10.0.{rng.randrange(4)}.{rng.randrange(256)}",
                     "ts": (START + dt.timedelta(seconds=t)).isoformat()})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def expected(rows: list[dict]) -> set[int]:
    """Successes with three failures of their user in the two minutes before them."""
    times = [dt.datetime.fromisoformat(r["ts"]) for r in rows]
    out = set()
    for i, r in enumerate(rows):
        if r["event_type"] != "SUCCESS":
            continue
        fails = [j for j in range(i) if rows[j]["event_type"] == "FAIL"
                 and rows[j]["user"] == r["user"]
                 and times[i] - times[j] <= dt.timedelta(minutes=2)]
        if len(fails) >= 3:
            out.add(i)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--users", type=int, default=50)
    p.add_argument("--events", type=int, default=20000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    schema = cercore.Schema.parse(DECLARATION)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "auth.jsonl"
        rows = generate(path, args.users, args.events, args.seed)
        table = read_events(path, schema)
    found = cercore.compile(QUERY, schema).run(table)
    for ce in found[:5]:
        success = ce.events[-1]
        print(f"{ce.end_time.isoformat()}  {success.attributes['user']} logged in after "
              f"failures at positions {ce.positions[:-1]}")
    print(f"{len(rows):,} logins, {len(found):,} suspicious successes")
    if {ce.end for ce in found} != expected(rows):
        print("mismatch with the plain check", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
