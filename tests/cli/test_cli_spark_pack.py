"""``cercore spark-pack``: the archive that ships cercore to Spark executors holds cercore with
its compiled kernels, lark and google-re2 -- and nothing executors have with pyspark -- and is
small (docs/deploying.md; tests/spark/test_cluster.py ships it to a real cluster)."""

from __future__ import annotations

import subprocess
import sys
import tarfile

import cercore
from cercore.cli import main


def test_spark_pack_writes_a_small_archive_of_cercore_and_its_pure_dependencies(tmp_path,
                                                                               capsys):
    out = tmp_path / "cercore-spark.tar.gz"
    assert main(["spark-pack", str(out)]) == 0
    assert "--archives" in capsys.readouterr().out
    assert out.stat().st_size < 50e6
    with tarfile.open(out) as tar:
        names = tar.getnames()
        tar.extractall(tmp_path / "x", filter="data")
    tops = {n.split("/")[0] for n in names}
    assert {"cercore", "cercore_fast", "lark", "re2"} <= tops
    assert not tops & {"pyspark", "pyarrow", "numpy", "pandas", "py4j"}
    assert not any(n.endswith((".pyc", ".c", ".cpp")) for n in names)
    assert "cercore/ceql/grammar.lark" in names  # package data
    if cercore.BACKEND == "cython":
        assert any(n.startswith("cercore_fast/") and n.endswith(".so") for n in names)
    # the unpacked archive alone is a working cercore (here with this Python's other packages)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import cercore; "
            "assert cercore.__file__.startswith(sys.argv[1]), cercore.__file__; "
            "q = cercore.compile('SELECT * FROM S WHERE A; B', "
            "'CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int } }'); "
            "print(len(list(q.engine().process([('A', {'v': 1}), ('B', {'v': 2})]))), "
            "cercore.BACKEND)")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "x")],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", cercore.BACKEND]
