"""The Qt half of ``benchmarks/bench_gui.py`` (Qt code lives in this package): the programs whose cold start is
timed, and a human turn's round trip through the Play view."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEventLoop

# A fresh process that shows the main window and prints SHOWN, then READY once its library is listed.
READY_APP = """
import sys, time
from PySide6.QtCore import QTimer
from conflictbench_app.ui.app import application
app = application()
from conflictbench_app.ui.main_window import MainWindow
w = MainWindow({db!r}, {source!r})
w.show()
QTimer.singleShot(0, lambda: print("SHOWN", flush=True))
def check():
    if w.library_view.library is not None and w.library_view.list.count():
        print("READY", flush=True); w.close(); app.quit()
    else:
        QTimer.singleShot(5, check)
QTimer.singleShot(0, check)
app.exec()
"""

# Qt's own floor: a fresh process that shows a bare QWidget.
READY_BARE = """
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QWidget
app = QApplication([])
w = QWidget(); w.resize(800, 600); w.show()
QTimer.singleShot(0, lambda: (print("READY", flush=True), app.quit()))
app.exec()
"""


def gui_turns(source: Path, scenario_id: str, commands: list[str], db: Path) -> list[float]:
    """Seconds from a typed line to its step recorded and (for an accepted one) its clip's first frame on screen."""
    from conflictbench_app.scenarios.library import load_library
    from conflictbench_app.ui.app import application
    from conflictbench_app.ui.play_view import PlayView

    application()
    scenario = load_library(source).get(scenario_id)
    view = PlayView(db, "bench")
    view.resize(1300, 850)
    view.show()
    view.set_scenario(scenario)
    view.setting_box.setCurrentIndex(view.setting_box.findData("multimodal"))
    view.start()
    wait_for(lambda: view.live.record is not None and not view.live.busy and view.video.clip is not None)
    times = []
    for command in commands:
        if view.live.done:
            break
        shown = view.video.frames_shown
        steps = len(view.live.steps)
        start = time.perf_counter()
        view.play_line(command)

        def arrived(steps: int = steps, shown: int = shown) -> bool:
            if len(view.live.steps) <= steps or view.live.busy:
                return False
            # A refused command renders no clip: the round trip ends with its transcript line.
            return not view.live.steps[-1].accepted or view.video.frames_shown > shown

        wait_for(arrived)
        times.append(time.perf_counter() - start)
        QCoreApplication.processEvents()
    view.shutdown()
    view.close()
    return times


def wait_for(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit("timed out waiting for the app")
        QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 5)
        time.sleep(0.001)
