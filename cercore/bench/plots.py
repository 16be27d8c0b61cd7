"""Figures in the style of the CORE paper's Figures 7–9: throughput (log scale) against the
sequence length n, against the window size, and per stock query, one line per engine.
matplotlib is imported only here, when a figure is drawn (``pip install cercore[bench]``)."""

from __future__ import annotations

from pathlib import Path


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # the bench extra is optional
        raise RuntimeError("plots need matplotlib: pip install 'cercore[bench]'") from exc
    return plt


def throughput_plots(rows: list[dict], out_dir: str | Path) -> list[Path]:
    """One PNG per (dataset, family): events/second by n, window factor or query name."""
    plt = _pyplot()
    out_dir = Path(out_dir)
    written = []
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["family"]), []).append(r)
    for (dataset, family), rs in sorted(groups.items()):
        x_key = {"window": "window_factor", "operators": "workload"}.get(family, "n")
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for engine in sorted({r["backend"] for r in rs}):
            pts = [r for r in rs if r["backend"] == engine]
            xs = [r[x_key] for r in pts]
            ax.plot(range(len(xs)) if x_key == "workload" else xs,
                    [r["events_per_second"] for r in pts], marker="o", label=engine)
            if x_key == "workload":
                ax.set_xticks(range(len(xs)), xs)
        ax.set_yscale("log")
        ax.set_xlabel({"n": "sequence length n", "window_factor": "window (× T)",
                       "workload": "query"}[x_key])
        ax.set_ylabel("events / second")
        ax.set_title(f"{dataset}: {family}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path = out_dir / f"{dataset}_{family}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
