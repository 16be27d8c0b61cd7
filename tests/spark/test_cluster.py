"""cercore on a real Spark standalone cluster (tests/spark_cluster.py): a master and two
workers as their own processes, executors on a Python without cercore, cercore shipped only
as docs/deploying.md says (``cercore spark-pack``, then ``--archives``/``spark.archives`` with
``spark.executorEnv.PYTHONPATH``). Each driver is its own process (cluster_child.py), started
with ``spark-submit`` or ``SparkSession.builder``; its results are compared here with the
local engine's. Faults: ``kill -9`` of an executor JVM in the middle of a batch ``find`` and
of a streaming query leaves the results exactly equal.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from cluster_data import (
    QUERIES,
    SQL_QUERY,
    local_by_positions,
    local_by_seq,
    local_trend,
    make_events,
    spark_by_positions,
    spark_by_seq,
    trend_events,
    write_parquet,
)
from spark_cluster import Cluster, driver_env, executor_python, spark_home
from spark_session import free_port

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

CHILD = Path(__file__).with_name("cluster_child.py")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    pytest.importorskip("pyspark")
    bin_dir = executor_python()  # (fails without a network or pip cache: the tests must run)
    running = Cluster(tmp_path_factory.mktemp("cluster"), bin_dir)
    try:
        yield running.start()
    finally:
        running.stop()


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    """The documented artifact, built by the documented command."""
    out = tmp_path_factory.mktemp("ship") / "cercore-spark.tar.gz"
    done = subprocess.run([sys.executable, "-m", "cercore", "spark-pack", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return out


def test_the_archive_is_small(archive):
    size = archive.stat().st_size
    assert size < 50e6, f"{size / 1e6:.1f} MB"


def run(cluster, args: list[str], cwd: Path, timeout: float = 400
        ) -> subprocess.CompletedProcess:
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                          env=driver_env(cluster), cwd=cwd)
    assert done.returncode == 0 and "done" in done.stdout, \
        done.stdout + done.stderr[-6000:] + cluster.logs()
    print(done.stdout)
    return done


def rows(path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def committed_rows(path: Path) -> list[dict]:
    """The rows of a streaming Parquet sink: only the files its log (``_spark_metadata``)
    committed. A micro-batch cut short by a killed executor can leave a partial (even empty)
    part file beside them, which Spark's own readers skip for the same reason."""
    files: set[str] = set()
    for log in sorted((path / "_spark_metadata").iterdir()):
        if log.name.startswith("."):  # (checksums)
            continue
        for line in log.read_text().splitlines()[1:]:  # (after the version line)
            entry = json.loads(line)
            file = urllib.request.url2pathname(urllib.parse.urlparse(entry["path"]).path)
            (files.add if entry["action"] == "add" else files.discard)(file)
    return [row for file in sorted(files) for row in pq.read_table(file).to_pylist()]


def test_committed_rows_skip_what_the_sink_log_does_not_name(tmp_path):
    """A partial part file beside the committed ones (an executor killed mid-batch) is not
    read; a file the log deleted is not either."""
    import pyarrow as pa

    (tmp_path / "_spark_metadata").mkdir()
    for name, n in (("a.parquet", 2), ("b.parquet", 3), ("gone.parquet", 1)):
        pq.write_table(pa.table({"x": list(range(n))}), tmp_path / name)
    (tmp_path / "partial.parquet").write_bytes(b"")
    entry = '{{"path":"{}","size":1,"isDir":false,"modificationTime":1,"blockReplication":1,' \
            '"blockSize":1,"action":"{}"}}'
    url = (tmp_path / "x").as_uri()[:-1]
    (tmp_path / "_spark_metadata" / "0").write_text("v1\n" + "\n".join(
        [entry.format(url + "a.parquet", "add"), entry.format(url + "gone.parquet", "add")]))
    (tmp_path / "_spark_metadata" / "1").write_text("v1\n" + "\n".join(
        [entry.format(url + "b.parquet", "add"), entry.format(url + "gone.parquet", "delete")]))
    (tmp_path / "_spark_metadata" / ".1.crc").write_bytes(b"\0")
    assert [r["x"] for r in committed_rows(tmp_path)] == [0, 1, 0, 1, 2]


