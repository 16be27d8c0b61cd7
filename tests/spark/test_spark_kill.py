"""A streaming ``find`` killed with SIGKILL (driver, JVM and Python workers at once) in the
middle of its micro-batches, then restarted from its checkpoint: the Parquet sink holds every
complex event of the batch ``find`` exactly once — nothing lost, nothing twice. The sink's
commit log makes a micro-batch that was written but not committed invisible, and the restart
runs it again from the state of the last committed batch.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from spark_helpers import write_file
from test_spark_streaming import DDL, QUERIES, by_events, make_events

from cercore.spark import find

pytestmark = pytest.mark.spark

CHILD = Path(__file__).with_name("stream_child.py")


def start_child(base: str, query: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(CHILD), base, query], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, start_new_session=True)


def test_kill_9_mid_stream_loses_and_duplicates_nothing(spark, tmp_path):
    """The keyed plan (the single plan is the same operator with one constant key; each
    crash-and-restart costs two JVM starts, so one plan here)."""
    query = QUERIES["keyed"]
    events = make_events(160, seed=11)
    base = str(tmp_path)
    os.makedirs(os.path.join(base, "in"))
    flush = [("C", 9, 0, events[-1][3] + 100, 10_000)]  # pushes the watermark past the rest
    chunks = [events[i:i + 20] for i in range(0, 160, 20)]
    chunks[-1] = chunks[-1] + flush
    for k, rows in enumerate(chunks):
        random.Random(k).shuffle(rows)
        write_file(spark, os.path.join(base, "in"), f"b{k}", rows, DDL)

    child = start_child(base, query)
    committed = 0
    deadline = time.monotonic() + 300
    for line in child.stdout:  # kill it once two micro-batches have committed
        if line.startswith("batch "):
            committed = int(line.split()[1]) + 1
        if committed >= 2 or line.startswith("done") or time.monotonic() > deadline:
            break
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    assert 2 <= committed < len(chunks), "killed too late to test a restart"

    restarted = start_child(base, query)
    out, _ = restarted.communicate(timeout=600)
    assert restarted.returncode == 0 and "done" in out

    rows = spark.read.parquet(os.path.join(base, "out")).collect()
    want = by_events(find(spark.createDataFrame(events + flush, DDL), query, time="ts",
                          sequence="seq").collect())
    got = by_events(rows)
    assert sum(want.values()) >= 20
    assert got == want
    assert max(got.values()) == 1
