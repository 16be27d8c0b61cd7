"""Drive pycer (the CORE authors' C++ engine, Python 3.13 wheels only) on one query and one CSV
event file, in its own interpreter; print one JSON line with what it found and how long it took.

    /path/to/python3.13 pycer_driver.py DECL_FILE QUERY_FILE EVENTS_CSV [--repeat R]
                                        [--clock wall|cpu] [--one-at-a-time]

It uses only the standard library and pycer (no cercore), so it runs in a bare 3.13 venv.
Building pycer's event objects is excluded from the timing (about 5.5 µs per event
on this machine); timed: ``send_events`` plus ``get_output`` on a fresh server, best of R.
``--one-at-a-time`` times what an application receiving events one by one does instead: the
events are read into dicts first (untimed); timed, per event, dict -> ``PyEvent`` ->
``send_events([event])``, then ``get_output`` once at the end.
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
    ap.add_argument("--one-at-a-time", action="store_true",
                    help="time dict -> PyEvent -> send_events([e]) per event")
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

    def make(typ):  # value constructors of a type's attributes, in declaration order
        out = []
        for attr, t in zip(names[typ], kinds[typ][1], strict=True):
            if "DOUBLE" in t:
                out.append((attr, float, pycer.PyDoubleValue))
            elif "STRING" in t:
                out.append((attr, str, pycer.PyStringValue))
            elif "BOOL" in t:
                out.append((attr, lambda v: v.strip().lower() in ("true", "1"),
                            pycer.PyBoolValue))
            else:  # INT64, PRIMARY_TIME
                out.append((attr, int, pycer.PyIntValue))
        return kinds[typ][0], out

    fields = {typ: make(typ) for typ in kinds}
    records = []  # (type, {attribute: Python value}), as an application receives events
    with open(events_path, newline="") as f:
        for row in csv.DictReader(f):
            typ = row["event_type"]
            records.append((typ, {a: parse(row[a]) for a, parse, _ in fields[typ][1]}))

    def event(typ, attrs):
        eid, attributes = fields[typ]
        return pycer.PyEvent(eid, [value(attrs[a]) for a, _, value in attributes])

    events = [] if args.one_at_a_time else [event(t, a) for t, a in records]
    del first
    gc.collect()
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    best, text = float("inf"), ""
    for _ in range(args.repeat):
        s = None
        gc.collect()
        s, _ = server()
        t0 = clock()
        if args.one_at_a_time:
            send = s.send_events
            for typ, attrs in records:
                send([event(typ, attrs)])
        else:
            s.send_events(events)
        text = s.get_output()
        best = min(best, clock() - t0)
    intervals = sorted([int(a), int(b)] for a, b in re.findall(r"^\[(-?\d+),(-?\d+)\]", text,
                                                                 flags=re.M))
    print(json.dumps({"events": len(records), "complex_events": len(intervals), "seconds": best,
                      "intervals": intervals}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
