"""``conflictbench gui``: the desktop app (also what ``conflictbench`` with no command opens)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import click

from conflictbench_app.cli.common import db_option, source_option


@click.command()
@db_option
@source_option
@click.option(
    "--selftest",
    is_flag=True,
    help="Start offscreen, play a scripted episode with clips through every mode, check it, and exit (0 = passed).",
)
@click.option(
    "--screenshots",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="With --selftest: save a PNG screenshot of each mode in this folder.",
)
def gui(db: Path | None, source: Path | None, selftest: bool, screenshots: Path | None) -> None:
    """Open the desktop app: library, play, watch a model live, review and label, regret replay, results."""
    if screenshots is not None and not selftest:
        raise click.UsageError("--screenshots works with --selftest.")
    if importlib.util.find_spec("PySide6") is None:  # pragma: no cover - PySide6 is a dependency
        raise click.ClickException("The desktop app needs PySide6: pip install 'PySide6-Essentials==6.11.3'.")
    if selftest:
        _selftest(db, source, screenshots)
        return
    from conflictbench_app.ui.app import run_app

    raise SystemExit(run_app(db, source))


def _selftest(db: Path | None, source: Path | None, screenshots: Path | None) -> None:
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from conflictbench_app.ui.selftest import run_selftest

    report = run_selftest(db, source, screenshots)
    for check in report.checks:
        click.echo(f"ok  {check}")
    for path in report.screenshots:
        click.echo(f"saved {path}")
    click.echo(f"Self-test passed in {report.seconds:.1f} s.")
