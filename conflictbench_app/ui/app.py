"""Start the desktop app: one QApplication, the theme, the content note on first use, the main window."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from PySide6.QtWidgets import QApplication

from conflictbench_app.ui.theme import apply_theme


def application() -> QApplication:
    """The process's QApplication (created once, themed)."""
    app = QApplication.instance()
    if app is None:
        if (
            not os.environ.get("QT_QPA_PLATFORM")
            and sys.platform.startswith("linux")
            and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
        ):
            # Without a display Qt would abort. Only headless callers get here (the self-test, tests, benchmarks):
            # `conflictbench gui` refuses first with a clear message (cli.gui_cmd.missing_display).
            os.environ["QT_QPA_PLATFORM"] = "offscreen"
        app = QApplication(sys.argv[:1])
        app.setApplicationName("ConflictBench Studio")
        app.setOrganizationName("ConflictBench")
        apply_theme(app)
    assert isinstance(app, QApplication)
    return app


def run_app(db: Path | None = None, source: Path | None = None) -> int:
    """Open the main window and run until it closes. Returns the exit status."""
    app = application()
    from conflictbench_app.ui.main_window import MainWindow, ask_content_note

    if not ask_content_note():
        return 0
    window = MainWindow(db, source)
    window.show()
    return app.exec()
