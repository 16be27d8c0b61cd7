"""The Spark blocks of the documentation (``<!-- docs-test: spark -->``) run as written on the
shared session, in page order, in a fresh folder with ``examples/`` at hand."""

from __future__ import annotations

import contextlib
import io

import pytest
from test_docs import PAGES, _workdir, blocks

pytestmark = pytest.mark.spark


def _spark_pages():
    return [p for p in PAGES if any(b.language == "python" and b.skip is not None
                                    and b.skip.startswith("needs Spark") for b in blocks(p))]


def test_some_page_has_spark_blocks():
    assert [p.name for p in _spark_pages()] == ["spark.md"]


@pytest.mark.parametrize("page", _spark_pages(), ids=lambda p: p.name)
def test_spark_blocks_run(spark, page, tmp_path, monkeypatch):
    monkeypatch.chdir(_workdir(tmp_path))
    namespace: dict = {"__name__": "__docs__", "spark": spark}
    for b in blocks(page):
        if b.language != "python" or b.skip is None or not b.skip.startswith("needs Spark"):
            continue
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                exec(compile(b.code, f"{page.name}:{b.line}", "exec"), namespace)
            except Exception as exc:
                raise AssertionError(f"{page.name}, the Spark block at line {b.line} failed: "
                                     f"{exc!r}") from exc
    assert namespace["matches"].count() > 0
    assert namespace["rows"].count() > 0
    assert namespace["typed"].count() > 0  # the typed cer_find's example
