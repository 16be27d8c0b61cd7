"""Every code block of README.md and docs/*.md runs as written: a ```python block runs in the
namespace of the page's blocks before it, a ```sh block in bash (``set -e``), both in a fresh
folder where ``examples/`` and ``cercore/`` (the bundled data) are at hand, with this checkout's
cercore first on the path. A block that cannot run here says why in a marker comment on the
line before it -- ``<!-- docs-test: skip (installs the package) -->`` -- and the test checks
the reason is given; a block marked ``<!-- docs-test: spark -->`` runs in
tests/spark/test_spark_docs.py, with ``spark`` the shared session. Blocks of other languages
(``text``, none) are shown, not run."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN = ("python", "sh")
_FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)
_MARKER = re.compile(r"<!--\s*docs-test:\s*(\w+)\s*(?:\((.*?)\))?\s*-->\s*$")


@dataclass
class Block:
    page: Path
    line: int
    language: str
    code: str
    skip: str | None  # the reason a block is not run here


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    out = []
    for m in _FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.search(before)
        skip = None
        if marker is not None and marker.group(1) == "spark":
            skip = "needs Spark: tests/spark/test_spark_docs.py runs it"
        elif marker is not None:
            assert marker.group(1) == "skip", f"{page.name}: unknown marker {before!r}"
            skip = (marker.group(2) or "").strip()
            assert skip, f"{page.name}: a skipped block says why: {before!r}"
        out.append(Block(page, text[:m.start()].count("\n") + 1, m.group(1), m.group(2), skip))
    return out


def _workdir(tmp_path: Path) -> Path:
    for name in ("examples", "cercore"):
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    return tmp_path


def _env() -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env.pop("COLUMNS", None)
    return env


def test_pages_have_code_to_run():
    runnable = [b for p in PAGES for b in blocks(p) if b.language in RUN and b.skip is None]
    assert len(runnable) >= 8
    assert {b.page.name for b in runnable} >= {"README.md", "guide.md", "ceql.md"}


def test_readme_is_short_and_has_the_two_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    assert "pip install . && cercore demo" in text
    assert 'pip install -e ".[test,spark,connect]" && python -m pytest' in text


def _pages_with(language: str) -> list:
    """The pages that have a block of ``language`` to run (a page without one is not a case)."""
    return [p for p in PAGES if any(b.language == language and b.skip is None
                                    for b in blocks(p))]


@pytest.mark.parametrize("page", _pages_with("python"), ids=lambda p: p.name)
def test_python_blocks_run(page, tmp_path, monkeypatch):
    todo = [b for b in blocks(page) if b.language == "python" and b.skip is None]
    monkeypatch.chdir(_workdir(tmp_path))
    namespace: dict = {"__name__": "__docs__"}
    for b in todo:
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(b.code, f"{page.name}:{b.line}", "exec"), namespace)
        except Exception as exc:  # name the block, keep the traceback
            raise AssertionError(f"{page.name}, the python block at line {b.line} "
                                 f"failed: {exc!r}") from exc


@pytest.mark.parametrize("page", _pages_with("sh"), ids=lambda p: p.name)
def test_sh_blocks_run(page, tmp_path):
    todo = [b for b in blocks(page) if b.language == "sh" and b.skip is None]
    cwd = _workdir(tmp_path)
    bindir = tmp_path / "bin"  # `cercore` runs this checkout's package
    bindir.mkdir()
    (bindir / "cercore").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m cercore "$@"\n')
    (bindir / "cercore").chmod(0o755)
    env = _env()
    env["PATH"] = f"{bindir}{os.pathsep}{env['PATH']}"
    for b in todo:
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", b.code], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (f"{page.name}, the sh block at line {b.line} failed "
                                      f"({done.returncode}):\n{done.stderr[-2000:]}")


def test_the_site_lists_every_page():
    """mkdocs.yml's nav names every page of docs/ (.ci/run builds the site with --strict)."""
    text = (ROOT / "mkdocs.yml").read_text()
    nav = re.split(r"\n(?=\S)", text.split("\nnav:\n", 1)[1], maxsplit=1)[0]
    listed = set(re.findall(r"^\s+- [^:]+: (\S+\.md)$", nav, re.M))
    assert listed == {p.name for p in (ROOT / "docs").glob("*.md")}
    assert re.search(r"^strict: true$", text, re.M)


def test_the_readme_example_prints_what_the_readme_says(tmp_path, monkeypatch):
    text = (ROOT / "README.md").read_text()
    said = re.search(r"It prints `([^`]+)`", text).group(1)
    first = next(b for b in blocks(ROOT / "README.md") if b.language == "python")
    monkeypatch.chdir(_workdir(tmp_path))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(first.code, "README.md", "exec"), {"__name__": "__docs__"})
    assert out.getvalue().strip() == said
