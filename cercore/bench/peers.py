"""Peers that a user could pick instead of cercore, driven fairly on the same events.

pycer (the CORE authors' C++ engine) ships wheels for CPython 3.13 only: it runs in its own
interpreter through ``pycer_driver.py`` (a stdlib + pycer script). Its interpreter is found via
``CERCORE_PYCER_PYTHON`` or ``/work/peers/py313/bin/python``; ``find_pycer`` returns None when
there is none, and the CLI then says the peer was skipped.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv

DRIVER = Path(__file__).with_name("pycer_driver.py")


def find_pycer(explicit: str | None = None) -> str | None:
    for cand in (explicit, os.environ.get("CERCORE_PYCER_PYTHON"),
                 "/work/peers/py313/bin/python"):
        if cand and Path(cand).exists():
            ok = subprocess.run([cand, "-c", "import pycer"], capture_output=True)
            if ok.returncode == 0:
                return cand
    return None


def core_declaration(declaration: str) -> str:
    """``declaration`` in CORE's own syntax, which pycer parses: without the unit a cercore
    declaration may state on its time attribute (``ts:primary_time(ms)``)."""
    return re.sub(r"primary_time\s*\(\s*\w+\s*\)", "primary_time", declaration)


def run_pycer(python: str, declaration: str, query: str, table: pa.Table,
              repeat: int = 3, clock: str = "wall", one_at_a_time: bool = False) -> dict:
    """pycer's result on ``table``: {"events", "complex_events", "seconds", "intervals"}
    (intervals: sorted [start, end] in the window's time domain). ``one_at_a_time``: timed
    as events arriving one by one (dict -> ``PyEvent`` -> ``send_events([e])`` per event)."""
    with tempfile.TemporaryDirectory() as d:
        decl, q, events = Path(d, "s.decl"), Path(d, "q.ceql"), Path(d, "events.csv")
        decl.write_text(core_declaration(declaration))
        q.write_text(query)
        pacsv.write_csv(table, events)
        done = subprocess.run([python, str(DRIVER), str(decl), str(q), str(events),
                               "--repeat", str(repeat), "--clock", clock,
                               *(["--one-at-a-time"] if one_at_a_time else [])],
                              capture_output=True, text=True,
                              check=True)
    # pycer's own logging note may share a line with the JSON: take it from '{"events"'
    start = done.stdout.find('{"events"')
    if start < 0:
        raise RuntimeError(f"pycer gave no result: {done.stdout[-300:]} {done.stderr[-300:]}")
    return json.loads(done.stdout[start:].splitlines()[0])
