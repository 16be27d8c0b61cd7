"""A real Spark standalone cluster on this machine, for tests/spark/test_cluster.py: a master
and two workers (1 core, 1 GB each), each its own process started from pyspark's own
distribution (``$SPARK_HOME/bin/spark-class``; pip's pyspark has no ``sbin/start-*.sh``), with
a clean environment: the executors run ``python3`` from ``executor_python()``'s venv, which
has pyspark's Python packages (pyarrow, pandas, numpy; protobuf for streaming state) and NOT
cercore. cercore reaches them only the way docs/deploying.md says: ``cercore spark-pack`` and
``--archives``.

The venv is built once (about 20 s, from pip's cache) under ``~/.cache/cercore-cluster-venv``
(``CERCORE_CLUSTER_VENV`` overrides) and reused by later runs.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from spark_session import REPO, free_port


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _pins() -> list[str]:
    """pyspark's runtime Python packages, at the driver's versions."""
    from importlib import metadata

    return [f"{name}=={metadata.version(name)}"
            for name in ("pyarrow", "pandas", "numpy", "protobuf")]


def executor_python() -> Path:
    """A venv's ``bin`` folder with pyspark's Python dependencies and without cercore (built
    on first use, then cached); raises ``RuntimeError`` when it cannot be built."""
    pins = _pins()
    tag = f"py{sys.version_info[0]}{sys.version_info[1]}-" + "-".join(
        p.replace("==", "") for p in pins)
    root = Path(os.environ.get("CERCORE_CLUSTER_VENV",
                               Path.home() / ".cache" / "cercore-cluster-venv")) / tag
    python = root / "bin" / "python3"
    if (root / ".ready").exists() and python.exists():
        return root / "bin"
    shutil.rmtree(root, ignore_errors=True)
    root.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    for cmd in ([sys.executable, "-m", "venv", str(root)],
                [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                 *pins]):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if done.returncode:
            shutil.rmtree(root, ignore_errors=True)
            raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr[-2000:]}")
    check = subprocess.run([str(python), "-c", "import cercore"], capture_output=True,
                           cwd="/", env={"PATH": "/usr/bin:/bin"})
    assert check.returncode != 0, "the executors' venv must not have cercore"
    (root / ".ready").write_text(f"built in {time.monotonic() - t0:.1f} s\n")
    return root / "bin"


def clean_env(path_first: Path | None = None, **extra: str) -> dict[str, str]:
    """An environment with nothing of this process's Python in it: PATH (``path_first``
    first, then java's folder and the system's), HOME, JAVA_HOME when set."""
    java = shutil.which("java")
    dirs = ([str(path_first)] if path_first else []) + \
        ([str(Path(java).resolve().parent)] if java else []) + ["/usr/bin", "/bin"]
    env = {"PATH": os.pathsep.join(dict.fromkeys(dirs)), "HOME": os.environ.get("HOME", "/"),
           "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": str(spark_home()), "LANG": "C.UTF-8"}
    if os.environ.get("JAVA_HOME"):
        env["JAVA_HOME"] = os.environ["JAVA_HOME"]
    env.update(extra)
    return env


@dataclass
class Cluster:
    """A running master and workers (``url``: the master's ``spark://`` address)."""

    base: Path
    executor_bin: Path
    workers: int = 2
    url: str = ""
    web: int = 0
    procs: list[subprocess.Popen] = field(default_factory=list)

    def start(self, timeout: float = 120) -> Cluster:
        port, self.web = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{port}"
        # the workers (and so the executors) see only the venv's python3 first on PATH
        env = clean_env(self.executor_bin, SPARK_WORKER_OPTS="-XX:TieredStopAtLevel=1",
                        SPARK_DAEMON_JAVA_OPTS="-XX:TieredStopAtLevel=1")
        cls = str(spark_home() / "bin" / "spark-class")
        self._spawn("master", [cls, "org.apache.spark.deploy.master.Master", "--host",
                               "127.0.0.1", "--port", str(port), "--webui-port", str(self.web)],
                    env)
        self._wait(lambda s: True, timeout)
        for i in range(self.workers):
            work = self.base / f"worker{i}"
            work.mkdir(parents=True, exist_ok=True)
            self._spawn(f"worker{i}", [cls, "org.apache.spark.deploy.worker.Worker", "--host",
                                       "127.0.0.1", "--cores", "1", "--memory", "1g",
                                       "--work-dir", str(work), "--webui-port",
                                       str(free_port()), self.url], env)
        self._wait(lambda s: sum(w["state"] == "ALIVE" for w in s["workers"]) == self.workers,
                   timeout)
        return self

    def _spawn(self, name: str, cmd: list[str], env: dict[str, str]) -> None:
        log = open(self.base / f"{name}.log", "w")  # noqa: SIM115 (closed with the process)
        self.procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                           start_new_session=True, cwd=self.base))

    def state(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.web}/json/", timeout=5) as r:
            return json.load(r)

    def _wait(self, ready, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if ready(self.state()):
                    return
            except OSError:
                pass
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                raise RuntimeError("the cluster did not start: " + self.logs())
            time.sleep(0.5)

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}"
                         for p in sorted(self.base.glob("*.log")))

    def executors(self, app: str = "") -> list[int]:
        """The pids of the running executor JVMs (``CoarseGrainedExecutorBackend``) of this
        cluster's workers (their working folders are under ``base``), of application ``app``
        when given."""
        pids = []
        for proc in Path("/proc").iterdir():
            try:
                if not proc.name.isdigit() or b"CoarseGrainedExecutorBackend" not in (
                        proc / "cmdline").read_bytes():
                    continue
                cwd = os.readlink(proc / "cwd")
                if cwd.startswith(str(self.base)) and app in cwd:
                    pids.append(int(proc.name))
            except OSError:  # gone meanwhile, or not ours to read
                pass
        return pids

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for p in self.procs:
            try:
                p.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for pid in self.executors():  # executors outlive a worker killed with SIGKILL
            os.kill(pid, signal.SIGKILL)


def driver_env(cluster: Cluster, **extra: str) -> dict[str, str]:
    """The environment of a driver process (this Python, the checkout's cercore on its
    path): ``PYSPARK_PYTHON=python3`` is this Python on the driver (for the Python Spark
    starts there: SQL table functions' analysis, streaming) and the venv's on the executors,
    as one name means one Python per host on a real cluster."""
    return clean_env(Path(sys.executable).parent, PYTHONPATH=str(REPO), PYSPARK_PYTHON="python3",
                     CERCORE_CLUSTER=cluster.url, **extra)
