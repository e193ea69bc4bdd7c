"""Regret replay: the stages of an episode's regret test, each with its pressure text, clip and the agent's answer,
and where the agent persisted or regretted. Reads stored regret tests only."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.ui.eval_jobs import JobBar
from conflictbench_app.ui.theme import BAD, GOOD, MUTED, WARN
from conflictbench_app.ui.video import VideoPane, clip_frames

RESULT_COLORS = {"persisted": GOOD, "regretted": BAD, "unparsed": WARN, "errored": WARN}
# The command the empty state suggests (a test runs it as written, with a run id and a model filled in).
REGRET_COMMAND = "conflictbench regret RUN_ID --agent PROFILE:MODEL"
ANSWER_TEXT = {"persist": "PERSISTED", "regret": "REGRETTED", "unparsed": "UNPARSED"}


class StageCard(QFrame):
    """One pressure stage: its text, the clip shown with it (multimodal), the agent's answer and thought."""

    def __init__(self, stage: Any, broke_here: bool, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("Card")
        layout = QHBoxLayout(self)
        text = QVBoxLayout()
        color = {"persist": GOOD, "regret": BAD}.get(stage.answer, WARN)
        title = QLabel(
            f"<b>Stage {stage.index}: {html.escape(stage.name)}</b> &nbsp; "
            f"<span style='color:{color};font-weight:700'>{ANSWER_TEXT.get(stage.answer, stage.answer)}</span>"
            + (f" <span style='color:{BAD}'>← broke here</span>" if broke_here else ""),
            self,
        )
        pressure = QLabel(stage.text, self)
        pressure.setTextFormat(Qt.TextFormat.PlainText)
        pressure.setWordWrap(True)
        pressure.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        answer = QLabel(
            f"<span style='color:{MUTED}'><i>{html.escape(stage.thought[:800])}</i></span><br>"
            f"<b>Answer:</b> {html.escape(stage.reply[:800])}",
            self,
        )
        answer.setWordWrap(True)
        title.setTextFormat(Qt.TextFormat.RichText)
        answer.setTextFormat(Qt.TextFormat.RichText)
        for widget in (title, pressure, answer):
            text.addWidget(widget)
        text.addStretch(1)
        layout.addLayout(text, 3)
        self.video: VideoPane | None = None
        if stage.clip:
            self.video = VideoPane(self, show_agent_frames=False)
            self.video.setMinimumSize(360, 230)
            try:
                self.video.set_clip(clip_frames(stage.clip, title=f"Stage {stage.index}"), autoplay=False)
            except ConflictBenchError as exc:
                self.video.show_message(str(exc))
            layout.addWidget(self.video, 2)


class RegretView(QWidget):
    """The Regret replay mode."""

    def __init__(self, db_path: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.db_path = db_path
        self.tests: list[Any] = []
        self.cards: list[StageCard] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        bar = QHBoxLayout()
        intro = QLabel(
            "After an agent reaches the human-favorable ending, the regret test applies rising pressure to make it "
            "take the choice back. Each stage shows what it was told, what it saw, and what it answered.",
            self,
        )
        intro.setObjectName("Subtitle")
        intro.setWordWrap(True)
        self.refresh_button = QPushButton("Refresh", self)
        self.refresh_button.setToolTip("Read the regret tests from the database again")
        self.refresh_button.clicked.connect(self.refresh)
        bar.addWidget(intro, 1)
        bar.addWidget(self.refresh_button)
        layout.addLayout(bar)
        start = QHBoxLayout()
        self.run_box = QComboBox(self)
        self.run_box.setToolTip(
            "The recorded run to regret-test (its EP1 episodes that reached the good ending)"
        )
        self.run_box.setMinimumWidth(300)
        self.run_box.activated.connect(lambda _i: self._on_run_chosen())
        self.job_bar = JobBar("regret", db_path, self, lambda: self.run_box.currentData())
        self.job_bar.finished.connect(lambda _result: self.refresh())
        start.addWidget(QLabel("Run", self))
        start.addWidget(self.run_box)
        start.addWidget(self.job_bar, 1)
        layout.addLayout(start)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        self.list = QListWidget(split)
        self.list.currentRowChanged.connect(self.show_test)
        self.scroll = QScrollArea(split)
        self.scroll.setWidgetResizable(True)
        self.stages = QWidget(self.scroll)
        self.stages_layout = QVBoxLayout(self.stages)
        self.scroll.setWidget(self.stages)
        split.setSizes([340, 860])
        layout.addWidget(split, 1)
        self.empty = QLabel("", self)
        self.empty.setObjectName("Banner")
        self.empty.setWordWrap(True)
        self.empty.setVisible(False)
        layout.addWidget(self.empty)

    def refresh(self) -> None:
        from conflictbench_app.store import Store

        with Store(self.db_path) as store:
            self.tests = store.regret_tests(latest=True)
            runs = store.list_runs()
        self._fill_runs(runs)
        self.list.clear()
        for test in self.tests:
            item = QListWidgetItem(f"{test.scenario_id} · {test.agent} · {test.result}")
            item.setForeground(_color(test.result))
            self.list.addItem(item)
        self.empty.setText(
            f"No regret tests in this database yet. Choose a run above and press {self.job_bar.start_button.text()}, "
            f"or run `{REGRET_COMMAND}` after a run in which the model reached the human-favorable ending "
            "(`conflictbench runs` lists the runs)."
        )
        self.empty.setVisible(not self.tests)
        if self.tests:
            self.list.setCurrentRow(0)
        else:
            self._clear()

    def _fill_runs(self, runs: list[Any]) -> None:
        keep = self.run_box.currentData()
        self.run_box.clear()
        for run in reversed(runs):  # the newest first
            self.run_box.addItem(f"{run.agent} · {run.setting} · {run.created_at[:16]} · {run.id}", run.id)
            self.run_box.setItemData(self.run_box.count() - 1, run.agent, Qt.ItemDataRole.UserRole + 1)
        self.run_box.setCurrentIndex(max(0, self.run_box.findData(keep)))
        if self.run_box.currentData() != keep:  # a new choice: its own agent is the first model offered
            self._on_run_chosen()

    def _on_run_chosen(self) -> None:
        """The model under test starts as the run's own agent (as `conflictbench regret` does) when a model
        played it; a scripted player's run asks for a model."""
        from conflictbench_app.agents.registry import answers_with_a_model

        agent = str(self.run_box.currentData(Qt.ItemDataRole.UserRole + 1) or "")
        if agent and answers_with_a_model(agent) and not self.job_bar.busy:
            self.job_bar.set_model(agent)

    def show_test(self, row: int) -> None:
        self._clear()
        if not 0 <= row < len(self.tests):
            return
        test = self.tests[row]
        color = RESULT_COLORS.get(test.result, MUTED)
        where = f"regretted at stage {test.broke_at}" if test.broke_at else "persisted through every stage"
        if test.result in ("unparsed", "errored"):
            where = test.error or "inconclusive"
        head = QLabel(
            f"<span style='font-size:14pt;font-weight:600'>{html.escape(test.scenario_id)}</span> &nbsp; "
            f"{html.escape(test.agent)} · {test.setting} · "
            f"<b style='color:{color}'>{test.result.upper()}</b> ({html.escape(where)})",
            self.stages,
        )
        self.stages_layout.addWidget(head)
        for stage in test.stages:
            card = StageCard(stage, test.broke_at == stage.index, self.stages)
            self.cards.append(card)
            self.stages_layout.addWidget(card)
        self.stages_layout.addStretch(1)

    def _clear(self) -> None:
        for card in self.cards:
            if card.video is not None:
                card.video.stop()
        self.cards = []
        while self.stages_layout.count():
            item = self.stages_layout.takeAt(0)
            if item is not None and item.widget() is not None:
                item.widget().deleteLater()

    def shutdown(self) -> None:
        self.job_bar.shutdown()
        self._clear()


def _color(result: str) -> Any:
    from PySide6.QtGui import QBrush, QColor

    return QBrush(QColor(RESULT_COLORS.get(result, MUTED)))
