"""A bar that runs the judge or the regret test on one recorded run in the background: the model to use, Start, a
progress bar, Cancel, and the result in words. The work is the core's (:mod:`conflictbench_app.evaluation.jobs`,
the same functions as ``conflictbench judge`` and ``conflictbench regret``); this bar only starts and shows it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QComboBox, QFrame, QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

from conflictbench_app.evaluation.jobs import JobProgress, JobResult, judge_job, regret_job
from conflictbench_app.ui.workers import SerialWorker

Job = Callable[..., JobResult]
JOBS: dict[str, tuple[Job, str]] = {
    "judge": (judge_job, "Judge the run"),
    "regret": (regret_job, "Regret-test the run"),
}


class _Relay(QObject):
    """Carries progress from the worker thread to the GUI thread (a queued signal)."""

    progress = Signal(object)


class JobBar(QFrame):
    """Start ``kind`` ("judge" or "regret") on the run :meth:`run_id` names, with progress and Cancel."""

    finished = Signal(object)  # JobResult

    def __init__(self, kind: str, db_path: Path, parent: QWidget, run_id: Callable[[], str | None]) -> None:
        super().__init__(parent)
        self.setObjectName("Card")
        self.kind, self.db_path, self.run_id = kind, db_path, run_id
        self.job, start_text = JOBS[kind]
        self.cancel = threading.Event()
        self.worker = SerialWorker(self, f"{kind}-job")
        self.relay = _Relay(self)
        self.relay.progress.connect(self._on_progress)
        self._build(start_text)

    def _build(self, start_text: str) -> None:
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 4, 8, 4)
        self.model_box = QComboBox(self)
        self.model_box.setEditable(True)
        self.model_box.setMinimumWidth(220)
        self._fill_models()
        self.model_box.setToolTip(
            "The judge model, PROFILE:MODEL"
            if self.kind == "judge"
            else "The model under test, PROFILE:MODEL"
        )
        self.start_button = QPushButton(start_text, self)
        self.start_button.setToolTip(
            "Judge the chosen run's episodes in the background (as `conflictbench judge`)"
            if self.kind == "judge"
            else "Regret-test the chosen run's EP1 successes in the background (as `conflictbench regret`)"
        )
        self.progress = QProgressBar(self)
        self.progress.setToolTip("Episodes handled so far, of the run's episodes to handle")
        self.progress.setFormat("%v of %m")
        self.progress.setVisible(False)
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setToolTip(
            "Stop after the episode in hand; what is done is kept (start again to go on)"
        )
        self.cancel_button.setEnabled(False)
        self.status = QLabel("", self)
        self.status.setObjectName("Subtitle")
        self.status.setWordWrap(True)
        for widget in (self.model_box, self.start_button, self.progress, self.cancel_button):
            row.addWidget(widget)
        row.addWidget(self.status, 1)
        self.start_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.request_cancel)

    def _fill_models(self) -> None:
        """Offer the models the pickers list (the embedded one, every profile's), never a scripted player."""
        from conflictbench_app.agents.registry import answers_with_a_model, default_agent, offered_agents

        for spec in offered_agents():
            if answers_with_a_model(spec):
                self.model_box.addItem(spec, spec)
        default = default_agent()
        self.model_box.setCurrentText(default if answers_with_a_model(default) else "")

    def set_model(self, spec: str) -> None:
        self.model_box.setCurrentText(spec)

    @property
    def busy(self) -> bool:
        return self.worker.busy

    def start(self) -> None:
        """Run the job on the chosen run in the background."""
        run_id, spec = self.run_id(), self.model_box.currentText().strip()
        if not run_id:
            self.status.setText("Choose a run first (an episode of it, or the run in the list).")
            return
        if not spec:
            self.status.setText("Name the model to use, PROFILE:MODEL (e.g. openai:gpt-4o).")
            return
        self.cancel.clear()
        self._busy(True, f"Starting on run {run_id}…")
        work = self._work(run_id, spec)
        self.worker.submit(work, self._on_done, self._on_error)

    def _work(self, run_id: str, spec: str) -> Callable[[], JobResult]:
        emit, cancel, db = self.relay.progress.emit, self.cancel, self.db_path
        return lambda: self.job(db, run_id, spec, progress=emit, cancel=cancel)

    def request_cancel(self) -> None:
        self.cancel.set()
        self.cancel_button.setEnabled(False)
        self.status.setText("Cancelling: the episode in hand is finished and kept…")

    def _busy(self, busy: bool, text: str) -> None:
        self.start_button.setEnabled(not busy)
        self.model_box.setEnabled(not busy)
        self.cancel_button.setEnabled(busy)
        self.progress.setVisible(True)
        if busy:
            self.progress.setRange(0, 0)  # busy until the first episode reports the total
        self.status.setText(text)

    def _on_progress(self, item: JobProgress) -> None:
        self.progress.setRange(0, max(1, item.total))
        self.progress.setValue(item.done)
        if not self.cancel.is_set():
            self.status.setText(item.text)

    def _on_done(self, result: JobResult) -> None:
        self.progress.setRange(0, max(1, result.total))
        self.progress.setValue(result.done)
        self._busy(False, result.summary)
        self.finished.emit(result)

    def _on_error(self, message: str) -> None:
        self._busy(False, message)
        self.progress.setVisible(False)

    def shutdown(self) -> None:
        self.cancel.set()
        self.worker.stop()
