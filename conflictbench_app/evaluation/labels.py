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
from conflictbench_app.records import ENDED_STATUSES, EpisodeRecord, Label, StepRecord, Verdict

LABELABLE = ENDED_STATUSES  # what can be labelled: the episodes a judge judges and a report counts


def left_to_label(
    episodes: Sequence[EpisodeRecord], labelled: set[str], *, include_labelled: bool = False
) -> list[EpisodeRecord]:
    """The one rule for "left to label": ended episodes (:data:`LABELABLE`) not in ``labelled`` (the ids the
    annotator has labelled), in the given order."""
    return [e for e in episodes if e.status in LABELABLE and (include_labelled or e.id not in labelled)]


class LabelQueue:
    """Walk the ended episodes (of a run, of several, of every run, or the given ones) that ``annotator`` has not
    labelled yet. The terminal labeller and the app's review mode both use it; it emits, they display."""

    changed = Signal(object)  # the current EpisodeRecord, or None when the queue is done
    labelled = Signal(object)  # the Label just stored

    def __init__(
        self,
        store: Any,
        annotator: str,
        *,
        run_id: str | None = None,
        run_ids: Sequence[str] | None = None,
        episode_ids: Sequence[str] | None = None,
        include_labelled: bool = False,
        source: str = "cli",
    ) -> None:
        """``run_id``/``run_ids``: the runs to walk (every run when neither is given, nor ``episode_ids``)."""
        if not annotator.strip():
            raise ConflictBenchError("A label needs an annotator name; pass --annotator NAME.")
        self.store = store
        self.annotator = annotator.strip()
        self.source = source
        self.run_ids = [run_id] if run_id else list(run_ids or [])
        self.episode_ids = list(episode_ids or [])
        self.include_labelled = include_labelled
        self.episodes: list[EpisodeRecord] = []
        self.index = 0
        self.refresh()

    def refresh(self, store: Any = None) -> None:
        """Read the queue again from the store (``store``: a newly opened one, for callers that reopen it)."""
        self.store = store or self.store
        if self.episode_ids:
            episodes = [self.store.get_episode(i) for i in self.episode_ids]
        else:
            runs: list[str | None] = list(self.run_ids) or [None]  # None: every run
            episodes = [e for run_id in runs for e in self.store.episodes(run_id)]
        done = {lb.episode_id for lb in self.store.labels(annotator=self.annotator)}
        self.episodes = left_to_label(episodes, done, include_labelled=self.include_labelled)
        self.index = 0
        self.changed.emit(self.current)

    def next(self, after: str | None = None) -> EpisodeRecord | None:
        """The next episode left to label after ``after`` (wrapping around), or the first; None when none is left."""
        if not self.episodes:
            return None
        ids = [e.id for e in self.episodes]
        return self.episodes[(ids.index(after) + 1) % len(ids)] if after in ids else self.episodes[0]

    def __len__(self) -> int:
        return len(self.episodes)

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
