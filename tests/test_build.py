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


# --- packaging: what ci/check_wheel.sh and cibuildwheel build and test (no build here: slow) ---

def _pyproject() -> dict:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _smoke_wheel():
    """ci/smoke_wheel.py as a module (ci/ is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("smoke_wheel", ROOT / "ci" / "smoke_wheel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _in_sdist(path: str) -> bool:
    """Whether MANIFEST.in's include / recursive-include lines take ``path`` (relative, with
    /) into the sdist; package modules (.py under a package) are taken by setuptools itself."""
    from fnmatch import fnmatch

    for line in (ROOT / "MANIFEST.in").read_text().splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "include" and any(fnmatch(path, w) for w in words[1:]):
            return True
        if words[0] == "recursive-include" and path.startswith(words[1].rstrip("/") + "/"):
            if any(fnmatch(path.rsplit("/", 1)[-1], w) for w in words[2:]):
                return True
    return False


def _package_files() -> list[str]:
    """The non-Python source files of the two packages (what package data and the sdist must
    carry), without build artefacts."""
    artefacts = (".py", ".pyc", ".c", ".cpp", ".so", ".pyd", ".html")
    return sorted(str(p.relative_to(ROOT)).replace(os.sep, "/")
                  for pkg in ("cercore", "cercore_fast") for p in (ROOT / pkg).rglob("*")
                  if p.is_file() and not p.name.endswith(artefacts)
                  and "__pycache__" not in p.parts)


def test_sdist_manifest_names_what_a_build_needs():
    needed = ["README.md", "pyproject.toml", "setup.py", "ci/smoke_wheel.py",
              "ci/check_wheel.sh", *_package_files()]
    assert "cercore_fast/evaluator.pyx" in needed and "cercore/ceql/grammar.lark" in needed
    assert [p for p in needed if not _in_sdist(p)] == []
    # generated C and compiled modules never ship (setup.py regenerates them from the .pyx)
    excluded = [line.split()[1:] for line in (ROOT / "MANIFEST.in").read_text().splitlines()
                if line.startswith("global-exclude")]
    assert excluded and {"*.c", "*.cpp", "*.so", "*.pyd"} <= set(excluded[0])


def test_smoke_wheel_checks_all_package_data():
    """ci/smoke_wheel.py's PACKAGE_DATA lists every data file of cercore, and pyproject's
    package-data ships each of them in the wheel."""
    from fnmatch import fnmatch

    data = [p for p in _package_files() if p.startswith("cercore/")]
    listed = sorted(f"{pkg.replace('.', '/')}/{name}"
                    for pkg, names in _smoke_wheel().PACKAGE_DATA.items() for name in names)
    assert listed == data
    package_data = _pyproject()["tool"]["setuptools"]["package-data"]
    for path in data:
        package, name = path.rsplit("/", 1)
        patterns = package_data.get(package.replace("/", "."), [])
        assert any(fnmatch(name, pat) for pat in patterns), (path, patterns)


def test_cibuildwheel_matrix():
    """[tool.cibuildwheel] builds every CPython the classifiers name, requires the compiled
    extension, and its test-command runs the smoke test that exists."""
    config = _pyproject()
    cibw = config["tool"]["cibuildwheel"]
    assert cibw["environment"]["CERCORE_REQUIRE_EXTENSION"] == "1"
    prefix = "Programming Language :: Python :: 3."
    minors = [c[len(prefix):] for c in config["project"]["classifiers"]
              if c.startswith(prefix) and c[len(prefix):].isdigit()]
    assert minors and all(f"cp3{m}-*" in cibw["build"] for m in minors), (minors, cibw["build"])
    assert config["project"]["requires-python"] == f">=3.{min(map(int, minors))}"
    command = " && ".join(cibw["test-command"])
    assert "cercore demo" in command
    assert "{project}/ci/smoke_wheel.py --backend cython" in command
    assert (ROOT / "ci" / "smoke_wheel.py").is_file()
    assert cibw["linux"]["archs"] == ["x86_64", "aarch64"]
    assert set(cibw["macos"]["archs"]) == {"x86_64", "arm64"}
    assert cibw["windows"]["archs"] == ["AMD64"]


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


def _contract_layers() -> list[list[str]]:
    """The layers of pyproject.toml's import contract, top first, each a list of packages."""
    import re

    contract = _pyproject()["tool"]["importlinter"]["contracts"][0]
    return [re.split(r"\s*[:|]\s*", layer.strip()) for layer in contract["layers"]]


def _layer(module: str, layers: list[list[str]]) -> int | None:
    return next((i for i, names in enumerate(layers)
                 if any(module == n or module.startswith(n + ".") for n in names)), None)


def compiled_imports(sources: dict[str, str]) -> list[tuple[str, str]]:
    """(source name, imported module) of each import in Cython sources (name -> text)."""
    import re

    pattern = re.compile(r"^\s*(?:from\s+([\w.]+)\s+c?import\b|c?import\s+([\w.]+))", re.M)
    return [(name, m.group(1) or m.group(2)) for name, text in sources.items()
            for m in pattern.finditer(text)]


