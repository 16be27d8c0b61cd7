"""The runnable scenarios of examples/ run as a user runs them, each checking its own results
(against a plain Python check, or bulk against live evaluation) and failing otherwise. The Spark
pipeline runs in tests/spark."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = {
    "sensor_monitoring.py": (["--sensors", "4", "--minutes", "5"], "alerts"),
    "login_fraud.py": (["--events", "1500"], "suspicious successes"),
    "trading_patterns.py": ([], "rising runs"),
    "asyncio_service.py": (["--events", "400"], "alerts"),
}


def test_every_example_is_run_here_or_in_the_spark_suite():
    assert {p.name for p in (ROOT / "examples").glob("*.py")} == \
        set(SCENARIOS) | {"spark_pipeline.py"}


@pytest.mark.parametrize("script", sorted(SCENARIOS))
def test_example_runs_and_checks_itself(script, tmp_path):
    args, summary = SCENARIOS[script]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert summary in last, done.stdout
    count = int(last.split(",")[-1].split()[0].replace(",", ""))
    assert count > 0, last  # the generated data has something to find
