"""Drive pycer (the CORE authors' C++ engine, Python 3.13 wheels only) on one query and one CSV
event file, in its own interpreter; print one JSON line with what it found and how long it took.

    /path/to/python3.13 pycer_driver.py DECL_FILE QUERY_FILE EVENTS_CSV [--repeat R]
                                        [--clock wall|cpu]

It uses only the standard library and pycer (no cercore), so it runs in a bare 3.13 venv.
Building pycer's event objects is excluded from the timing (about 5.5 µs per event
on this machine); timed: ``send_events`` plus ``get_output`` on a fresh server, best of R.
The JSON line is the last line of stdout (pycer prints a logging note first).
Output: ``{"events", "complex_events", "seconds", "intervals"}`` where ``intervals`` are the
sorted [start, end] pairs pycer printed (window time domain: attribute values for
``WITHIN n [attr]``).
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import os
import re
import sys
import tempfile
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("decl")
    ap.add_argument("query")
    ap.add_argument("events")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    args = ap.parse_args()
    import pycer

    decl = open(args.decl).read()
    query = open(args.query).read()
    events_path = os.path.abspath(args.events)
    os.chdir(tempfile.mkdtemp())  # pycer writes logs/logfile.log in the working directory

    def server():
        # pycer's server binds local ports even offline: another pycer process (or this one's
        # previous server, not yet torn down) may still hold them for a moment
        for attempt in range(40):
            try:
                s = pycer.PyOfflineServer()
                break
            except RuntimeError as exc:
                if "Address already in use" not in str(exc) or attempt == 39:
                    raise
                gc.collect()
                time.sleep(0.25)
        info = s.declare_stream(decl)
        s.add_query(query)
        return s, info

    first, info = server()
    kinds = {e.name: (e.id, [str(a.value_type) for a in e.attributes_info])
             for e in info.events_info}
    names = {e.name: [a.name for a in e.attributes_info] for e in info.events_info}
    events = []
    with open(events_path, newline="") as f:
        for row in csv.DictReader(f):
            eid, types = kinds[row["event_type"]]
            values = []
            for attr, t in zip(names[row["event_type"]], types, strict=True):
                v = row[attr]
                if "DOUBLE" in t:
                    values.append(pycer.PyDoubleValue(float(v)))
                elif "STRING" in t:
                    values.append(pycer.PyStringValue(v))
                elif "BOOL" in t:
                    values.append(pycer.PyBoolValue(v.strip().lower() in ("true", "1")))
                else:  # INT64, PRIMARY_TIME
                    values.append(pycer.PyIntValue(int(v)))
            events.append(pycer.PyEvent(eid, values))
    del first
    gc.collect()
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    best, text = float("inf"), ""
    for _ in range(args.repeat):
        s = None
        gc.collect()
        s, _ = server()
        t0 = clock()
        s.send_events(events)
        text = s.get_output()
        best = min(best, clock() - t0)
    intervals = sorted([int(a), int(b)] for a, b in re.findall(r"^\[(-?\d+),(-?\d+)\]", text,
                                                                 flags=re.M))
    print(json.dumps({"events": len(events), "complex_events": len(intervals), "seconds": best,
                      "intervals": intervals}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
