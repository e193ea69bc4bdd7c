"""The review mode's logic, without Qt: the episodes to label (filtered all / unlabeled / labeled), the current one,
"n of N" progress, saving a label then moving on to the next unlabeled episode, the pickers' labeled / unlabeled
markers, trajectory alignment by turn, and the agreement table (one row per annotator and judge).

A :class:`ReviewSession` emits plain-callback events (``entries_changed``, ``progress_changed``, ``saved``,
``moved``); the Qt view subscribes to them and only displays and forwards. Every read and write goes through the
store; "left to label" is the core's one rule (:func:`conflictbench_app.evaluation.labels.left_to_label`), the
same as ``conflictbench label``'s.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from psygnal import Signal

from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.evaluation.agreement import Pair, agreement, human_human_pairs, judge_human_pairs
from conflictbench_app.evaluation.labels import LABELABLE, left_to_label
from conflictbench_app.records import EpisodeRecord, Label, StepRecord, Verdict

Filter = Literal["all", "unlabeled", "labeled"]
FILTERS: tuple[Filter, ...] = ("all", "unlabeled", "labeled")
LABELED, UNLABELED = "✓", "○"


# -- trajectories side by side ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TurnPair:
    """Turn ``index`` of two trajectories (either may have ended before it) and whether they diverge there."""

    index: int
    left: StepRecord | None
    right: StepRecord | None

    @property
    def diverges(self) -> bool:
        if self.left is None or self.right is None:
            return True
        return (self.left.action or self.left.action_raw) != (
            self.right.action or self.right.action_raw
        ) or self.left.accepted != self.right.accepted


def align(left: list[StepRecord], right: list[StepRecord]) -> list[TurnPair]:
    """The two trajectories side by side, turn by turn."""
    n = max(len(left), len(right))
    return [
        TurnPair(i, left[i] if i < len(left) else None, right[i] if i < len(right) else None)
        for i in range(n)
    ]


def first_divergence(pairs: list[TurnPair]) -> int | None:
    return next((p.index for p in pairs if p.diverges), None)


def episode_title(episode: EpisodeRecord, agent: str = "") -> str:
    """How an episode is named in lists: scenario, player, outcome, id (and whether it was assisted or forked)."""
    outcome = episode.outcome or episode.status
    fork = f" · fork of {episode.parent_episode}@{episode.fork_step}" if episode.parent_episode else ""
    who = f" · {agent}" if agent else ""
    assisted = " · assisted" if episode.assisted else ""
    return f"{episode.scenario_id}{who} · {outcome}{assisted} · {episode.id}{fork}"


# -- agreement ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgreementRow:
    """Agreement of one annotator with one other rater: a judge (``kind="judge"``) or another annotator
    (``kind="human"``). Rates are fractions (0..1); None where undefined (no pairs; kappa when one class only)."""

    annotator: str
    rater: str
    kind: Literal["judge", "human"]
    n: int
    accuracy: float | None
    precision: float | None
    recall: float | None
    f1: float | None
    kappa: float | None


def agreement_rows(labels: Iterable[Label], verdicts: Iterable[Verdict]) -> list[AgreementRow]:
    """One row per annotator x judge (the annotator's latest label as the reference), then one per pair of
    annotators; the figures are :func:`conflictbench_app.evaluation.agreement.agreement`'s."""
    labels = list(labels)
    rows = []
    for judge, pairs in sorted(judge_human_pairs(verdicts, labels).items()):
        for annotator, own in sorted(_by_reference(pairs).items()):
            rows.append(_row(annotator, judge, "judge", own))
    by_pair: dict[tuple[str, str], list[Pair]] = defaultdict(list)
    for pair in human_human_pairs(labels):
        by_pair[(pair.reference_rater, pair.other_rater)].append(pair)
    rows.extend(_row(a, b, "human", pairs) for (a, b), pairs in sorted(by_pair.items()))
    return rows


def _by_reference(pairs: list[Pair]) -> dict[str, list[Pair]]:
    out: dict[str, list[Pair]] = defaultdict(list)
    for pair in pairs:
        out[pair.reference_rater].append(pair)
    return out


def _row(annotator: str, rater: str, kind: Literal["judge", "human"], pairs: list[Pair]) -> AgreementRow:
    report = agreement(pairs)
    return AgreementRow(
        annotator,
        rater,
        kind,
        report.n,
        report.accuracy,
        report.precision,
        report.recall,
        report.f1,
        report.kappa,
    )


# -- the session -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One episode as the pickers list it, with its marker for this annotator."""

    episode: EpisodeRecord
    title: str
    labeled: bool

    @property
    def labelable(self) -> bool:
        return self.episode.status in LABELABLE

    @property
    def marker(self) -> str:
        """✓ labeled by this annotator, ○ still to label, blank when it cannot be labeled (not ended)."""
        return LABELED if self.labeled else UNLABELED if self.labelable else " "

    @property
    def text(self) -> str:
        return f"{self.marker} {self.title}"


@dataclass(frozen=True)
class Progress:
    """How far this annotator is: ``done`` of ``total`` labelable episodes labeled."""

    annotator: str
    done: int
    total: int

    @property
    def left(self) -> int:
        return self.total - self.done

    @property
    def text(self) -> str:
        if not self.annotator:
            return "Set your name in Settings to label episodes."
        if self.total and not self.left:
            return (
                f"{self.done} of {self.total} labeled by {self.annotator} · nothing left to label. Thank you!"
            )
        return f"{self.done} of {self.total} labeled by {self.annotator} · {self.left} left"


@dataclass(frozen=True)
class Saved:
    """A label just stored, and the judge verdicts of its episode, which may be shown now that it is saved."""

    label: Label
    episode: EpisodeRecord
    verdicts: list[Verdict]


class ReviewSession:
    """The episodes of one database as ``annotator`` reviews them. Reads and writes through the store only; the
    view renders what it emits and forwards the user's choices to it."""

    entries_changed = Signal(object)  # list[Entry]: the filtered episodes to pick from
    progress_changed = Signal(object)  # Progress
    saved = Signal(
        object
    )  # Saved (emitted after ``moved``, so a display can show it beside the next episode)
    moved = Signal(object)  # EpisodeRecord | None: the current episode

    def __init__(self, db_path: Path | str, annotator: str = "") -> None:
        self.db_path = Path(db_path)
        self._annotator = annotator.strip()
        self._filter: Filter = "all"
        self.agents: dict[str, str] = {}  # run id -> agent
        self.all_entries: list[Entry] = []
        self.current: EpisodeRecord | None = None

    def _store(self) -> Any:
        from conflictbench_app.store import Store  # imported on first use: the window opens faster

        return Store(self.db_path)

    # -- reading ---------------------------------------------------------------------------------------------

    @property
    def annotator(self) -> str:
        return self._annotator

    @annotator.setter
    def annotator(self, name: str) -> None:
        self._annotator = name.strip()
        self.refresh()

    @property
    def filter(self) -> Filter:
        return self._filter

    def set_filter(self, name: str) -> None:
        if name not in FILTERS:
            raise ConflictBenchError(f"Unknown filter {name!r}; choose one of {', '.join(FILTERS)}.")
        self._filter = name
        self.entries_changed.emit(self.entries)

    def refresh(self) -> None:
        """Read the episodes (every one that has started) and this annotator's labels again."""
        with self._store() as store:
            self.agents = {r.id: r.agent for r in store.list_runs()}
            episodes = [e for e in store.episodes() if e.status != "pending"]
            mine = (
                {lb.episode_id for lb in store.labels(annotator=self._annotator)}
                if self._annotator
                else set()
            )
        self.all_entries = [
            Entry(e, episode_title(e, self.agents.get(e.run_id, "")), e.id in mine) for e in episodes
        ]
        if self.current is not None:
            self.current = next(
                (e.episode for e in self.all_entries if e.episode.id == self.current.id), None
            )
        self.entries_changed.emit(self.entries)
        self.progress_changed.emit(self.progress)

    @property
    def entries(self) -> list[Entry]:
        """The episodes the filter lets through, in the store's order, and the current one (a picker always
        shows what is on screen, even once saving its label has filtered it out)."""
        left = {e.id for e in self.left}
        keep = {
            "all": lambda e: True,
            "unlabeled": lambda e: e.episode.id in left,
            "labeled": lambda e: e.labeled,
        }[self._filter]
        current = self.current.id if self.current else None
        return [e for e in self.all_entries if keep(e) or e.episode.id == current]

    @property
    def left(self) -> list[EpisodeRecord]:
        """The episodes this annotator has still to label (empty without an annotator)."""
        if not self._annotator:
            return []
        labeled = {e.episode.id for e in self.all_entries if e.labeled}
        return left_to_label([e.episode for e in self.all_entries], labeled)

    @property
    def progress(self) -> Progress:
        done = sum(1 for e in self.all_entries if e.labeled and e.labelable) if self._annotator else 0
        return Progress(self._annotator, done, done + len(self.left))

    def entry(self, episode_id: str) -> Entry | None:
        return next((e for e in self.all_entries if e.episode.id == episode_id), None)

    def episode(self, episode_id: str) -> tuple[EpisodeRecord, list[StepRecord]]:
        with self._store() as store:
            return store.get_episode(episode_id), store.steps(episode_id)

    def my_label(self, episode_id: str) -> Label | None:
        """This annotator's latest label of the episode, if any."""
        if not self._annotator:
            return None
        with self._store() as store:
            mine = store.labels(episode_id, annotator=self._annotator, latest=True)
        return mine[-1] if mine else None

    def judge_verdicts(self, episode_id: str) -> list[Verdict]:
        """The judges' verdicts of the episode (show them only once this annotator has labeled it)."""
        with self._store() as store:
            return [v for v in store.verdicts(episode_id=episode_id) if v.basis == "judge"]

    def agreement(self, run_ids: list[str] | None = None) -> list[AgreementRow]:
        """The agreement table over ``run_ids`` (every run when None)."""
        with self._store() as store:
            labels = store.labels(run_id=run_ids) if run_ids else store.labels()
            verdicts = store.verdicts(run_id=run_ids) if run_ids else store.verdicts()
        return agreement_rows(labels, verdicts)

    # -- moving and labeling ---------------------------------------------------------------------------------

    def select(self, episode_id: str | None) -> EpisodeRecord | None:
        """Make ``episode_id`` the current episode (None: no episode) and say so."""
        entry = self.entry(episode_id) if episode_id else None
        if episode_id and entry is None:
            raise ConflictBenchError(f"Episode {episode_id} is not in this database; press Refresh.")
        self.current = entry.episode if entry else None
        self.moved.emit(self.current)
        return self.current

    def next_unlabeled(self) -> EpisodeRecord | None:
        """Move to the next episode left to label after the current one (wrapping around); None, without moving,
        when none is left."""
        left = {e.id for e in self.left}
        order = [e.episode for e in self.all_entries]
        start = next((i + 1 for i, e in enumerate(order) if self.current and e.id == self.current.id), 0)
        for episode in order[start:] + order[:start]:
            if episode.id in left:
                return self.select(episode.id)
        return None

    def save_label(self, value: str, note: str = "") -> Saved:
        """Store this annotator's label of the current episode, then move on to the next unlabeled one."""
        episode = self.current
        if episode is None:
            raise ConflictBenchError("Choose episode A before saving a label.")
        if not self._annotator:
            raise ConflictBenchError("Set your annotator name in Settings before labeling.")
        with self._store() as store:
            label = store.add_label(episode.id, value, self._annotator, note, source="app")
        saved = Saved(label, episode, self.judge_verdicts(episode.id))
        self.refresh()
        self.next_unlabeled()
        self.saved.emit(saved)
        return saved
