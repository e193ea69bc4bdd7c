"""The ``ray`` executor: each episode is a Ray task; the store stays on the driver, its single writer.

A worker plays its episode against a :class:`~conflictbench_app.executors.stream_store.StreamingStore` that sends
every write to an ``Inbox`` actor as it happens (the send returns once the inbox holds it); the driver drains the
inbox into its SQLite store, so a killed driver or worker loses at most the step in flight and ``--resume`` works
as with the local executor. A worker that dies mid-episode gets the episode played again from its start (its
steps so far are deleted first, and writes of the dead attempt are ignored), so no episode is counted twice.

Without an address a local Ray instance is started for the run and shut down after it. Ray is imported lazily.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.executors.stream_store import StoreWrite, StreamingStore, apply_write
from conflictbench_app.runs import reset_episode
from conflictbench_app.store import Store

if TYPE_CHECKING:
    from conflictbench_app.records import EpisodeRecord, RunRecord
    from conflictbench_app.runner import Runner
    from conflictbench_app.runs import RunConfig
    from conflictbench_app.scenarios.model import Scenario

MAX_ATTEMPTS = 3  # an episode whose worker died this many times is marked errored
FORWARDED_ENV = (
    "CONFLICTBENCH_",
    "XDG_",
    "HF_",
)  # settings the workers must share with the driver (no API keys)
POLL_S = 0.05
T = TypeVar("T")
R = TypeVar("R")


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConflictBenchError(
            "--executor ray needs Ray: pip install 'conflictbench[ray]' (docs/scale.md)."
        ) from None
    return ray


@contextmanager
def ray_session(address: str | None, num_cpus: int | None = None) -> Iterator[Any]:
    """Ray, connected: to ``address``, or a local instance started here and shut down on the way out. An instance
    already initialised in this process (a test's, a notebook's) is used as it is and left running."""
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    try:
        ray.init(
            address=address or None,
            num_cpus=None if address else num_cpus,
            include_dashboard=False,
            logging_level="WARNING",
            runtime_env={"env_vars": worker_env()},
        )
    except ConnectionError as exc:
        raise ConflictBenchError(
            f"Could not reach the Ray cluster at {address}: {exc}. Start it with `ray start --head` (docs/scale.md)."
        ) from None
    try:
        yield ray
    finally:
        ray.shutdown()


def worker_env() -> dict[str, str]:
    """The driver's settings that workers need to play as it would (paths, toolchain, cache): never API keys,
    which belong in each worker's own environment."""
    return {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_ENV)}


class RemoteFlag:
    """A worker's view of the driver's cancel flag (the inbox holds it)."""

    def __init__(self, inbox: Any) -> None:
        self.inbox = inbox

    def is_set(self) -> bool:
        import ray

        return bool(ray.get(self.inbox.cancelled.remote()))


class Inbox:
    """The one actor the workers stream their writes to; the driver takes them in order."""

    def __init__(self) -> None:
        self.writes: list[StoreWrite] = []
        self.cancel = False

    def put(self, write: StoreWrite) -> None:
        self.writes.append(write)

    def take(self) -> list[StoreWrite]:
        writes, self.writes = self.writes, []
        return writes

    def set_cancelled(self) -> None:
        self.cancel = True

    def cancelled(self) -> bool:
        return self.cancel


def play_remote(
    inbox: Any,
    run: RunRecord,
    config: RunConfig,
    episode: EpisodeRecord,
    steps: list,
    scenario: Any,
    attempt: int,
) -> None:
    """The Ray task: play one episode, every write streamed to ``inbox``."""
    import ray

    from conflictbench_app.runner import RunListener, play_episode

    cancel = RemoteFlag(inbox)
    if cancel.is_set():
        return

    def send(write: StoreWrite) -> None:
        ray.get(inbox.put.remote(write))

    send(StoreWrite(episode.id, attempt, "placed", (ray.util.get_node_ip_address(), os.getpid())))
    store = StreamingStore(run, episode, steps, attempt, send)
    play_episode(store, run, config, episode, scenario, RunListener(), cancel)


