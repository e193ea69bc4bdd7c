"""The store an episode sees on a remote worker: reads come from what the driver sent with the task, writes are
streamed back to the driver (its store is the single writer) as they happen, one message per write.

It implements exactly what :func:`conflictbench_app.runner.play_episode` uses of :class:`~conflictbench_app.store.Store`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conflictbench_app.records import EpisodeRecord, RunRecord, StepRecord


@dataclass(frozen=True)
class StoreWrite:
    """One write of one attempt at an episode, replayed on the driver's store by :func:`apply_write`."""

    episode_id: str
    attempt: int
    op: str  # placed, add_step, update_episode, mark_assisted
    payload: Any


class StreamingStore:
    def __init__(
        self,
        run: RunRecord,
        episode: EpisodeRecord,
        steps: list[StepRecord],
        attempt: int,
        send: Callable[[StoreWrite], None],
    ) -> None:
        self.run, self.episode, self._steps, self.attempt = run, episode, list(steps), attempt
        self._send = send

    def _write(self, op: str, payload: Any) -> None:
        self._send(StoreWrite(self.episode.id, self.attempt, op, payload))

    def get_run(self, run_id: str) -> RunRecord:
        return self.run

    def get_episode(self, episode_id: str) -> EpisodeRecord:
        return self.episode

    def steps(self, episode_id: str) -> list[StepRecord]:
        return list(self._steps)

    def add_step(self, record: StepRecord) -> StepRecord:
        self._write("add_step", record)
        self._steps.append(record)
        return record

    def update_episode(self, episode_id: str, **fields: Any) -> None:
        self._write("update_episode", fields)
        self.episode = self.episode.model_copy(update=fields)

    def mark_assisted(self, episode_id: str, reason: str) -> EpisodeRecord:
        self._write("mark_assisted", reason)
        reasons = list(self.episode.meta.get("assisted", []))
        meta = {**self.episode.meta, "assisted": reasons if reason in reasons else [*reasons, reason]}
        self.episode = self.episode.model_copy(update={"assisted": True, "meta": meta})
        return self.episode


def apply_write(store: Any, write: StoreWrite) -> None:
    """Replay ``write`` on the driver's store."""
    if write.op == "add_step":
        store.add_step(write.payload)
    elif write.op == "update_episode":
        store.update_episode(write.episode_id, **write.payload)
    elif write.op == "mark_assisted":
        store.mark_assisted(write.episode_id, write.payload)
