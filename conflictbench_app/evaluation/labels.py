"""The label queue: the episodes one annotator still has to label, in order. The terminal labeller
(``conflictbench label``) and the desktop app's review mode both drive this object and render what it emits.

Labels are appended to the store with the annotator's name and the time; they never overwrite a judge's verdict or
an earlier label (the latest label of each annotator is the one agreement figures use).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psygnal import Signal

from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.evaluation.records import Label, Verdict
from conflictbench_app.records import EpisodeRecord, StepRecord


class LabelQueue:
    """Walk a run's finished episodes (or the given ones) that ``annotator`` has not labelled yet."""

    changed = Signal(object)  # the current EpisodeRecord, or None when the queue is done
    labelled = Signal(object)  # the Label just stored

    def __init__(
        self,
        store: Any,
        annotator: str,
        *,
        run_id: str | None = None,
        episode_ids: Sequence[str] | None = None,
        include_labelled: bool = False,
        source: str = "cli",
    ) -> None:
        if not annotator.strip():
            raise ConflictBenchError("A label needs an annotator name; pass --annotator NAME.")
        if run_id is None and not episode_ids:
            raise ConflictBenchError("Give a run or episode ids to label.")
        self.store = store
        self.annotator = annotator.strip()
        self.source = source
        episodes = [store.get_episode(i) for i in episode_ids] if episode_ids else store.episodes(run_id)
        done = {lb.episode_id for lb in store.labels(run_id=run_id, annotator=self.annotator)}
        self.episodes: list[EpisodeRecord] = [
            e
            for e in episodes
            if e.status in ("finished", "errored") and (include_labelled or e.id not in done)
        ]
        self.index = 0

    @property
    def current(self) -> EpisodeRecord | None:
        return self.episodes[self.index] if self.index < len(self.episodes) else None

    @property
    def remaining(self) -> int:
        return max(0, len(self.episodes) - self.index)

    def steps(self) -> list[StepRecord]:
        """The current episode's steps (empty when the queue is done)."""
        return self.store.steps(self.current.id) if self.current else []

    def verdicts(self) -> list[Verdict]:
        """The current episode's judge verdicts, to show once the annotator has given their own label."""
        return self.store.verdicts(episode_id=self.current.id) if self.current else []

    def label(self, value: str, note: str = "") -> Label:
        """Store a label for the current episode and move to the next."""
        episode = self._require_current()
        stored: Label = self.store.add_label(episode.id, value, self.annotator, note, source=self.source)
        self.labelled.emit(stored)
        self._advance()
        return stored

    def skip(self) -> None:
        self._require_current()
        self._advance()

    def _require_current(self) -> EpisodeRecord:
        if self.current is None:
            raise ConflictBenchError("Every episode in this queue is labelled.")
        return self.current

    def _advance(self) -> None:
        self.index += 1
        self.changed.emit(self.current)