def call(fn: Callable[[Any], Any], item: Any) -> Any:
    """The Ray task of :meth:`RayExecutor.map`."""
    return fn(item)


@cache
def _remote() -> tuple[Any, Any]:
    ray = import_ray()
    inbox = ray.remote(num_cpus=0)(Inbox)
    task = ray.remote(max_retries=0)(play_remote)  # retried here, from the episode's start, after a reset
    return inbox, task


class RayExecutor:
    def __init__(
        self, address: str | None = None, num_cpus: int | None = None, cpus_per_episode: float = 0.1
    ):
        self.address = address
        self.num_cpus = num_cpus
        self.cpus_per_episode = cpus_per_episode  # episodes wait on model APIs: many share a core

    def _cpus(self, concurrency: int) -> int:
        """Logical CPUs of an instance started here: enough for ``concurrency`` waiting tasks to keep warm workers
        (Ray stops idle workers beyond its CPU count, and a worker takes seconds to start)."""
        return self.num_cpus or max(os.cpu_count() or 1, concurrency)

    def play(
        self,
        runner: Runner,
        run: RunRecord,
        config: RunConfig,
        todo: list[EpisodeRecord],
        by_id: dict[str, Scenario],
    ) -> None:
        with ray_session(self.address, self._cpus(config.concurrency)) as ray, Store(runner.db_path) as store:
            _RayRun(ray, runner, store, run, config, by_id, self.cpus_per_episode).play(todo)

    def map(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        on_done: Callable[[T, Future[R]], Any],
        concurrency: int = 1,
    ) -> None:
        with ray_session(self.address, self._cpus(concurrency)) as ray:
            task = ray.remote(max_retries=3)(call).options(
                num_cpus=self.cpus_per_episode, runtime_env={"env_vars": worker_env()}
            )
            _RayMap(ray, task, fn, on_done, concurrency).run(list(items))


class _RayMap:
    """At most ``concurrency`` calls in flight; each finished one is handed over as a completed future."""

    def __init__(self, ray: Any, task: Any, fn: Any, on_done: Any, concurrency: int) -> None:
        self.ray, self.task, self.on_done, self.limit = ray, task, on_done, max(1, concurrency)
        self.fn = ray.put(fn)  # shipped once, not once per call
        self.pending: dict[Any, Any] = {}

    def run(self, items: list[Any]) -> None:
        queue = deque(items)
        try:
            while queue or self.pending:
                while queue and len(self.pending) < self.limit:
                    item = queue.popleft()
                    self.pending[self.task.remote(self.fn, item)] = item
                self._hand_over(self._ready())
        except KeyboardInterrupt:
            self._hand_over(
                list(self.pending)
            )  # the calls in flight finish and are kept; a second Ctrl-C ends all
            raise

    def _ready(self) -> list[Any]:
        ready, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=None)
        return list(ready)

    def _hand_over(self, refs: list[Any]) -> None:
        for ref in refs:
            item = self.pending.pop(ref)
            future: Future[Any] = Future()
            try:
                future.set_result(self.ray.get(ref))
            except (
                Exception
            ) as exc:  # handed to on_done, which decides (a RayTaskError is also the task's error)
                future.set_exception(getattr(exc, "cause", None) or exc)
            self.on_done(item, future)


