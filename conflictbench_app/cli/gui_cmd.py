"""``conflictbench gui``: the desktop app (also what ``conflictbench`` with no command opens)."""

from __future__ import annotations

import importlib.util
import os
import sys
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
    problem = missing_display() or missing_qt_libraries_problem()
    if problem:
        raise click.ClickException(problem)
    from conflictbench_app.ui.app import run_app

    raise SystemExit(run_app(db, source))


def missing_display() -> str | None:
    """Why a window cannot be shown here (Linux with no X11/Wayland display and no Qt platform chosen), or None."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return None
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    return (
        "No display found (DISPLAY and WAYLAND_DISPLAY are unset), so the desktop app has nowhere to open its window. "
        "On a machine without a screen use the command line instead: `conflictbench play ID` to play in the terminal, "
        "`conflictbench run --agent ...` for batch runs, `conflictbench gui --selftest` to check the app offscreen. "
        "To start the app anyway without showing it, set QT_QPA_PLATFORM=offscreen."
    )


# The system libraries Qt's xcb platform plugin loads (soname -> Debian/Ubuntu package). Without any one of them
# Qt aborts the process at start, and its message names another library (TOOLCHAIN §3), so they are checked first.
QT_XCB_LIBRARIES = {
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libEGL.so.1": "libegl1",
    "libfontconfig.so.1": "libfontconfig1",
}


def missing_qt_packages() -> list[str]:
    """The Debian packages of the xcb plugin's libraries that cannot be loaded here (empty off Linux)."""
    import ctypes

    if not sys.platform.startswith("linux"):
        return []
    missing = []
    for soname, package in QT_XCB_LIBRARIES.items():
        try:
            ctypes.CDLL(soname)
        except OSError:
            missing.append(package)
    return missing


def qt_install_line(packages: list[str]) -> str:
    return "sudo apt-get install " + " ".join(packages)


def missing_qt_libraries_problem() -> str | None:
    """Why Qt's window system plugin would fail to load here (X11 only), with the exact command that fixes it."""
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if platform not in ("", "xcb") or not os.environ.get("DISPLAY"):
        return None
    if not platform and os.environ.get("WAYLAND_DISPLAY"):
        return None  # Qt picks Wayland there
    missing = missing_qt_packages()
    if not missing:
        return None
    return (
        f"The desktop app cannot open its window: Qt's X11 plugin needs system libraries that are not installed "
        f"({', '.join(missing)}). Install them with `{qt_install_line(missing)}` and start it again "
        "(packaging/bootstrap.sh does this for you when run as root)."
    )


def _selftest(db: Path | None, source: Path | None, screenshots: Path | None) -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from conflictbench_app.ui.selftest import run_selftest

    report = run_selftest(db, source, screenshots)
    for check in report.checks:
        click.echo(f"ok  {check}")
    for path in report.screenshots:
        click.echo(f"saved {path}")
    click.echo(f"Self-test passed in {report.seconds:.1f} s.")
