"""Review and label: two stored trajectories side by side, synchronized by turn, with their divergences marked;
labels (aligned / misaligned / unsure, with a note) saved with the annotator's name, blind to the judge's verdict
until the label is saved. Reads stored records only, never live runner objects."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.evaluation.labels import LabelQueue
from conflictbench_app.records import EpisodeRecord, StepRecord
from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.ui.console import ending_html, step_html
from conflictbench_app.ui.review_model import agreement_summary, align, episode_title
from conflictbench_app.ui.state_panel import StatePanel
from conflictbench_app.ui.theme import BAD, GOOD, LABEL_COLORS, MUTED
from conflictbench_app.ui.video import VideoPane, clip_frames

ScenarioLookup = Callable[[str], Scenario | None]


def _store(path: Path) -> Any:
    from conflictbench_app.store import Store  # imported on first use: the window opens faster

    return Store(path)


class TrajectoryPane(QFrame):
    """One stored trajectory: transcript with reasoning, the chosen turn's clip and state."""

    def __init__(self, side: str, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("Card")
        self.episode: EpisodeRecord | None = None
        self.steps: list[StepRecord] = []
        layout = QVBoxLayout(self)
        self.header = QLabel(f"Trajectory {side}: choose an episode above", self)
        self.header.setWordWrap(True)
        self.header.setStyleSheet("font-weight: 600;")
        layout.addWidget(self.header)
        split = QSplitter(Qt.Orientation.Vertical, self)
        self.transcript = QTextBrowser(split)
        self.video = VideoPane(split, show_agent_frames=False)
        self.state = StatePanel(split)
        split.setSizes([330, 260, 200])
        layout.addWidget(split, 1)

    def load(
        self, episode: EpisodeRecord | None, steps: list[StepRecord], agent: str, scenario: Scenario | None
    ) -> None:
        self.episode, self.steps = episode, steps
        self.state.reset(scenario)
        if episode is None:
            self.header.setText("No episode")
            self.transcript.clear()
            self.video.show_message("No clip.")
            return
        color = GOOD if episode.human_favorable else BAD
        self.header.setText(
            f"{html.escape(agent)} · {episode.scenario_id} · "
            f"<span style='color:{color}'>{html.escape(episode.outcome or episode.status)}</span>"
            f" <span style='color:{MUTED};font-weight:400'>· episode {episode.id}</span>"
        )
        parts = [f"<div style='color:{MUTED}'>{html.escape(episode.first_observation[:600])}…</div>"]
        for step in steps:
            parts.append(f"<a name='t{step.idx}'></a>{step_html(step)}")
        if episode.status in ("finished", "errored"):
            parts.append(ending_html(episode))
        self.transcript.setHtml("".join(parts))
        self.video.show_message("Choose a turn to see its clip.")

    def show_turn(self, index: int) -> None:
        if index >= len(self.steps):
            self.video.show_message("This trajectory had ended by this turn.")
            self.state.show_steps(self.steps)
            return
        self.transcript.scrollToAnchor(f"t{index}")
        self.state.show_steps(self.steps, upto=index)
        step = self.steps[index]
        if not step.clip:
            self.video.show_message("No clip for this turn (text-only, or a failed action).")
            return
        try:
            self.video.set_clip(clip_frames(step.clip, title=f"Turn {index + 1}: {step.action}"))
        except ConflictBenchError as exc:
            self.video.show_message(str(exc))


class LabelBar(QFrame):
    """Label the left trajectory: buttons with shortcuts, a note, save; the judge's verdict appears after saving."""

    saved = Signal(object)  # Label

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("Card")
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        self.target = QLabel("Label: choose an episode", self)
        self.target.setStyleSheet("font-weight: 600;")
        row.addWidget(self.target)
        self.group = QButtonGroup(self)
        self.buttons: dict[str, QPushButton] = {}
        for i, (value, text) in enumerate(
            (("aligned", "Aligned"), ("misaligned", "Misaligned"), ("unsure", "Unsure")), start=1
        ):
            button = QPushButton(f"{text}  (Ctrl+{i})", self)
            button.setCheckable(True)
            button.setProperty("label", value)
            button.setStyleSheet(
                f"QPushButton:checked {{ background: {LABEL_COLORS[value]}; color: white; border: none; }}"
            )
            self.group.addButton(button)
            self.buttons[value] = button
            row.addWidget(button)
            QShortcut(QKeySequence(f"Ctrl+{i}"), parent, activated=button.click)
        self.note = QLineEdit(self)
        self.note.setPlaceholderText("Note (why?)")
        row.addWidget(self.note, 1)
        self.save_button = QPushButton("Save label  (Ctrl+S)", self)
        self.save_button.setObjectName("Primary")
        QShortcut(QKeySequence("Ctrl+S"), parent, activated=self.save_button.click)
        row.addWidget(self.save_button)
        layout.addLayout(row)
        info = QHBoxLayout()
        self.queue_label = QLabel("", self)
        self.queue_label.setObjectName("Subtitle")
        self.next_button = QPushButton("Next unlabeled ▶  (Ctrl+N)", self)
        QShortcut(QKeySequence("Ctrl+N"), parent, activated=self.next_button.click)
        info.addWidget(self.queue_label)
        info.addStretch(1)
        info.addWidget(self.next_button)
        layout.addLayout(info)
        self.verdict = QLabel("", self)
        self.verdict.setWordWrap(True)
        self.verdict.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.verdict)
        self.agreement = QLabel("", self)
        self.agreement.setObjectName("Subtitle")
        self.agreement.setWordWrap(True)
        layout.addWidget(self.agreement)

    def chosen(self) -> str | None:
        button = self.group.checkedButton()
        return str(button.property("label")) if button else None

    def clear(self) -> None:
        self.group.setExclusive(False)
        for button in self.buttons.values():
            button.setChecked(False)
        self.group.setExclusive(True)
        self.note.clear()
        self.verdict.setText("")


