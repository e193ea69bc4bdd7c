"""The ``local`` executor: episodes in a thread pool of this process (model calls are I/O-bound)."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from conflictbench_app.cancel import collect

if TYPE_CHECKING:
    from conflictbench_app.records import EpisodeRecord, RunRecord
    from conflictbench_app.runner import Runner
    from conflictbench_app.runs import RunConfig
    from conflictbench_app.scenarios.model import Scenario


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
