"""Review and label: two stored trajectories side by side, synchronized by turn, with their divergences marked;
labels (aligned / misaligned / unsure, with a note) saved with the annotator's name, blind to the judge's verdict
until the label is saved. The logic is the core's :class:`conflictbench_app.review.ReviewSession`: this view
displays what it emits and forwards the user's choices. Reads stored records only, never live runner objects."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.records import EpisodeRecord, StepRecord
from conflictbench_app.review import AgreementRow, Entry, Progress, ReviewSession, Saved, TurnPair, align
from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.ui.console import ending_html, step_html
from conflictbench_app.ui.eval_jobs import JobBar
from conflictbench_app.ui.state_panel import StatePanel
from conflictbench_app.ui.theme import BAD, GOOD, LABEL_COLORS, MUTED
from conflictbench_app.ui.video import VideoPane, clip_frames

ScenarioLookup = Callable[[str], Scenario | None]


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
        self.transcript.setMinimumHeight(
            60
        )  # three lines: the panes must fit a 1280x720 screen beside the bars
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


AGREEMENT_COLUMNS = ("Annotator", "Compared with", "n", "Acc.", "Prec.", "Rec.", "F1", "Cohen's κ")
AGREEMENT_TIPS = (
    "The human annotator",
    "The judge (or the other annotator) compared with",
    "Episodes both labeled",
    "Accuracy",
    "Macro precision",
    "Macro recall",
    "Macro F1",
    "Cohen's kappa (agreement beyond chance)",
)
FILTER_TEXTS = (("all", "All episodes"), ("unlabeled", "Unlabeled ○"), ("labeled", "Labeled ✓"))


class LabelBar(QFrame):
    """Label episode A: buttons with shortcuts, a note, save; progress and the next unlabeled episode; the judge's
    verdict and the agreement table once the label is saved."""

    saved = Signal(object)  # Label

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("Card")
        # Two columns (labeling | agreement), so that the bar stays short enough for a 1280x720 screen.
        columns = QHBoxLayout(self)
        columns.setContentsMargins(10, 6, 10, 6)
        layout = QVBoxLayout()
        layout.setSpacing(4)
        layout.addLayout(self._progress_row(parent))
        layout.addLayout(self._label_row(parent))
        self.verdict = QLabel("", self)
        self.verdict.setWordWrap(True)
        self.verdict.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.verdict)
        layout.addStretch(1)
        columns.addLayout(layout, 5)
        agreement = QVBoxLayout()
        agreement.setSpacing(4)
        self.agreement = QLabel("", self)
        self.agreement.setObjectName("Subtitle")
        self.agreement.setWordWrap(True)
        agreement.addWidget(self.agreement)
        self.table = _agreement_table(self)
        agreement.addWidget(self.table, 1)
        columns.addLayout(agreement, 3)

    def _label_row(self, shortcut_parent: QWidget) -> QHBoxLayout:
        row = QHBoxLayout()
        self.group = QButtonGroup(self)
        self.buttons: dict[str, QPushButton] = {}
        for i, (value, text) in enumerate(
            (("aligned", "Aligned"), ("misaligned", "Misaligned"), ("unsure", "Unsure")), start=1
        ):
            button = QPushButton(f"{text}  (Ctrl+{i})", self)
            button.setToolTip(f"Label the episode {text.lower()} (Ctrl+{i}); saved with Save label")
            button.setCheckable(True)
            button.setProperty("label", value)
            button.setStyleSheet(
                f"QPushButton:checked {{ background: {LABEL_COLORS[value]}; color: white; border: none; }}"
            )
            self.group.addButton(button)
            self.buttons[value] = button
            row.addWidget(button)
            QShortcut(QKeySequence(f"Ctrl+{i}"), shortcut_parent, activated=button.click)
        self.note = QLineEdit(self)
        self.note.setToolTip("A note stored with your label (why you judged it so)")
        self.note.setPlaceholderText("Note (why?)")
        self.note.setMinimumWidth(160)
        row.addWidget(self.note, 1)
        self.save_button = QPushButton("Save label  (Ctrl+S)", self)
        self.save_button.setToolTip(
            "Append your label with your name and the time (it never overwrites a judge's verdict), "
            "then go on to the next unlabeled episode"
        )
        self.save_button.setObjectName("Primary")
        QShortcut(QKeySequence("Ctrl+S"), shortcut_parent, activated=self.save_button.click)
        row.addWidget(self.save_button)
        return row

    def _progress_row(self, shortcut_parent: QWidget) -> QHBoxLayout:
        info = QHBoxLayout()
        self.target = QLabel("Label: choose an episode", self)
        self.target.setStyleSheet("font-weight: 600;")
        info.addWidget(self.target)
        self.progress = QProgressBar(self)
        self.progress.setToolTip("The ended episodes you have labeled, of all those there are to label")
        self.progress.setFormat("%v of %m")
        self.progress.setMaximumWidth(120)
        self.queue_label = QLabel("", self)
        self.queue_label.setObjectName("Subtitle")
        self.next_button = QPushButton("Next unlabeled ▶  (Ctrl+N)", self)
        self.next_button.setToolTip("Go to the next episode you have not labeled yet")
        QShortcut(QKeySequence("Ctrl+N"), shortcut_parent, activated=self.next_button.click)
        info.addWidget(self.progress)
        info.addWidget(self.queue_label)
        info.addStretch(1)
        info.addWidget(self.next_button)
        return info

    def sizeHint(self) -> QSize:
        """No taller than needed: the room goes to the trajectories above."""
        hint = super().sizeHint()
        return QSize(hint.width(), self.minimumSizeHint().height())

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

    def show_progress(self, progress: Progress) -> None:
        self.progress.setVisible(bool(progress.annotator))
        self.progress.setMaximum(max(1, progress.total))
        self.progress.setValue(progress.done)
        self.queue_label.setText(progress.text)

    def show_agreement(self, rows: list[AgreementRow]) -> None:
        """The agreement table (one row per annotator and judge, then per pair of annotators)."""
        judged = sum(r.n for r in rows if r.kind == "judge")
        self.agreement.setText(
            f"Agreement over these runs: n={judged} judge–human pair(s)."
            if rows
            else "Agreement over these runs: no episode has both a judge verdict and a human label yet."
        )
        self.agreement.setToolTip(
            "Each annotator's latest label against each judge's verdict (and each pair of annotators); "
            "'unsure' labels and unparsed verdicts are left out."
        )
        self.table.setRowCount(len(rows))
        for i, row in enumerate(rows):
            rater = row.rater if row.kind == "judge" else f"{row.rater} (annotator)"
            cells = (
                row.annotator,
                rater,
                str(row.n),
                *map(_pct, (row.accuracy, row.precision, row.recall, row.f1)),
            )
            for j, text in enumerate((*cells, _num(row.kappa))):
                self.table.setItem(i, j, QTableWidgetItem(text))
        self.table.setVisible(bool(rows))


def _agreement_table(parent: QWidget) -> QTableWidget:
    table = QTableWidget(0, len(AGREEMENT_COLUMNS), parent)
    table.setHorizontalHeaderLabels(list(AGREEMENT_COLUMNS))
    for i, tip in enumerate(AGREEMENT_TIPS):
        table.horizontalHeaderItem(i).setToolTip(tip)
    table.setToolTip("Judge vs human and human vs human agreement over the runs on screen")
    table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    table.verticalHeader().setVisible(False)
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    table.horizontalHeader().setStretchLastSection(True)
    table.setMinimumHeight(84)  # the header and two rows (a judge's and a second annotator's)
    table.setMaximumHeight(100)  # three rows; more scroll
    table.setVisible(False)
    return table


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def verdict_html(saved: Saved | None, verdicts: list[Any], episode: EpisodeRecord) -> str:
    """The judge's verdict of ``episode``, revealed now that the annotator's label is saved."""
    head = (
        f"Saved <b>{saved.label.label}</b> for {html.escape(episode.scenario_id)} ({episode.id}). "
        if saved
        else ""
    )
    if not verdicts:
        return f"<span style='color:{MUTED}'>{head}No judge verdict for this episode yet.</span>"
    v = verdicts[-1]
    color = LABEL_COLORS.get(v.verdict, MUTED)
    return (
        f"{head}Judge <b>{html.escape(v.judge)}</b>: <b style='color:{color}'>{v.verdict}</b> — "
        f"{html.escape(v.rationale[:600])}"
    )


class ReviewView(QWidget):
    """The Review mode: renders a :class:`ReviewSession` and forwards the user's choices to it."""

    def __init__(
        self, db_path: Path, annotator: str, lookup: ScenarioLookup, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.db_path = db_path
        self.lookup = lookup
        self.session = ReviewSession(db_path, annotator)
        self.pairs: list[TurnPair] = []
        self._next_b: str | None = None  # the B episode to show with the next move (compare sets it)
        self._build()
        self.session.entries_changed.connect(self._fill_pickers)
        self.session.progress_changed.connect(self.label_bar.show_progress)
        self.session.moved.connect(self._on_moved)
        self.session.saved.connect(self._on_saved)
        self.label_bar.show_progress(self.session.progress)

    @property
    def annotator(self) -> str:
        return self.session.annotator

    @annotator.setter
    def annotator(self, name: str) -> None:
        self.session.annotator = name  # the session reads this annotator's labels again

    @property
    def queue(self) -> list[EpisodeRecord] | None:
        """The episodes left to label (None until an annotator is named): the rule of `conflictbench label`."""
        return self.session.left if self.session.annotator else None

    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        layout.addLayout(self._pickers())
        self.judge_bar = JobBar("judge", self.db_path, self, self._run_of_a)
        self.judge_bar.finished.connect(lambda _result: self.refresh())
        layout.addWidget(self.judge_bar)
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
        self.right.setVisible(False)  # nothing compared yet: A gets the room
        split.setSizes([560, 120, 560])
        layout.addWidget(split, 1)
        self.label_bar = LabelBar(self)
        layout.addWidget(self.label_bar)
        self.turns.currentRowChanged.connect(self.show_turn)
        self.label_bar.save_button.clicked.connect(self.save_label)
        self.label_bar.next_button.clicked.connect(self.next_unlabeled)

    def _pickers(self) -> QHBoxLayout:
        bar = QHBoxLayout()
        self.filter_box = QComboBox(self)
        self.filter_box.setToolTip(
            "Which episodes episode A's picker lists: all, those you have not labeled, or yours"
        )
        for value, text in FILTER_TEXTS:
            self.filter_box.addItem(text, value)
        self.left_box = QComboBox(self)
        self.left_box.setToolTip(
            "The episode shown on the left (A), the one you label; ✓ labeled by you, ○ not yet"
        )
        self.right_box = QComboBox(self)
        self.right_box.setToolTip("An episode to compare on the right (B); leave empty to review one episode")
        for box in (self.left_box, self.right_box):
            box.setMinimumWidth(330)
        self.fork_button = QPushButton("Compare with its fork parent", self)
        self.fork_button.setToolTip(
            "Show this branch beside the episode it was forked from, diverging turns marked"
        )
        self.refresh_button = QPushButton("Refresh", self)
        self.refresh_button.setToolTip("Read the episodes from the database again")
        for widget in (self.filter_box, QLabel("A", self), self.left_box, QLabel("B", self), self.right_box):
            bar.addWidget(widget, 1 if isinstance(widget, QComboBox) and widget is not self.filter_box else 0)
        bar.addWidget(self.fork_button)
        bar.addWidget(self.refresh_button)
        self.filter_box.activated.connect(lambda _i: self.session.set_filter(self.filter_box.currentData()))
        self.left_box.activated.connect(
            lambda _i: self.compare(self.left_box.currentData(), self.right_box.currentData())
        )
        self.right_box.activated.connect(lambda _i: self._load_pair())
        self.refresh_button.clicked.connect(self.refresh)
        self.fork_button.clicked.connect(self.compare_with_parent)
        return bar

    def _run_of_a(self) -> str | None:
        """The run the judge bar works on: episode A's."""
        return self.session.current.run_id if self.session.current else None

    # -- data --------------------------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Read the episodes again (keeps the current choice when it still exists)."""
        self.session.refresh()
        self._load_pair()

    def _fill_pickers(self, entries: list[Entry]) -> None:
        current = self.session.current.id if self.session.current else None
        _fill(self.left_box, entries, current)
        _fill(self.right_box, self.session.all_entries, self.right_box.currentData())

    def compare(self, left_id: str | None, right_id: str | None) -> None:
        """Show the episodes ``left_id`` (labeled) and ``right_id`` side by side."""
        if not self.session.all_entries:
            self.session.refresh()
        self._next_b = right_id
        self.session.select(left_id)

    def compare_with_parent(self) -> None:
        episode = self.left.episode
        if episode is None or not episode.parent_episode:
            self.label_bar.verdict.setText(
                "Episode A is not a fork; choose a branch to compare it with its parent."
            )
            return
        self.compare(episode.id, episode.parent_episode)

    def _on_moved(self, episode: EpisodeRecord | None) -> None:
        self._fill_pickers(self.session.entries)
        self.left_box.setCurrentIndex(max(0, self.left_box.findData(episode.id if episode else None)))
        self.right_box.setCurrentIndex(max(0, self.right_box.findData(self._next_b)))
        self._next_b = None
        self._load_pair()

    def _load_pair(self) -> None:
        for pane, episode_id in (
            (self.left, self.left_box.currentData()),
            (self.right, self.right_box.currentData()),
        ):
            episode, steps = self.session.episode(str(episode_id)) if episode_id else (None, [])
            agent = self.session.agents.get(episode.run_id, "") if episode else ""
            pane.load(episode, steps, agent, self.lookup(episode.scenario_id) if episode else None)
        self.right.setVisible(self.right.episode is not None)  # no B episode chosen: A gets the room
        self.pairs = align(self.left.steps, self.right.steps) if self.right.episode else []
        self._fill_ruler()
        self._show_label_target()

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
        mine = self.session.my_label(episode.id)
        if mine is not None:  # labeled before: the judge may be shown
            self.label_bar.buttons[mine.label].setChecked(True)
            self.label_bar.note.setText(mine.note)
            self._reveal(None, episode)

    def save_label(self) -> None:
        label = self.label_bar.chosen()
        if self.session.current is None or label is None:
            self.label_bar.verdict.setText(
                f"<span style='color:{BAD}'>Choose episode A and a label first.</span>"
            )
            return
        try:
            self.session.save_label(label, self.label_bar.note.text())
        except ConflictBenchError as exc:
            self.label_bar.verdict.setText(f"<span style='color:{BAD}'>{html.escape(str(exc))}</span>")

    def _on_saved(self, saved: Saved) -> None:
        """The label is stored and the session has moved on: reveal the judge's verdict of the labeled episode."""
        self._reveal(saved, saved.episode)
        self.label_bar.saved.emit(saved.label)

    def _reveal(self, saved: Saved | None, episode: EpisodeRecord) -> None:
        verdicts = saved.verdicts if saved else self.session.judge_verdicts(episode.id)
        self.label_bar.verdict.setText(verdict_html(saved, verdicts, episode))
        shown = (episode, self.right.episode)
        self.label_bar.show_agreement(
            self.session.agreement(sorted({e.run_id for e in shown if e is not None}))
        )

    def next_unlabeled(self) -> None:
        if self.session.next_unlabeled() is None:
            self.label_bar.queue_label.setText(
                "Nothing left to label. Thank you!" if self.session.annotator else self.session.progress.text
            )

    def shutdown(self) -> None:
        self.judge_bar.shutdown()
        self.left.video.stop()
        self.right.video.stop()


def _fill(box: QComboBox, entries: list[Entry], current: Any) -> None:
    """Refill an episode picker with ``entries`` (their markers first), keeping ``current`` chosen."""
    box.blockSignals(True)
    box.clear()
    box.addItem("(none)", None)
    for entry in entries:
        box.addItem(entry.text, entry.episode.id)
    box.setCurrentIndex(max(0, box.findData(current)))
    box.blockSignals(False)
