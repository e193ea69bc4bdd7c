"""The serial worker thread: a job that outlasts ``stop()`` never takes the process down with its window."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtWidgets import QWidget

from conflictbench_app.ui.workers import SerialWorker, running_workers

pytestmark = pytest.mark.gui


def test_a_job_that_outlasts_stop_is_reported_and_its_window_can_go(qtbot) -> None:  # type: ignore[no-untyped-def]
    window = QWidget()
    worker = SerialWorker(window, "slow-job")
    started, release = threading.Event(), threading.Event()
    worker.submit(lambda: (started.set(), release.wait(30)))
    assert started.wait(30)
    worker.stop(timeout_ms=100)
    assert "slow-job" in running_workers()
    window.deleteLater()  # with the thread still running: Qt would abort here, were it deleted with the window
    qtbot.wait(50)
    release.set()
    qtbot.waitUntil(lambda: "slow-job" not in running_workers(), timeout=30_000)


def test_results_come_back_in_order_on_the_gui_thread(qtbot) -> None:  # type: ignore[no-untyped-def]
    window = QWidget()
    qtbot.addWidget(window)
    worker = SerialWorker(window, "ordered")
    got: list[tuple[int, bool]] = []
    for n in range(5):
        worker.submit(
            lambda n=n: n, lambda r: got.append((r, threading.current_thread() is threading.main_thread()))
        )
    qtbot.waitUntil(lambda: len(got) == 5, timeout=30_000)
    worker.stop()
    assert got == [(n, True) for n in range(5)]