def test_batch_find_aggregate_and_sql_through_spark_submit(cluster, archive, tmp_path):
    """``spark-submit --archives cercore-spark.tar.gz#cercore_lib --conf
    spark.executorEnv.PYTHONPATH=cercore_lib``: keyed and T-CER ``find`` (also in place, with
    ``ordered=True`` over the events in order), a trend
    ``aggregate`` and ``cer_find`` in SQL equal the local engine."""
    events = make_events(3000, seed=1, keys=5)
    write_parquet(events, str(tmp_path / "events.parquet"))
    (tmp_path / "ordered").mkdir()
    for i, lo in enumerate(range(0, len(events), 800)):  # in event order, four files
        write_parquet(events[lo:lo + 800], str(tmp_path / "ordered" / f"part-{i}.parquet"),
                      shuffle_seed=None)
    trend = trend_events(300, seed=2)
    pq.write_table(trend, str(tmp_path / "trend.parquet"))
    done = run(cluster, [str(spark_home() / "bin" / "spark-submit"), "--master", cluster.url,
                         "--archives", f"{archive}#cercore_lib",
                         "--conf", "spark.executorEnv.PYTHONPATH=cercore_lib",
                         str(CHILD), "batch", str(tmp_path)], tmp_path)
    # the executors: the venv's Python, cercore from the unpacked archive, its Cython kernels
    executors = [line.split()[1:] for line in done.stdout.splitlines()
                 if line.startswith("executor ")]
    assert executors
    for python, module, backend in executors:
        assert str(cluster.executor_bin) in python
        assert "/cercore_lib/cercore/__init__.py" in module and backend == "cython"
    out = tmp_path / "out"
    for name in ("keyed", "tcer"):
        want = local_by_positions(QUERIES[name], events)
        assert sum(want.values()) >= 50
        assert spark_by_positions(rows(out / name)) == want, name
        assert spark_by_positions(rows(out / (name + "-ordered"))) == want, name
    want = local_by_positions(SQL_QUERY, events)
    assert sum(want.values()) >= 50
    assert spark_by_positions(rows(out / "sql")) == want
    import pickle

    got = pickle.loads((out / "trend.pickle").read_bytes())
    want_rows = local_trend(trend)
    assert want_rows and got == want_rows


def stream_files(base: Path, folder: str, events: list[tuple], parts: int) -> None:
    """``parts`` micro-batches of rows, shuffled within each, and a last row that pushes the
    watermark past the rest. The file source takes files in modification-time order (in
    milliseconds): one second apart, as files arriving one by one."""
    (base / folder).mkdir()
    flush = [("C", 9, 0, events[-1][3] + 100, 10_000)]
    size = len(events) // parts
    chunks = [events[i:i + size] for i in range(0, len(events), size)]
    chunks[-1] = chunks[-1] + flush
    start = time.time() - len(chunks)
    for k, chunk in enumerate(chunks):
        path = base / folder / f"b{k}.parquet"
        write_parquet(chunk, str(path), shuffle_seed=k)
        os.utime(path, (start + k, start + k))


def kill_one_executor(cluster, app: str) -> int:
    pids = cluster.executors(app)
    assert pids, "no executor to kill"
    os.kill(pids[0], signal.SIGKILL)
    return pids[0]


def active_stages(ui_port: int) -> tuple[str, list[dict]]:
    """The application's id and its active stages, from the driver's REST API."""
    base = f"http://127.0.0.1:{ui_port}/api/v1/applications"
    with urllib.request.urlopen(base, timeout=2) as r:
        app = json.load(r)[0]["id"]
    with urllib.request.urlopen(f"{base}/{app}/stages?status=active", timeout=2) as r:
        return app, json.load(r)


def executors_line(stdout: str) -> dict:
    return json.loads(next(line for line in stdout.splitlines()
                           if line.startswith("executors "))[len("executors "):])


