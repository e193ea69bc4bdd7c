"""Executors: where a run's episodes are played. ``local`` (the default) is a thread pool in this process; ``ray``
sends each episode to a Ray cluster as a task while the store stays here, its single writer (docs/scale.md).

Looked up by name; Ray is imported only when the ``ray`` executor is chosen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from conflictbench_app.errors import ConflictBenchError

if TYPE_CHECKING:
    from conflictbench_app.records import EpisodeRecord, RunRecord
    from conflictbench_app.runner import Runner
    from conflictbench_app.runs import RunConfig
    from conflictbench_app.scenarios.model import Scenario

EXECUTORS = ("local", "ray")
T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    """Plays a run's unfinished episodes. On Ctrl-C it stops them after the step in hand, then re-raises."""

    def play(
        self,
        runner: Runner,
        run: RunRecord,
        config: RunConfig,
        todo: list[EpisodeRecord],
        by_id: dict[str, Scenario],
    ) -> None: ...

    def map(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        on_done: Callable[[T, Future[R]], Any],
        concurrency: int = 1,
    ) -> None:
        """Call ``fn`` on each item, at most ``concurrency`` at a time, and hand each item with its finished future
        to ``on_done`` here, in completion order (model calls: judging, regret tests, single-turn questions). On
        Ctrl-C the queued items are dropped, those in flight are handed over, then the interrupt goes on."""
        ...


def get_executor(name: str = "local", *, address: str | None = None, **options: Any) -> Executor:
    """The executor called ``name`` (``local`` or ``ray``); ``address`` is a Ray cluster's (None: start one here)."""
    if name == "local":
        if address:
            raise ConflictBenchError("--ray-address needs --executor ray.")
        from conflictbench_app.executors.local import LocalExecutor

        return LocalExecutor()
    if name == "ray":
        from conflictbench_app.executors.ray_executor import RayExecutor

        return RayExecutor(address=address, **options)
    raise ConflictBenchError(f"Unknown executor {name!r}; choose one of: {', '.join(EXECUTORS)}.")
