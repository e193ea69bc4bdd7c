"""The CLI's display of the runner's progress protocol: a rich progress bar on a terminal, nothing otherwise."""

from __future__ import annotations

import sys
import threading
from collections import Counter
from typing import Any

from conflictbench_app.records import EpisodeRecord, RunRecord
from conflictbench_app.runner import RunListener


class ProgressListener(RunListener):
    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self._lock = threading.Lock()
        self._progress: Any = None
        self._task: Any = None
        self.nodes: Counter[str] = Counter()  # episodes started per node (the ray executor)

    def run_started(self, run: RunRecord, total: int, done: int) -> None:
        if not self.enabled:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn(f"run {run.id}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task("", total=total, completed=done)

    def episode_placed(self, episode: EpisodeRecord, node: str, pid: int) -> None:
        with self._lock:
            self.nodes[node] += 1

    def episode_finished(self, episode: EpisodeRecord) -> None:
        with self._lock:
            if self._progress is not None:
                where = "  ".join(f"{node}: {n}" for node, n in sorted(self.nodes.items()))
                description = f"{episode.scenario_id} {episode.outcome}" + (f"  [{where}]" if where else "")
                self._progress.update(self._task, advance=1, description=description)

    def close(self) -> None:
        with self._lock:
            if self._progress is not None:
                self._progress.stop()
                self._progress = None
