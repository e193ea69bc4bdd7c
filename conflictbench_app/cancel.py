"""Ctrl-C that stops: the cancel flag reaches the workers before the thread pool drains.

A ``with ThreadPoolExecutor()`` block that gets a KeyboardInterrupt waits, on its way out, for every queued job:
every remaining episode would still be played (and paid for) before the interrupt is reported. :func:`collect`
sets the flag first, drops the jobs not yet started, lets each job in flight finish the step in hand, and only then
re-raises, so that the caller can mark its work resumable and say how to resume.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, as_completed, wait
from typing import Any, TypeVar

T = TypeVar("T")


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run; what was recorded is kept and the run can be resumed with ``run_id``."""

    def __init__(self, run_id: str) -> None:
        super().__init__(run_id)
        self.run_id = run_id

    @property
    def resume_command(self) -> str:
        return f"conflictbench run --resume {self.run_id}"


def collect(
    futures: Iterable[Future[T]], on_done: Callable[[Future[T]], Any], cancel: threading.Event
) -> None:
    """Hand each future to ``on_done`` as it completes. On Ctrl-C: set ``cancel``, cancel the queued futures, wait
    for the running ones (each stops after its current step), hand those to ``on_done`` too, then re-raise."""
    pending = list(futures)
    handed: set[int] = set()
    try:
        for future in as_completed(pending):
            handed.add(id(future))
            on_done(future)
    except KeyboardInterrupt:
        cancel.set()
        for future in pending:
            future.cancel()
        running = [f for f in pending if not f.cancelled() and id(f) not in handed]
        wait(running)
        for future in running:
            if id(future) not in handed:
                on_done(future)
        raise


class Cancelled(KeyboardInterrupt):
    """The user pressed Cancel. It travels as Ctrl-C does (a KeyboardInterrupt, so :func:`collect` drops the queued
    jobs and keeps the ones in flight): what was stored stays, and the same command goes on from there."""


def cancelling(progress: Callable[[T], Any] | None, cancel: threading.Event) -> Callable[[T], None]:
    """``progress``, raising :class:`Cancelled` once, at the first report after ``cancel`` is set: the work
    reported so far is stored, the work after it is not started. Later reports (the jobs in flight, stored on the
    way out) pass through."""
    raised = threading.Event()

    def report(item: T) -> None:
        if progress is not None:
            progress(item)
        if cancel.is_set() and not raised.is_set():
            raised.set()
            raise Cancelled

    return report