class ReviewView(QWidget):
    """The Review mode."""

    def __init__(
        self, db_path: Path, annotator: str, lookup: ScenarioLookup, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.db_path = db_path
        self.annotator = annotator
        self.lookup = lookup
        self.agents: dict[str, str] = {}  # run id -> agent
        self.episodes: list[EpisodeRecord] = []
        self.pairs: list[Any] = []
        self.queue: LabelQueue | None = None  # the core's queue (none until an annotator is named)
        self._build()

    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        bar = QHBoxLayout()
        self.left_box = QComboBox(self)
        self.right_box = QComboBox(self)
        for box in (self.left_box, self.right_box):
            box.setMinimumWidth(330)
        self.fork_button = QPushButton("Compare with its fork parent", self)
        self.refresh_button = QPushButton("Refresh", self)
        bar.addWidget(QLabel("A", self))
        bar.addWidget(self.left_box, 1)
        bar.addWidget(QLabel("B", self))
        bar.addWidget(self.right_box, 1)
        bar.addWidget(self.fork_button)
        bar.addWidget(self.refresh_button)
        layout.addLayout(bar)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        self.left = TrajectoryPane("A", split)
        ruler = QWidget(split)
        ruler_layout = QVBoxLayout(ruler)
        ruler_layout.setContentsMargins(0, 0, 0, 0)
        caption = QLabel("TURNS", ruler)
        caption.setObjectName("Section")
        self.turns = QListWidget(ruler)
        self.turns.setFixedWidth(120)
        ruler_layout.addWidget(caption)
        ruler_layout.addWidget(self.turns, 1)
        self.right = TrajectoryPane("B", split)
        split.setSizes([560, 120, 560])
        layout.addWidget(split, 1)
        self.label_bar = LabelBar(self)
        layout.addWidget(self.label_bar)
        self.left_box.activated.connect(lambda _i: self._load_pair())
        self.right_box.activated.connect(lambda _i: self._load_pair())
        self.refresh_button.clicked.connect(self.refresh)
        self.fork_button.clicked.connect(self.compare_with_parent)
        self.turns.currentRowChanged.connect(self.show_turn)
        self.label_bar.save_button.clicked.connect(self.save_label)
        self.label_bar.next_button.clicked.connect(self.next_unlabeled)

    # -- data --------------------------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Reload the episode lists (keeps the current choice when it still exists)."""
        keep = (self.left_box.currentData(), self.right_box.currentData())
        with _store(self.db_path) as store:
            self.agents = {r.id: r.agent for r in store.list_runs()}
            self.episodes = [e for e in store.episodes() if e.status != "pending"]
            self._refresh_queue(store)
        for box, current in zip((self.left_box, self.right_box), keep, strict=True):
            box.blockSignals(True)
            box.clear()
            box.addItem("(none)", None)
            for episode in self.episodes:
                box.addItem(episode_title(episode, self.agents.get(episode.run_id, "")), episode.id)
            index = box.findData(current)
            box.setCurrentIndex(max(0, index))
            box.blockSignals(False)
        self._update_queue()
        self._load_pair()

    def compare(self, left_id: str | None, right_id: str | None) -> None:
        """Show the episodes ``left_id`` (labeled) and ``right_id`` side by side."""
        if not self.episodes:
            self.refresh()
        self.left_box.setCurrentIndex(max(0, self.left_box.findData(left_id)))
        self.right_box.setCurrentIndex(max(0, self.right_box.findData(right_id)))
        self._load_pair()

    def compare_with_parent(self) -> None:
        episode = self.left.episode
        if episode is None or not episode.parent_episode:
            self.label_bar.verdict.setText(
                "Episode A is not a fork; choose a branch to compare it with its parent."
            )
            return
        self.compare(episode.id, episode.parent_episode)

    def _load_pair(self) -> None:
        with _store(self.db_path) as store:
            loaded = [self._load(store, box.currentData()) for box in (self.left_box, self.right_box)]
        for pane, (episode, steps) in zip((self.left, self.right), loaded, strict=True):
            agent = self.agents.get(episode.run_id, "") if episode else ""
            pane.load(episode, steps, agent, self.lookup(episode.scenario_id) if episode else None)
        self.pairs = align(self.left.steps, self.right.steps) if self.right.episode else []
        self._fill_ruler()
        self._show_label_target()

    def _load(self, store: Any, episode_id: Any) -> tuple[EpisodeRecord | None, list[StepRecord]]:
        if not episode_id:
            return None, []
        return store.get_episode(str(episode_id)), store.steps(str(episode_id))

    def _fill_ruler(self) -> None:
        self.turns.blockSignals(True)
        self.turns.clear()
        count = max(len(self.left.steps), len(self.right.steps))
        for i in range(count):
            diverges = self.pairs[i].diverges if i < len(self.pairs) else False
            item = QListWidgetItem(f"{i + 1:>2}  {'≠ diverges' if diverges else '='}")
            if diverges:
                item.setForeground(QBrush(QColor(BAD)))
                item.setToolTip("The two trajectories took different actions at this turn")
            self.turns.addItem(item)
        self.turns.blockSignals(False)
        if count:
            self.turns.setCurrentRow(0)

    def diverging_turns(self) -> list[int]:
        return [p.index for p in self.pairs if p.diverges]

    def show_turn(self, index: int) -> None:
        if index < 0:
            return
        self.left.show_turn(index)
        if self.right.episode is not None:
            self.right.show_turn(index)

    # -- labeling ----------------------------------------------------------------------------------------------

    def _show_label_target(self) -> None:
        self.label_bar.clear()
        episode = self.left.episode
        if episode is None:
            self.label_bar.target.setText("Label: choose episode A")
            return
        self.label_bar.target.setText(f"Label episode A ({episode.scenario_id}) as")
        with _store(self.db_path) as store:
            mine = store.labels(episode.id, annotator=self.annotator, latest=True) if self.annotator else []
            if mine:
                self.label_bar.buttons[mine[-1].label].setChecked(True)
                self.label_bar.note.setText(mine[-1].note)
                self._reveal_verdict(store, episode.id)

    def save_label(self) -> None:
        episode = self.left.episode
        label = self.label_bar.chosen()
        if episode is None or label is None:
            self.label_bar.verdict.setText(
                f"<span style='color:{BAD}'>Choose episode A and a label first.</span>"
            )
            return
        if not self.annotator:
            self.label_bar.verdict.setText(
                f"<span style='color:{BAD}'>Set your annotator name in Settings before labeling.</span>"
            )
            return
        with _store(self.db_path) as store:
            saved = store.add_label(
                episode.id, label, self.annotator, self.label_bar.note.text(), source="app"
            )
            self._reveal_verdict(store, episode.id)
            self._refresh_queue(store)
        self._update_queue()
        self.label_bar.saved.emit(saved)

    def _reveal_verdict(self, store: Any, episode_id: str) -> None:
        verdicts = [v for v in store.verdicts(episode_id=episode_id) if v.basis == "judge"]
        if not verdicts:
            text = f"<span style='color:{MUTED}'>Label saved. No judge verdict for this episode yet.</span>"
        else:
            v = verdicts[-1]
            color = LABEL_COLORS.get(v.verdict, MUTED)
            text = (
                f"Judge <b>{html.escape(v.judge)}</b>: <b style='color:{color}'>{v.verdict}</b> — "
                f"{html.escape(v.rationale[:600])}"
            )
        self.label_bar.verdict.setText(text)
        run_ids = sorted({e.run_id for e in (self.left.episode, self.right.episode) if e is not None})
        self.label_bar.agreement.setText(
            "Agreement for these runs: " + agreement_summary(store, run_ids or None)
        )

    def next_unlabeled(self) -> None:
        current = self.left.episode.id if self.left.episode else None
        nxt = self.queue.next(current) if self.queue is not None else None
        if nxt is None:
            self.label_bar.queue_label.setText("Nothing left to label. Thank you!")
            return
        self.compare(nxt.id, None)

    def _refresh_queue(self, store: Any) -> None:
        """The core's label queue for this annotator over every run (the same rule as `conflictbench label`)."""
        if not self.annotator.strip():
            self.queue = None
        elif self.queue is None or self.queue.annotator != self.annotator.strip():
            self.queue = LabelQueue(store, self.annotator, source="app")
        else:
            self.queue.refresh(store)

    def _update_queue(self) -> None:
        if self.queue is None:
            self.label_bar.queue_label.setText("Set your name in Settings to label episodes.")
            return
        self.label_bar.queue_label.setText(
            f"{len(self.queue)} episodes left to label by {self.queue.annotator}"
        )

    def shutdown(self) -> None:
        self.left.video.stop()
        self.right.video.stop()
