"""Work off the GUI thread: a serial worker thread that runs callables in order and reports back with queued signals.

Every worker is parented to the widget that owns it and must be stopped (``stop()``) in that widget's close: the
thread finishes the job in hand, then ends. Errors come back as readable sentences, never as tracebacks.
"""

from __future__ import annotations

import itertools
import logging
import traceback
import weakref
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QThread, Signal, Slot

from conflictbench_app.errors import ConflictBenchError

log = logging.getLogger(__name__)

Callback = Callable[[Any], None]
_WORKERS: weakref.WeakSet[SerialWorker] = weakref.WeakSet()
# Threads whose job outlasted ``stop()``: detached from their window and held here, because Qt aborts the whole
# process when a running QThread is deleted (as it would be with its window).
_ORPHANS: list[QThread] = []


def running_workers() -> list[str]:
    """Names of worker threads still running (tests check that none outlives its window)."""
    names = [w.name for w in list(_WORKERS) if w.running]
    return names + [t.objectName() for t in _ORPHANS if t.isRunning() and t.objectName() not in names]


def readable_error(exc: BaseException) -> str:
    """A sentence for the user. Our own errors already are; anything else is a bug, logged with its traceback."""
    if isinstance(exc, ConflictBenchError):
        return str(exc)
    log.error("Unexpected error in a background job:\n%s", "".join(traceback.format_exception(exc)))
    return (
        f"Something unexpected went wrong ({type(exc).__name__}: {exc}). What was recorded so far is kept; "
        "the details are in the log."
    )


class _Executor(QObject):
    """Lives on the worker thread; runs one job at a time."""

    done = Signal(int, object)
    failed = Signal(int, str)

    @Slot(int, object)
    def run(self, job_id: int, fn: Callable[[], Any]) -> None:
        try:
            result = fn()
        except BaseException as exc:  # reported to the GUI, never lost
            self.failed.emit(job_id, readable_error(exc))
        else:
            self.done.emit(job_id, result)


class SerialWorker(QObject):
    """A private thread running submitted callables one after another, in submission order."""

    busyChanged = Signal(bool)
    _submit = Signal(int, object)

    def __init__(self, parent: QObject, name: str) -> None:
        super().__init__(parent)
        self._thread = QThread(self)
        self._thread.setObjectName(name)
        self._executor = _Executor()
        self._executor.moveToThread(self._thread)
        self._thread.finished.connect(self._executor.deleteLater)
        self._submit.connect(self._executor.run)
        self._executor.done.connect(self._on_done)
        self._executor.failed.connect(self._on_failed)
        self._ids = itertools.count(1)
        self._callbacks: dict[int, tuple[Callback | None, Callback | None]] = {}
        self._stopped = False
        self.name = name
        _WORKERS.add(self)
        self._thread.start()

    @property
    def busy(self) -> bool:
        return bool(self._callbacks)

    @property
    def running(self) -> bool:
        try:
            return self._thread.isRunning()
        except RuntimeError:  # the C++ thread object is gone, so it is not running
            return False

    def submit(
        self,
        fn: Callable[[], Any],
        on_done: Callback | None = None,
        on_error: Callback | None = None,
    ) -> int:
        """Run ``fn`` on the worker thread; ``on_done(result)`` / ``on_error(message)`` run on the GUI thread."""
        if self._stopped:
            raise RuntimeError("This worker has been stopped.")
        job_id = next(self._ids)
        was_busy = self.busy
        self._callbacks[job_id] = (on_done, on_error)
        if not was_busy:
            self.busyChanged.emit(True)
        self._submit.emit(job_id, fn)
        return job_id

    def stop(self, timeout_ms: int = 60_000) -> None:
        """Let the job in hand finish, drop the queued ones' callbacks, and end the thread."""
        if self._stopped:
            return
        self._stopped = True
        self._callbacks.clear()
        self._thread.quit()
        if not self._thread.wait(timeout_ms):
            log.error(
                "Worker %s did not finish in %d ms; it is left to end on its own.",
                self._thread.objectName(),
                timeout_ms,
            )
            self._thread.setParent(None)
            _ORPHANS.append(self._thread)

    def _finish(self, job_id: int) -> tuple[Callback | None, Callback | None]:
        callbacks = self._callbacks.pop(job_id, (None, None))
        if not self.busy and not self._stopped:
            self.busyChanged.emit(False)
        return callbacks

    @Slot(int, object)
    def _on_done(self, job_id: int, result: Any) -> None:
        on_done, _ = self._finish(job_id)
        if on_done is not None and not self._stopped:
            on_done(result)

    @Slot(int, str)
    def _on_failed(self, job_id: int, message: str) -> None:
        _, on_error = self._finish(job_id)
        if on_error is not None and not self._stopped:
            on_error(message)
        elif not self._stopped:
            log.error("Background job failed: %s", message)
