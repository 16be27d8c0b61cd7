"""Sensor monitoring with deadlines: a reading above 80 °C with no reading at or below 60 °C
of the same sensor within 30 seconds.

    python examples/sensor_monitoring.py [--sensors 20] [--minutes 60] [--seed 0]

The generator writes a CSV of readings with ISO-8601 timestamps (as a real plant log has
them); cercore reads the file, runs the query and reports each alert once 30 seconds have
passed. A plain Python check over the same readings confirms every alert.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import random
import sys
import tempfile
from pathlib import Path

import cercore
from cercore.io import read_events

DECLARATION = """
CREATE STREAM Plant { EVENT READING { sensor:string, celsius:double, ts:primary_time(s) } }"""
QUERY = """
SELECT * FROM Plant
WHERE READING AS hot ; ABSENT(READING AS cool) WITHIN 30 SECONDS
FILTER hot[celsius > 80] AND cool[celsius <= 60]
PARTITION BY [sensor]"""
START = dt.datetime(2024, 5, 1, 12, 0, 0)


def generate(path: Path, sensors: int, minutes: int, seed: int) -> list[dict]:
    """Readings every few seconds per sensor, as a random walk that sometimes overheats."""
    rng = random.Random(seed)
    temperature = {f"s{k:02d}": 60.0 for k in range(sensors)}
    rows = []
    for second in range(minutes * 60):
        for name in temperature:
            if rng.random() < 0.2:
                temperature[name] = max(20.0, min(100.0, temperature[name] + rng.gauss(0, 6)))
                rows.append({"event_type": "READING", "sensor": name,
                             "celsius": round(temperature[name], 1),
                             "ts": (START + dt.timedelta(seconds=second)).isoformat()})
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, ["event_type", "sensor", "celsius", "ts"])
        writer.writeheader()
        writer.writerows(rows)
    return rows


def expected(rows: list[dict]) -> set[int]:
    """Positions of hot readings with no cool reading of their sensor within 30 s, among those
    whose 30 s have passed before the last reading (the plain check)."""
    times = [dt.datetime.fromisoformat(r["ts"]) for r in rows]
    last = times[-1]
    out = set()
    for i, r in enumerate(rows):
        if r["celsius"] <= 80 or times[i] + dt.timedelta(seconds=30) >= last:
            continue
        cooled = any(rows[j]["sensor"] == r["sensor"] and rows[j]["celsius"] <= 60
                     and times[j] <= times[i] + dt.timedelta(seconds=30)
                     for j in range(i + 1, len(rows)))
        if not cooled:
            out.add(i)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sensors", type=int, default=20)
    p.add_argument("--minutes", type=int, default=60)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "readings.csv"
        rows = generate(path, args.sensors, args.minutes, args.seed)
        schema = cercore.Schema.parse(DECLARATION)
        table = read_events(path, schema)
    engine = cercore.compile(QUERY, schema).engine()
    alerts = list(engine.process(table))
    for ce in alerts[:5]:
        hot = ce.events[0]
        print(f"{ce.start_time:%H:%M:%S}  {hot.attributes['sensor']} at "
              f"{hot.attributes['celsius']} °C, no cool-down within 30 s")
    print(f"{len(rows):,} readings, {len(alerts):,} alerts")
    if {ce.start for ce in alerts} != expected(rows):
        print("mismatch with the plain check", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
