"""The report's figures as PNG files (matplotlib, imported here only, with the non-interactive Agg backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conflictbench_app.evaluation.report import CATEGORIES, Report


def save_plots(report: Report, folder: Path) -> dict[str, Path]:
    """Write the figures that have data; returns name -> path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    for name, draw in (("success_rates", _rates), ("regret", _regret), ("failed_lengths", _lengths)):
        fig = draw(report, plt)
        if fig is None:
            continue
        path = folder / f"{name}.png"
        fig.savefig(path, dpi=100, bbox_inches="tight", metadata={"Software": None})
        plt.close(fig)
        out[name] = path
    return out


def _rates(report: Report, plt: Any) -> Any:
    if not report.runs:
        return None
    cats = [*CATEGORIES, "all"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    width = 0.8 / len(report.runs)
    for ax, metric in zip(axes, ("tsr", "asr"), strict=True):
        for i, t in enumerate(report.runs):
            values = [100 * (getattr(t, metric)[c].value or 0.0) for c in cats]
            xs = [j + (i - (len(report.runs) - 1) / 2) * width for j in range(len(cats))]
            ax.bar(xs, values, width, label=f"{t.agent} ({t.setting})")
        ax.set_xticks(range(len(cats)), cats)
        ax.set_title(metric.upper())
        ax.set_ylim(0, 100)
    axes[0].set_ylabel("%")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(
        handles, labels, fontsize=8, loc="lower center", ncol=min(4, len(labels)), bbox_to_anchor=(0.5, -0.1)
    )
    return fig


def _regret(report: Report, plt: Any) -> Any:
    rows = [r for r in report.regret if r["rate"] is not None]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.bar(
        [f"{r['agent']}\n({r['setting']})" for r in rows], [100 * r["rate"] for r in rows], color="#b5533c"
    )
    ax.set_ylabel("Regret rate (%)")
    ax.set_ylim(0, 100)
    return fig


def _lengths(report: Report, plt: Any) -> Any:
    if not any(t.failed_episodes for t in report.runs):
        return None
    fig, ax = plt.subplots(figsize=(6, 3.2))
    labels = [f"{t.agent} ({t.setting})" for t in report.runs]
    ax.bar(labels, [t.failed_length or 0.0 for t in report.runs], color="#4c72b0")
    ax.set_ylabel("Mean steps of failed episodes")
    ax.tick_params(axis="x", labelrotation=20, labelsize=7)
    return fig
