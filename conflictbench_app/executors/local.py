"""The ``local`` executor: episodes in a thread pool of this process (model calls are I/O-bound)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from conflictbench_app.cancel import collect

if TYPE_CHECKING:
    from conflictbench_app.records import EpisodeRecord, RunRecord
    from conflictbench_app.runner import Runner
    from conflictbench_app.runs import RunConfig
    from conflictbench_app.scenarios.model import Scenario

T = TypeVar("T")
R = TypeVar("R")


class LocalExecutor:
    def play(
        self,
        runner: Runner,
        run: RunRecord,
        config: RunConfig,
        todo: list[EpisodeRecord],
        by_id: dict[str, Scenario],
    ) -> None:
        workers = max(1, min(config.concurrency, len(todo) or 1))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="episode") as pool:
            futures = [pool.submit(runner.play_one, run, config, e, by_id.get(e.scenario_id)) for e in todo]
            collect(futures, Future.result, runner.cancel)  # Ctrl-C: workers stop after the step in hand

    def map(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        on_done: Callable[[T, Future[R]], Any],
        concurrency: int = 1,
    ) -> None:
        if concurrency <= 1:  # one call at a time, here: a Cancel raised by on_done starts no further call
            for item in items:
                on_done(item, _call(fn, item))
            return
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="call") as pool:
            futures = {pool.submit(fn, item): item for item in items}
            collect(futures, lambda f: on_done(futures[f], f), threading.Event())


def _call(fn: Callable[[T], R], item: T) -> Future[R]:
    """``fn(item)`` as a finished future (its result or its exception), as the pool's callers receive it."""
    future: Future[R] = Future()
    try:
        future.set_result(fn(item))
    except Exception as exc:  # handed to on_done, which reads it as a failed call
        future.set_exception(exc)
    return future