def compiled_layer_violations(sources: dict[str, str], layers: list[list[str]]) -> list[str]:
    """The imports of Cython sources that run up from cercore_fast's layer: what
    import-linter cannot see (it reads Python files only)."""
    here = _layer("cercore_fast", layers)
    return [f"{name}: {target}" for name, target in compiled_imports(sources)
            if (_layer(target, layers) if _layer(target, layers) is not None else here) < here]


def _compiled_sources() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((ROOT / "cercore_fast").iterdir())
            if p.suffix in (".pyx", ".pxd")}


def test_the_compiled_kernels_keep_the_layers():
    """cercore_fast imports only what lies below it in the contract (the interfaces, the
    predicate layer, ...): never the runtime or the trend engine that import it. Checked on
    the .pyx/.pxd sources, which import-linter does not read; the check can fail."""
    layers = _contract_layers()
    sources = _compiled_sources()
    assert sources and compiled_layer_violations(sources, layers) == []
    bad = {"x.pyx": "from cercore.runtime.event_predicates import AMBIGUOUS\n"
                    "    from cercore.trends import reference\n"}
    assert compiled_layer_violations(bad, layers) == [
        "x.pyx: cercore.runtime.event_predicates", "x.pyx: cercore.trends"]


def test_no_package_imports_another_that_imports_it_back():
    """No cycle between packages (each subpackage of cercore, and cercore_fast with the
    imports of its Cython sources): the layers are a one-way street, also where the contract
    groups two packages in one layer."""
    import grimp

    graph = grimp.build_graph("cercore", "cercore_fast", exclude_type_checking_imports=True)
    layers = _contract_layers()

    def package(module: str) -> str:
        parts = module.split(".")
        return "cercore_fast" if parts[0] == "cercore_fast" else ".".join(parts[:2])

    edges = {(package(m), package(d)) for m in graph.modules
             for d in graph.find_modules_directly_imported_by(m)}
    edges |= {("cercore_fast", package(target))
              for _, target in compiled_imports(_compiled_sources())
              if target.startswith(("cercore.", "cercore_fast"))}
    edges = {(a, b) for a, b in edges if a != b}
    for a, b in edges:
        assert (b, a) not in edges, f"{a} and {b} import each other"
    assert _layer("cercore.runtime", layers) < _layer("cercore_fast", layers)


def test_smoke_test_knows_the_pure_mode_modules():
    """ci/smoke_wheel.py checks that every compiled module is compiled: the ones setup.py
    builds from pure-Python-mode files (its PURE_MODE) must be the ones it names."""
    import ast

    tree = ast.parse((ROOT / "setup.py").read_text())
    pure = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                and any(getattr(t, "id", None) == "PURE_MODE" for t in node.targets))
    smoke = (ROOT / "ci" / "smoke_wheel.py").read_text()
    named = next(node.value for node in ast.parse(smoke).body if isinstance(node, ast.Assign)
                 and any(getattr(t, "id", None) == "PURE_MODE_MODULES" for t in node.targets))
    assert {k.value for k in pure.keys} == set(ast.literal_eval(named))


def test_the_package_is_typed():
    """PEP 561: ``py.typed`` ships with cercore (package data, sdist), so type checkers read
    its hints."""
    assert (ROOT / "cercore" / "py.typed").is_file()
    assert "py.typed" in _pyproject()["tool"]["setuptools"]["package-data"]["cercore"]
    assert _in_sdist("cercore/py.typed")


def test_the_pandas_pin_of_the_spark_extra_is_explained():
    """The spark extra keeps pandas below 3; the reason is where users see it (the Spark
    guide) and beside the pin."""
    text = (ROOT / "pyproject.toml").read_text()
    pin = next(line for line in text.splitlines() if line.startswith("spark = "))
    assert '"pandas<3"' in pin
    assert "# pandas<3:" in text.split(pin)[0].splitlines()[-2]
    assert "pandas below 3 because" in (ROOT / "docs" / "spark.md").read_text()


def test_cercore_runs_from_a_zip(tmp_path):
    """Package data is read with importlib.resources, not file paths: cercore zipped (as
    ``--py-files`` ships it to Spark's executors) compiles and runs a query, pure Python."""
    import zipfile

    archive = tmp_path / "cercore.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in sorted((ROOT / "cercore").rglob("*")):
            if path.is_file() and path.suffix not in (".so", ".pyd", ".c", ".pyc"):
                z.write(path, path.relative_to(ROOT).as_posix())
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import cercore; "
            "assert cercore.__file__.startswith(sys.argv[1]), cercore.__file__; "
            "decl = 'CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int } }'; "
            "q = cercore.compile('SELECT * FROM S WHERE A AS a ; B AS b FILTER a.v < b.v', decl); "
            "print([ce.positions for ce in q.run([('A', {'v': 1}), ('B', {'v': 2})])])")
    env = dict(os.environ, CERCORE_PURE_PYTHON="1")
    done = subprocess.run([sys.executable, "-c", code, str(archive)], capture_output=True,
                          text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[(0, 1)]"