def test_kill_9_an_executor_mid_find(cluster, archive, tmp_path):
    """SIGKILL of one executor JVM while the engines run (the 5-task engine stage has
    finished some tasks, not all): Spark reruns the lost tasks and recomputes the lost
    shuffle output (read from the dead executor's disk is off); the complex events equal
    the local engine's, none lost or repeated."""
    events = make_events(100_000, seed=4, keys=10)
    write_parquet(events, str(tmp_path / "events.parquet"))
    ui = free_port()
    child = subprocess.Popen([sys.executable, str(CHILD), "big", str(tmp_path), str(archive)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=driver_env(cluster, CERCORE_UI_PORT=str(ui)), cwd=tmp_path,
                             start_new_session=True)
    killed, seen = None, None
    try:
        deadline = time.monotonic() + 300
        while killed is None and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
            try:
                app, stages = active_stages(ui)
            except (OSError, ValueError, IndexError):
                continue
            for stage in stages:
                if stage["numTasks"] == 5 and 1 <= stage["numCompleteTasks"] < 5:
                    seen = stage
                    killed = kill_one_executor(cluster, app)
                    break
        out, err = child.communicate(timeout=400)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    assert killed is not None, "the engine stage was never seen running"
    assert child.returncode == 0 and "done" in out, out + err[-6000:]
    assert executors_line(out)["lost"] >= 1, (seen, out)
    want = local_by_positions(QUERIES["keyed"], events)
    got = spark_by_positions(rows(tmp_path / "out" / "big"))
    assert sum(want.values()) >= 1000
    assert sum(got.values()) == sum(want.values())
    assert got == want


def test_missing_cercore_then_a_stream_killed_and_restarted(cluster, archive, tmp_path):
    """Without the archive: ``find`` raises the CercoreError on the driver before any job,
    saying how to ship cercore. With it (``SparkSession.builder``): a streaming ``find`` run
    over half the files -- one executor JVM killed with SIGKILL once a micro-batch has
    committed, while a later one's tasks run: the worker starts a new executor, the lost
    tasks rerun from the state store's checkpoint -- then restarted from its checkpoint over
    the rest: the sink holds every complex event of the local engine once."""
    events = make_events(600, seed=3)
    write_parquet(events, str(tmp_path / "events.parquet"))
    stream_files(tmp_path, "all", events, 6)
    ui = free_port()
    child = subprocess.Popen([sys.executable, str(CHILD), "missing_then_stream",
                              str(tmp_path), str(archive)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             env=driver_env(cluster, CERCORE_UI_PORT=str(ui)), cwd=tmp_path,
                             start_new_session=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(child.stdout), daemon=True)
    reader.start()
    killed, during = None, None
    try:
        deadline = time.monotonic() + 400
        while killed is None and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
            if not any(line.startswith("batch ") for line in lines):
                continue  # a micro-batch has committed: state is in the checkpoint
            try:
                app, stages = active_stages(ui)
            except (OSError, ValueError, IndexError):
                continue
            running = [st for st in stages if st["numActiveTasks"] > 0]
            if running:  # in the middle of a micro-batch's tasks
                during = running[0]["name"]
                killed = kill_one_executor(cluster, app)
        child.wait(timeout=400)
        reader.join(timeout=10)
        err = child.stderr.read()
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    out = "".join(lines)
    print(out)
    assert killed is not None and child.returncode == 0 and "done" in out, out + err[-6000:]
    error = next(line for line in lines if line.startswith(("error", "no error")))
    assert "cercore cannot be imported on the Spark executors" in error
    assert "No module named 'cercore'" in error and "cercore spark-pack" in error
    assert out.count("run ended") == 2
    assert executors_line(out)["lost"] >= 1, (during, out)
    flush = [("C", 9, 0, events[-1][3] + 100, 10_000)]
    want = local_by_seq(QUERIES["keyed"], events + flush)
    got = spark_by_seq(committed_rows(tmp_path / "out"))
    assert sum(want.values()) >= 50
    assert got == want
    assert max(got.values()) == 1


def test_spark_connect_with_add_artifacts(cluster, archive, tmp_path):
    """A Spark Connect server on the cluster, started with ``--conf
    spark.executorEnv.PYTHONPATH=cercore_lib``; a client session without the artifact gets
    the CercoreError, then ``spark.addArtifacts("cercore-spark.tar.gz#cercore_lib",
    archive=True)`` (unpacked in the session's folder, the Python workers' working folder):
    a keyed ``find`` and ``cer_find`` equal the local engine. (Last: the server holds the
    cluster's cores while it runs.)"""
    pytest.importorskip("grpc")
    events = make_events(2000, seed=6, keys=5)
    write_parquet(events, str(tmp_path / "events.parquet"))
    port = free_port()
    server = subprocess.Popen(
        [str(spark_home() / "bin" / "spark-submit"), "--class",
         "org.apache.spark.sql.connect.service.SparkConnectServer", "--master", cluster.url,
         "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
         "--conf", f"spark.connect.grpc.binding.port={port}",
         "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
         "--conf", "spark.executorEnv.PYTHONPATH=cercore_lib",
         "--conf", "spark.default.parallelism=2", "spark-internal"],
        env=driver_env(cluster), stdout=open(tmp_path / "server.log", "w"),  # noqa: SIM115
        stderr=subprocess.STDOUT, start_new_session=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, \
                    (tmp_path / "server.log").read_text()[-4000:]
                time.sleep(0.5)
        done = run(cluster, [sys.executable, str(CHILD), "connect", str(tmp_path), str(archive),
                             f"sc://127.0.0.1:{port}"], tmp_path)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    error = next(line for line in done.stdout.splitlines()
                 if line.startswith(("error", "no error")))
    assert "cercore cannot be imported on the Spark executors" in error
    for name, query in (("keyed", QUERIES["keyed"]), ("sql", SQL_QUERY)):
        want = local_by_positions(query, events)
        assert sum(want.values()) >= 50
        assert spark_by_positions(rows(tmp_path / "out" / name)) == want, name