class _RayRun:
    """The driver's side of one run: submits at most ``concurrency`` episodes at a time and records their writes."""

    def __init__(
        self,
        ray: Any,
        runner: Runner,
        store: Store,
        run: RunRecord,
        config: RunConfig,
        by_id: dict[str, Scenario],
        cpus: float,
    ) -> None:
        self.ray, self.runner, self.store, self.run, self.config, self.by_id = (
            ray,
            runner,
            store,
            run,
            config,
            by_id,
        )
        inbox_cls, task = _remote()
        self.inbox = inbox_cls.remote()
        self.task = task.options(num_cpus=cpus, runtime_env={"env_vars": worker_env()})
        self.pending: dict[Any, tuple[EpisodeRecord, int]] = {}
        self.attempts: dict[str, int] = {}
        self.queue: deque[EpisodeRecord] = deque()

    def play(self, todo: list[EpisodeRecord]) -> None:
        self.queue.extend(todo)
        try:
            self._loop()
        except KeyboardInterrupt:
            self._stop()
            raise

    def _loop(self) -> None:
        while self.queue or self.pending:
            while self.queue and len(self.pending) < max(1, self.config.concurrency):
                self._submit(self.queue.popleft())
            self._step()

    def _step(self) -> None:
        ready, _ = self.ray.wait(list(self.pending), num_returns=len(self.pending), timeout=POLL_S)
        self._drain()  # after the wait: a task that is ready has put all its writes
        for ref in ready:
            self._settle(ref, *self.pending.pop(ref))

    def _submit(self, episode: EpisodeRecord) -> None:
        scenario = self.by_id.get(episode.scenario_id)
        if scenario is None:
            self.runner.missing_scenario(self.store, episode)
            return
        attempt = self.attempts.get(episode.id, 0) + 1
        self.attempts[episode.id] = attempt
        steps = self.store.steps(episode.id)
        ref = self.task.remote(self.inbox, self.run, self.config, episode, steps, scenario, attempt)
        self.pending[ref] = (episode, attempt)

    def _drain(self) -> None:
        for write in self.ray.get(self.inbox.take.remote()):
            if write.attempt != self.attempts.get(write.episode_id):
                continue  # a dead attempt's last words: its episode was reset and is played again
            if write.op == "placed":
                self._placed(write)
                continue
            apply_write(self.store, write)
            if write.op == "add_step":
                self.runner.listener.step_recorded(self.store.get_episode(write.episode_id), write.payload)

    def _placed(self, write: StoreWrite) -> None:
        episode = self.store.get_episode(write.episode_id)
        node, pid = write.payload
        self.runner.listener.episode_started(episode)
        self.runner.listener.episode_placed(episode, node, pid)

    def _settle(self, ref: Any, episode: EpisodeRecord, attempt: int) -> None:
        ray = self.ray
        try:
            ray.get(ref)
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError) as exc:
            self._worker_died(episode, attempt, exc)
            return
        except ray.exceptions.TaskCancelledError:
            return  # a forced stop: the episode stays resumable
        except (
            ray.exceptions.RayTaskError
        ) as exc:  # the task failed outside the episode (an import, a pickle)
            self.store.update_episode(
                episode.id, status="errored", outcome="error", error=f"The Ray task failed: {exc}"[:2000]
            )
        record = self.store.get_episode(episode.id)
        if record.status in ("finished", "errored"):
            self.runner.listener.episode_finished(record)

    def _worker_died(self, episode: EpisodeRecord, attempt: int, exc: BaseException) -> None:
        if attempt >= MAX_ATTEMPTS:
            self.store.update_episode(
                episode.id,
                status="errored",
                outcome="error",
                error=f"Its Ray worker died {attempt} times (last: {type(exc).__name__}); "
                "check the workers' memory and logs, then --resume --retry-errored.",
            )
            self.runner.listener.episode_finished(self.store.get_episode(episode.id))
            return
        reset_episode(self.store, episode.id)
        self.queue.appendleft(self.store.get_episode(episode.id))

    def _stop(self) -> None:
        """Ctrl-C: the workers stop after the step in hand, queued episodes start and return at once; their writes
        are recorded. A second Ctrl-C forces the tasks down."""
        self.runner.cancel.set()
        self.queue.clear()
        self.ray.get(self.inbox.set_cancelled.remote())
        try:
            while self.pending:
                self._step()
        except KeyboardInterrupt:
            for ref in self.pending:
                self.ray.cancel(ref, force=True)
            self.pending.clear()
        self._drain()


__all__ = ["RayExecutor", "ray_session"]
