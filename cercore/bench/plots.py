"""Figures in the style of the CORE paper's Figures 7–9, drawn from ``cercore-bench`` result
rows (the dicts written to results.json): one panel per dataset, throughput on a log scale,
one line (or bar) per engine. matplotlib is imported only when a figure is drawn
(``pip install 'cercore[bench]'``); without it the functions raise RuntimeError.

Reusable by plug-ins: ``line_panels(groups, path, ...)`` draws one log-scale panel per group
with one line per series; ``pyplot()`` gives matplotlib's pyplot on the Agg backend.
"""

from __future__ import annotations

from pathlib import Path

COLOURS = {"cython": "tab:red", "python": "tab:blue", "pycer": "tab:green"}


def pyplot():
    """matplotlib.pyplot on the non-interactive Agg backend (RuntimeError when missing)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # the bench extra is optional
        raise RuntimeError("figures need matplotlib: pip install 'cercore[bench]'") from exc
    return plt


def _colour(engine: str) -> str | None:
    return COLOURS.get(engine)


def line_panels(groups: dict[str, dict[str, tuple[list, list]]], path: str | Path, *,
                xlabel: str, ylabel: str = "events / second", title: str = "",
                log_x: bool = False, log_y: bool = True,
                styles: dict[str, dict] | None = None) -> Path:
    """One panel per group (e.g. a dataset), each with one line per series:
    ``groups[panel][series] = (xs, ys)``. ``styles[series]`` adds matplotlib line options."""
    plt = pyplot()
    panels = list(groups)
    fig, axes = plt.subplots(1, max(len(panels), 1), figsize=(4.2 * max(len(panels), 1), 3.4),
                             squeeze=False)
    for ax, panel in zip(axes[0], panels):
        for series, (xs, ys) in groups[panel].items():
            style = {"marker": "o", "color": _colour(series.split(" ")[0])}
            style.update((styles or {}).get(series, {}))
            ax.plot(xs, ys, label=series, **style)
        if log_y:
            ax.set_yscale("log")
        if log_x:
            ax.set_xscale("log", base=2)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(panel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    return _save(plt, fig, Path(path), title)


def _save(plt, fig, path: Path, title: str | None = None) -> Path:
    """Lay ``fig`` out under its ``title``, write it to ``path`` and close it."""
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _by(rows: list[dict], key: str) -> dict:
    out: dict = {}
    for r in rows:
        out.setdefault(r[key], []).append(r)
    return out


def suite_figures(rows: list[dict], out_dir: str | Path) -> list[Path]:
    """``cercore-bench suite`` rows -> fig7_sequence.png (throughput and tECS nodes vs n; P_n
    solid, P'_n dashed), fig8_window.png (throughput vs window), fig9_operators.png
    (throughput per query), each drawn when its workloads were run."""
    out_dir = Path(out_dir)
    written = []
    seq = [r for r in rows if r["family"] in ("sequence", "no-output")]
    if seq:
        written.append(_figure7(seq, out_dir / "fig7_sequence.png"))
    win = [r for r in rows if r["family"] == "window"]
    if win:
        groups = {ds: {e: ([r["window_factor"] for r in rs], [r["events_per_second"]
                                                             for r in rs])
                       for e, rs in _by(drs, "backend").items()}
                  for ds, drs in _by(win, "dataset").items()}
        written.append(line_panels(groups, out_dir / "fig8_window.png",
                                   xlabel="window (× T)", title="P'3, growing window"))
    ops = [r for r in rows if r["family"] == "operators"]
    if ops:
        written.append(_figure9(ops, out_dir / "fig9_operators.png"))
    return written


def _figure7(rows: list[dict], path: Path) -> Path:
    plt = pyplot()
    by_ds = _by(rows, "dataset")
    fig, axes = plt.subplots(2, len(by_ds), figsize=(4.2 * len(by_ds), 6.2), squeeze=False)
    for col, (ds, drs) in enumerate(by_ds.items()):
        top, bottom = axes[0][col], axes[1][col]
        for engine, ers in _by(drs, "backend").items():
            for family, dashes in (("sequence", "-"), ("no-output", "--")):
                pts = sorted((r["n"], r) for r in ers if r["family"] == family)
                if not pts:
                    continue
                label = engine + (" Pn" if family == "sequence" else " P'n")
                xs = [n for n, _ in pts]
                top.plot(xs, [r["events_per_second"] for _, r in pts], dashes, marker="o",
                         color=_colour(engine), label=label,
                         alpha=1.0 if family == "sequence" else 0.6)
                if "peak_tecs_nodes" in pts[0][1]:
                    bottom.plot(xs, [r["peak_tecs_nodes"] for _, r in pts], dashes, marker="o",
                                color=_colour(engine), label=label,
                                alpha=1.0 if family == "sequence" else 0.6)
        ns = sorted({r["n"] for r in drs})
        for ax in (top, bottom):
            ax.set_xticks(ns, [str(n) for n in ns])
        top.set_title(ds)
        top.set_ylabel("events / second")
        bottom.set_ylabel("peak tECS arena nodes")
        for ax in (top, bottom):
            ax.set_yscale("log")
            ax.set_xlabel("sequence length n")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
    return _save(plt, fig, path,
                 "Sequence queries: with output (P_n, solid) and without (P'_n, dashed)")


def _figure9(rows: list[dict], path: Path) -> Path:
    plt = pyplot()
    by_ds = _by(rows, "dataset")
    fig, axes = plt.subplots(1, len(by_ds), figsize=(5.0 * len(by_ds), 3.6), squeeze=False)
    for ax, (ds, drs) in zip(axes[0], by_ds.items()):
        queries = list(dict.fromkeys(r["workload"] for r in drs))
        engines = list(dict.fromkeys(r["backend"] for r in drs))
        width = 0.8 / len(engines)
        for i, engine in enumerate(engines):
            rate = {r["workload"]: r["events_per_second"] for r in drs if r["backend"] == engine}
            xs = [q + (i - (len(engines) - 1) / 2) * width for q in range(len(queries))]
            ax.bar(xs, [rate.get(q, 0) for q in queries], width, label=engine,
                   color=_colour(engine))
        ax.set_xticks(range(len(queries)), queries)
        ax.set_yscale("log")
        ax.set_ylabel("events / second")
        ax.set_title(ds)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=8)
    return _save(plt, fig, path, "Queries with other operators (Q1-Q7)")


def _series(row: dict, experiment: str) -> str:
    """The line a scaling row belongs to: backend, and the workload where several share a
    panel (P_n / P'_n for the backends experiment, P3 / P'3 for stream lengths)."""
    if experiment == "backends":
        return row["backend"] + (" P'n" if "'" in row["workload"] else " Pn")
    if experiment == "length":
        return f"{row['backend']} {row['workload']}"
    return row["backend"]


def scaling_figures(rows: list[dict], out_dir: str | Path) -> list[Path]:
    """``cercore-bench scaling`` rows -> scaling_backends.png, scaling_window.png,
    scaling_length.png and memory_stream.png (those whose experiment ran)."""
    out_dir = Path(out_dir)
    written = []
    for experiment, xlabel, log_x in (("backends", "sequence length n", False),
                                      ("window", "window (× T)", True),
                                      ("length", "stream length (events)", True)):
        pts = [r for r in rows if r.get("experiment") == experiment]
        if not pts:
            continue
        groups: dict[str, dict[str, tuple[list, list]]] = {}
        for r in sorted(pts, key=lambda r: r["x"]):
            series = groups.setdefault(r["dataset"], {}).setdefault(_series(r, experiment),
                                                                    ([], []))
            series[0].append(r["x"])
            series[1].append(r["events_per_second"])
        written.append(line_panels(groups, out_dir / f"scaling_{experiment}.png",
                                   xlabel=xlabel, log_x=log_x))
    mem = [r for r in rows if r.get("experiment") == "memory"]
    if mem:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(5.5, 3.4))
        xs = [r["events"] for r in mem]
        ax.plot(xs, [r["tecs_nodes"] for r in mem], color="tab:red", label="tECS arena nodes")
        ax.set_xlabel("events processed")
        ax.set_ylabel("tECS arena nodes")
        ax.set_ylim(bottom=0)
        if all(r["rss_bytes"] is not None for r in mem):
            ax2 = ax.twinx()
            ax2.plot(xs, [r["rss_bytes"] / 2**20 for r in mem], color="tab:gray",
                     label="process RSS (MiB)")
            ax2.set_ylabel("RSS (MiB)")
            ax2.set_ylim(bottom=0)
            ax2.legend(loc="lower right", fontsize=8)
        ax.legend(loc="upper left", fontsize=8)
        ax.set_title(f"Memory over a long windowed stream ({mem[0]['backend']})")
        written.append(_save(plt, fig, out_dir / "memory_stream.png"))
    return written
