"""The build: with CERCORE_REQUIRE_EXTENSION set (CI, wheel builds) the compiled kernels must be
importable and chosen by backend="auto"; and the code base stays ruff-clean."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cercore

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not os.environ.get("CERCORE_REQUIRE_EXTENSION"),
                    reason="only where the extension is required (CI sets it)")
def test_extension_is_built_and_used():
    import cercore_fast.evaluator
    import cercore_fast.tecs

    for mod in (cercore_fast.evaluator, cercore_fast.tecs):
        assert Path(mod.__file__).suffix in (".so", ".pyd"), mod.__file__
    assert cercore.BACKEND == "cython"


def test_ruff_clean():
    ruff = shutil.which("ruff")
    assert ruff is not None, "ruff comes with the test extra: pip install -e '.[test]'"
    done = subprocess.run([ruff, "check", "--no-cache", str(ROOT)], capture_output=True,
                          text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_pure_python_switch():
    code = "import cercore; print(cercore.BACKEND)"
    env = dict(os.environ, CERCORE_PURE_PYTHON="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "python", out.stderr


def _lint_imports(root: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    lint = shutil.which("lint-imports")
    assert lint is not None, "import-linter comes with the test extra: pip install -e '.[test]'"
    return subprocess.run([lint, "--no-cache"], capture_output=True, text=True, cwd=root,
                          env=env)


def test_layers_contract_is_kept():
    """Imports run one way: pyproject.toml's [tool.importlinter] layers hold for the tree."""
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_layers_contract_fails_when_a_lower_layer_imports_a_higher_one(tmp_path):
    """The contract can fail: a copy of the package where the bottom layer (types) imports the
    runtime is refused, and the message names that import."""
    shutil.copytree(ROOT / "cercore", tmp_path / "cercore",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    types_py = tmp_path / "cercore" / "types.py"
    types_py.write_text(types_py.read_text() + "\nfrom cercore.runtime import engine  # noqa\n")
    done = _lint_imports(tmp_path, env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    assert done.returncode != 0
    assert "cercore.types is not allowed to import cercore.runtime" in done.stdout, done.stdout
