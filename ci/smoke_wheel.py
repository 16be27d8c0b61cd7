"""Smoke test of an installed cercore wheel (ci/check_wheel.sh and cibuildwheel's test-command).

Run it with the interpreter of the environment the wheel is installed in, from outside the
checkout::

    python ci/smoke_wheel.py --backend cython     # the platform wheel: compiled kernels in use
    python ci/smoke_wheel.py --backend python     # the pure-Python wheel

It checks that ``cercore`` is imported from the installed wheel (not from a source tree), that
``cercore.BACKEND`` is the expected one (for ``cython``: that every kernel module is a compiled
extension), that the package data (grammar, bundled demo data) were installed, and that a
query compiled from CEQL finds the expected complex events on a few events, one by one and in
bulk, with every available backend. Standard library and cercore's own dependencies only.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from importlib import resources
from pathlib import Path

# Files of the package that are not Python modules: without them `cercore demo` and the CEQL
# parser fail. tests/test_build.py checks this list against the source tree.
PACKAGE_DATA: dict[str, tuple[str, ...]] = {
    "cercore": ("py.typed",),  # PEP 561: the package's type hints are for type checkers
    "cercore.ceql": ("grammar.lark",),
    "cercore.data": (
        "block_sells.ceql",
        "rising_price_run.ceql",
        "s3_sell_buy_buy.ceql",
        "stock_trace_prefix.csv",
        "stocks.decl",
        "unanswered_sells.ceql",
    ),
}

# docs/guide.md's first example: a SELL of INTC, then a BUY of RIMM, then a BUY of QQQ within 10 s.
SCHEMA = """
CREATE STREAM S {
  EVENT BUY  { id:int, name:string, volume:int, price:double, stock_time:primary_time },
  EVENT SELL { id:int, name:string, volume:int, price:double, stock_time:primary_time }
}"""
QUERY = """
SELECT * FROM S
WHERE (SELL AS T1; BUY AS T2; BUY AS T3)
FILTER T1[name = 'INTC'] AND T2[name = 'RIMM'] AND T3[name = 'QQQ']
WITHIN 10000 [stock_time]"""
EVENTS = [
    ("SELL", {"id": 1, "name": "INTC", "volume": 100, "price": 27.8, "stock_time": 0}),
    ("BUY", {"id": 2, "name": "RIMM", "volume": 30, "price": 117.5, "stock_time": 5}),
    ("BUY", {"id": 3, "name": "RIMM", "volume": 30, "price": 117.4, "stock_time": 6}),
    ("SELL", {"id": 4, "name": "MSFT", "volume": 10, "price": 25.0, "stock_time": 7}),
    ("BUY", {"id": 5, "name": "QQQ", "volume": 40, "price": 36.2, "stock_time": 9}),
    ("BUY", {"id": 6, "name": "QQQ", "volume": 40, "price": 36.1, "stock_time": 20_000}),
]
# (start, end, positions) of each complex event: both RIMM buys pair with the first QQQ buy;
# the second QQQ buy is outside the 10 s window.
EXPECTED = [(0, 4, (0, 1, 4)), (0, 4, (0, 2, 4))]


def check(condition: bool, message: str) -> None:
    """Fail the smoke test with ``message`` unless ``condition`` holds."""
    if not condition:
        raise SystemExit(f"smoke_wheel: FAILED: {message}")


def check_installed(source_tree: Path) -> None:
    """cercore and cercore_fast come from the installed wheel, not from a checkout."""
    import cercore
    import cercore_fast

    for mod in (cercore, cercore_fast):
        where = Path(mod.__file__).resolve().parent
        # compare package directories, not prefixes: a venv may live inside the checkout
        check(where != (source_tree / mod.__name__).resolve(),
              f"{mod.__name__} imported from the source tree ({where}), not the wheel")
    print(f"smoke_wheel: cercore {cercore.__version__} from {Path(cercore.__file__).parent}")


# setup.py's PURE_MODE: modules compiled from a Python file (with cercore_fast/<name>.pxd)
PURE_MODE_MODULES = ("output",)

def check_backend(expected: str) -> list[str]:
    """``cercore.BACKEND`` is ``expected``; for ``cython``, every kernel module is a compiled
    extension. Returns the backends to exercise.

    setup.py compiles each ``cercore_fast/<name>.pyx`` and the pure-Python-mode files of its
    ``PURE_MODE`` (``PURE_MODE_MODULES`` here; tests/test_build.py keeps the two equal); a
    ``.pxd`` of declarations only (``constants.pxd``) is no module."""
    import cercore

    check(cercore.BACKEND == expected,
          f"cercore.BACKEND is {cercore.BACKEND!r}, expected {expected!r}")
    if expected == "python":
        return ["python"]
    kernel_dir = resources.files("cercore_fast")
    names = sorted({Path(f.name).stem for f in kernel_dir.iterdir()
                    if f.name.endswith(".pyx")} | set(PURE_MODE_MODULES))
    check(len(names) > len(PURE_MODE_MODULES), "no .pyx shipped in cercore_fast")
    for name in names:
        mod = importlib.import_module(f"cercore_fast.{name}")
        suffix = Path(mod.__file__).suffix
        check(suffix in (".so", ".pyd"), f"cercore_fast.{name} is {mod.__file__}, not compiled")
    print(f"smoke_wheel: compiled kernels: {', '.join(names)}")
    return ["python", "cython"]


def check_package_data() -> None:
    """The grammar and the bundled demo data are installed and readable."""
    for package, names in PACKAGE_DATA.items():
        for name in names:
            entry = resources.files(package) / name
            check(entry.is_file(), f"package data {package}/{name} missing from the wheel")
            check(len(entry.read_bytes()) > 0, f"package data {package}/{name} is empty")


def check_query(backends: list[str]) -> None:
    """Compile the query; every backend finds EXPECTED, event by event and in bulk."""
    import pyarrow as pa

    import cercore

    schema = cercore.Schema.parse(SCHEMA, time_unit="ms")
    query = cercore.compile(QUERY, schema)
    table = pa.table({
        "event_type": [t for t, _ in EVENTS],
        **{col: [a[col] for _, a in EVENTS] for col in EVENTS[0][1]},
    })
    for backend in ["auto", *backends]:
        found = [(ce.start, ce.end, tuple(ce.positions))
                 for ce in query.engine(backend=backend, on_error="raise").process(EVENTS)]
        check(found == EXPECTED, f"backend {backend}: complex events {found} != {EXPECTED}")
        bulk = query.engine(backend=backend, on_error="raise").process_arrays(table)
        ends = [int(e) for e in bulk.end]
        check(ends == [e for _, e, _ in EXPECTED], f"backend {backend}: bulk ends {ends}")
    print(f"smoke_wheel: query ok on backends auto, {', '.join(backends)}")


def main(argv: list[str] | None = None) -> int:
    """Run every check; exit non-zero (SystemExit) on the first failure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("cython", "python"), required=True,
                        help="the backend the installed wheel must select")
    args = parser.parse_args(argv)
    check_installed(Path(__file__).resolve().parents[1])
    backends = check_backend(args.backend)
    check_package_data()
    check_query(backends)
    print(f"smoke_wheel: OK ({args.backend}, Python {sys.version.split()[0]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
