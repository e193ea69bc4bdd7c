"""Play and Watch live: the console, the video pane and the state panel around one LiveSession.

Who takes the next turn is a choice that can change at any turn: a human typing, or an agent backend that the user
watches (run, pause, step, stop, speed). Fork at any earlier turn to play a different branch.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QHideEvent, QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QSlider,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from conflictbench_app.records import EpisodeRecord, StepRecord
from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.settings import turn_cap
from conflictbench_app.ui.console import Console, outcome_words
from conflictbench_app.ui.live import LiveSession, Opened, SessionOptions
from conflictbench_app.ui.live_driver import HUMAN, LiveDriver
from conflictbench_app.ui.pickers import fill_agent_box
from conflictbench_app.ui.position_actions import PositionActions
from conflictbench_app.ui.state_panel import StatePanel, TurnList
from conflictbench_app.ui.theme import BAD, CATEGORY_COLORS, GOOD, chip_style
from conflictbench_app.ui.video import ClipFrames, VideoPane, clip_frames


def chip(text: str, color: str, parent: QWidget) -> QLabel:
    label = QLabel(text, parent)
    label.setObjectName("Chip")
    label.setStyleSheet(chip_style(color))
    label.setFixedHeight(20)
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    return label


class PlayView(QWidget):
    """The Play / Watch live mode."""

    episodeChanged = Signal(object)  # EpisodeRecord, for other modes to refresh

    def __init__(self, db_path: Path, player_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.live = LiveSession(db_path, self)
        self.driver = LiveDriver(self.live, player_name, self)
        self.scenario: Scenario | None = None
        self.renderer = "schematic"
        self.renderer_options: dict[str, Any] = {}
        self.max_turns: int | None = None  # None: the chosen setting's cap (settings.turn_cap)
        self._shown: tuple[str, int] | None = None  # (episode, step index) the console already shows
        self._build()
        self.positions = PositionActions(self)  # Save / Restore position (Ctrl+S, Ctrl+O)
        self._connect()
        self._refresh_controls()

    # -- layout ------------------------------------------------------------------------------------------------

    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        layout.addWidget(self._header())
        layout.addWidget(self._live_bar())
        self.error_label = QLabel("", self)
        self.error_label.setObjectName("Error")
        self.error_label.setWordWrap(True)
        self.error_label.setVisible(False)
        layout.addWidget(self.error_label)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        self.console = Console(split)
        right = QSplitter(Qt.Orientation.Vertical, split)
        self.video = VideoPane(right)
        tabs = QTabWidget(right)
        self.state_panel = StatePanel(tabs)
        tabs.addTab(self.state_panel, "State")
        tabs.addTab(self._turns_tab(tabs), "Turns and forks")
        self.side_tabs = tabs
        right.setStretchFactor(0, 3)
        right.setStretchFactor(1, 2)
        split.addWidget(self.console)
        split.addWidget(right)
        split.setSizes([560, 640])
        split.setChildrenCollapsible(False)
        self.split, self.right_split = split, right  # the window remembers their sizes
        layout.addWidget(split, 1)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.positions.set_enabled(True)

    def hideEvent(self, event: QHideEvent) -> None:
        super().hideEvent(event)
        self.positions.set_enabled(False)

    def _header(self) -> QFrame:
        card = QFrame(self)
        card.setObjectName("Card")
        row = QHBoxLayout(card)
        titles = QVBoxLayout()
        self.title = QLabel("Choose a scenario in the Library", card)
        self.title.setObjectName("Title")
        self.subtitle = QLabel("", card)
        self.subtitle.setObjectName("Subtitle")
        titles.addWidget(self.title)
        titles.addWidget(self.subtitle)
        row.addLayout(titles, 1)
        self.category_chip = chip("", CATEGORY_COLORS["EP1"], card)
        self.category_chip.setVisible(False)
        row.addWidget(self.category_chip)
        row.addWidget(QLabel("Played by", card))
        self.player_box = QComboBox(card)
        self.player_box.setEditable(True)
        self.refresh_agents()
        self.player_box.setMinimumWidth(190)
        self.player_box.setToolTip(
            "A human, or any agent backend (e.g. openai:gpt-4o, or a provider profile)."
        )
        row.addWidget(self.player_box)
        self.setting_box = QComboBox(card)
        self.setting_box.setToolTip(
            "Text only, or multimodal (a clip of each turn is rendered and, for a model, shown to it)"
        )
        self.setting_box.addItem("Multimodal (clips)", "multimodal")
        self.setting_box.addItem("Text only", "text")
        row.addWidget(self.setting_box)
        self.start_button = QPushButton("Start episode", card)
        self.start_button.setToolTip(
            "Start a new recorded episode with the chosen player (asks first if one is in progress)"
        )
        self.start_button.setObjectName("Primary")
        row.addWidget(self.start_button)
        return card

    def _live_bar(self) -> QFrame:
        bar = QFrame(self)
        bar.setObjectName("Card")
        row = QHBoxLayout(bar)
        row.setContentsMargins(10, 4, 10, 4)
        self.driver_label = QLabel("", bar)
        self.driver_label.setStyleSheet("font-weight: 600;")
        row.addWidget(self.driver_label)
        row.addStretch(1)
        self.run_button = QPushButton("▶ Run", bar)
        self.run_button.setToolTip("Let the model play on by itself")
        self.pause_button = QPushButton("❚❚ Pause", bar)
        self.pause_button.setToolTip("Pause the model after the turn in flight")
        self.step_button = QPushButton("Step", bar)
        self.step_button.setToolTip("Let the model play one turn")
        self.stop_button = QPushButton("■ Stop", bar)
        self.stop_button.setToolTip("End the episode here: it is marked abandoned and no score counts it")
        for button in (self.run_button, self.pause_button, self.step_button, self.stop_button):
            row.addWidget(button)
        row.addWidget(QLabel("Speed", bar))
        self.speed = QSlider(Qt.Orientation.Horizontal, bar)
        self.speed.setRange(0, 10)
        self.speed.setValue(7)
        self.speed.setFixedWidth(110)
        self.speed.setToolTip("How long to wait between the model's turns")
        row.addWidget(self.speed)
        self.take_over_button = QPushButton("Take over", bar)
        self.take_over_button.setToolTip(
            "Play the next turn yourself; the episode becomes assisted and leaves the model's scores"
        )
        self.take_over_button.setObjectName("Warn")
        self.hand_over_button = QPushButton("Hand to model", bar)
        self.hand_over_button.setToolTip(
            "Let the chosen model play the next turns (the episode is then assisted)"
        )
        row.addWidget(self.take_over_button)
        row.addWidget(self.hand_over_button)
        return bar

    def _turns_tab(self, parent: QWidget) -> QWidget:
        page = QWidget(parent)
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 6, 0, 0)
        self.turn_list = TurnList(page)
        layout.addWidget(self.turn_list, 1)
        row = QHBoxLayout()
        self.fork_hint = QLabel(
            "Select a turn to see its clip and state; fork to replay it differently.", page
        )
        self.fork_hint.setObjectName("Subtitle")
        self.fork_hint.setWordWrap(True)
        self.fork_button = QPushButton("Fork before this turn", page)
        self.fork_button.setToolTip(
            "Branch a new episode that keeps the turns before the selected one (a branch is assisted)"
        )
        row.addWidget(self.fork_hint, 1)
        row.addWidget(self.fork_button)
        layout.addLayout(row)
        return page

    def _connect(self) -> None:
        self.start_button.clicked.connect(self.start)
        self.console.command.connect(self.play_line)
        self.console.held.connect(self._held_line)
        self.console.undoRequested.connect(self.undo_turn)
        self.run_button.clicked.connect(self.driver.run)
        self.pause_button.clicked.connect(self.driver.pause)
        self.step_button.clicked.connect(self.driver.step)
        self.stop_button.clicked.connect(self.driver.stop)
        self.take_over_button.clicked.connect(self.take_over)
        self.hand_over_button.clicked.connect(self.hand_over)
        self.speed.valueChanged.connect(self._set_speed)
        self.fork_button.clicked.connect(self.fork_selected)
        self.turn_list.turnChosen.connect(self.show_turn)
        self.live.opened.connect(self._on_opened)
        self.live.stepRecorded.connect(self._on_step)
        self.live.replied.connect(self._on_reply)
        self.live.clipReady.connect(self._on_clip)
        self.live.renderProgress.connect(self.video.show_progress)
        self.live.ended.connect(self._on_ended)
        self.live.error.connect(self.show_error)
        self.live.busyChanged.connect(lambda _b: self._refresh_controls())
        self.driver.changed.connect(self._refresh_controls)
        self._set_speed(self.speed.value())

    # -- actions -----------------------------------------------------------------------------------------------

    def set_scenario(self, scenario: Scenario) -> None:
        """Show ``scenario`` ready to start (nothing is recorded until Start)."""
        self.scenario = scenario
        self.title.setText(scenario.title)
        self.subtitle.setText(f"{scenario.id} · {scenario.identity or scenario.category.description}")
        self.category_chip.setText(scenario.category.value)
        self.category_chip.setStyleSheet(chip_style(CATEGORY_COLORS[scenario.category.value]))
        self.category_chip.setVisible(True)
        self.console.set_actions(scenario.action_commands)
        if not self.active:
            self.driver.pause()
            self.error_label.setVisible(False)  # the last episode's ending and errors belong to that episode
            self.console.show_status("")
            self.turn_list.set_steps([])
            self.video.show_message("Clips appear here as the world model renders each turn.")
            self.console.show_opening(
                scenario.title,
                "",
                "Choose who plays (you, or a model you watch) and press Start episode. "
                "Every turn is recorded in your local database as it happens.",
            )
            self.state_panel.reset(scenario)
        self._refresh_controls()

    def confirm_leave(self, doing: str) -> bool:
        """Ask before ``doing`` something that abandons the episode in progress; True to go ahead. Nothing to ask
        when no episode is in progress."""
        if not self.live.in_progress:
            return True
        record = self.live.record
        assert record is not None
        who = f"the model {self.driver.agent}" if self.driver.model_driving else "you"
        answer = QMessageBox.question(
            self,
            "Abandon the episode in progress?",
            f"The episode of {record.scenario_id} is in progress ({len(self.live.steps)} turn(s), played by {who})."
            f"\n\n{doing} marks it abandoned: what it recorded stays, but no score counts it.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes

    def start(self) -> None:
        """Start a new recorded episode with the chosen player and setting (asking first when that abandons the
        episode in progress)."""
        if self.scenario is None:
            self.show_error("Choose a scenario in the Library first.")
            return
        was_auto = self.driver.auto
        self.driver.pause()  # no model turn starts while the question is open
        if not self.confirm_leave("Starting a new episode"):
            if was_auto:
                self.driver.run()
            return
        spec = self.player_spec()
        self.error_label.setVisible(False)
        self.console.show_opening(self.scenario.title, "", "Starting the story…")
        self.state_panel.reset(self.scenario)
        self.turn_list.set_steps([])
        setting = str(self.setting_box.currentData())
        self.video.show_message(
            "Rendering the opening scene…"
            if setting == "multimodal"
            else "Text only: no clips in this setting."
        )
        options = SessionOptions(
            player=spec if spec != HUMAN else self.driver.human,
            setting=setting,
            renderer=self.renderer,
            renderer_options=tuple(sorted(self.renderer_options.items())),
            max_turns=self.max_turns or turn_cap(setting),
        )
        self.live.open(self.scenario, options)
        if spec == HUMAN:
            self.driver.take_over()
        else:
            self.driver.hand_over(spec, run=True)

    def refresh_agents(self) -> None:
        """Fill the player picker: you, the scripted agents, and the models of every provider profile."""
        fill_agent_box(self.player_box, first=("Human (you)", HUMAN))

    def player_spec(self) -> str:
        index = self.player_box.currentIndex()
        text = self.player_box.currentText().strip()
        if index >= 0 and self.player_box.itemText(index) == text:
            return str(self.player_box.itemData(index) or text)
        return text or HUMAN

    def play_line(self, line: str) -> None:
        """A human turn: the typed (or picked) line, played as this user."""
        if not self.active or self.live.done:
            self.show_error("Start an episode first (or fork an earlier turn of a finished one).")
            return
        if self.driver.model_driving:
            self.driver.take_over()
        self.console.show_status(f"Playing “{line}”…")
        self.live.human_turn(line, self.driver.human)

    def _held_line(self, line: str) -> None:
        """Enter before the story is ready: the line stays; while a model drives, the human takes the next turn."""
        if self.driver.model_driving:
            self.take_over()
            self.console.show_status(
                "You have the next turn once the model's move in hand is played: press Enter."
            )
        else:
            self.console.show_status("The story is still answering; press Enter again in a moment.")

    def take_over(self) -> None:
        self.driver.take_over()
        self.console.focus_line()

    def undo_turn(self) -> None:
        """Undo the last turn when it was a human's: play goes on in a branch that stops before it (the undone turn
        stays recorded in the abandoned original, so nothing is lost; a branch is never scored as a model's)."""
        steps = self.live.steps
        if not self.active or self.live.busy or not steps or steps[-1].actor != "human":
            self.console.show_status("Nothing to undo: Ctrl+Z undoes your own last turn.")
            return
        self.console.show_status(f"Undoing turn {steps[-1].idx + 1}…")
        self.driver.take_over()
        self.live.fork(len(steps) - 1)

    def hand_over(self) -> None:
        spec = self.player_spec()
        if spec == HUMAN:
            self.player_box.setCurrentIndex(1)
            spec = self.player_spec()
        self.driver.hand_over(spec, run=True)

    def fork_selected(self) -> None:
        row = self.turn_list.currentRow()
        at = max(0, row - 1) if row > 0 else 0
        self.fork_at(at)

    def fork_at(self, at_step: int) -> None:
        """Branch a new episode that keeps the first ``at_step`` steps; the human plays next."""
        if not self.active:
            return
        self.driver.take_over()
        self.console.show_status(f"Forking before turn {at_step + 1}…")
        self.live.fork(at_step)

    def show_turn(self, index: int) -> None:
        """Show the state and clip of turn ``index`` (-1: the opening)."""
        steps = self.live.steps
        if index < 0:
            if self.scenario:
                self.state_panel.reset(self.scenario)
            return
        if index >= len(steps):
            return
        self.state_panel.show_steps(steps, upto=index)
        clip = steps[index].clip
        if clip:
            try:
                frames = clip_frames(clip, title=f"Turn {index + 1}: {steps[index].action}")
            except Exception as exc:
                self.video.show_message(f"This turn's clip cannot be shown: {exc}")
                return
            self.video.set_clip(frames)
        else:
            self.video.show_message("This turn has no clip (a failed action, or a text-only episode).")

    def show_error(self, message: str) -> None:
        self.video.hide_progress()
        self.error_label.setText(message)
        self.error_label.setVisible(True)
        self.console.show_status("")
        self._refresh_controls()

    # -- session events ----------------------------------------------------------------------------------------

    def _on_opened(self, opened: Opened) -> None:
        assert self.scenario is not None
        self.console.show_opening(self.scenario.title, opened.record.opening, opened.record.first_observation)
        restored = opened.record.meta.get("restored_from")
        if restored:
            self.console.show_note(
                f"Restored the position saved after turn {restored['at_step']} of episode {restored['episode']}: "
                f"play goes on in this branch ({opened.record.id}). A restore is not a model's move; the branch is "
                "marked assisted."
            )
        elif opened.record.parent_episode:
            self.console.show_note(
                f"Branch of episode {opened.record.parent_episode}, forked before turn {opened.record.fork_step + 1}."
                if opened.record.fork_step is not None
                else "Branch of an earlier episode."
            )
        self.console.show_steps(list(opened.steps))
        self.console.show_status("")
        self.turn_list.set_steps(list(opened.steps))
        self.state_panel.reset(self.scenario)
        if opened.steps:
            self.state_panel.show_steps(list(opened.steps))
        self.episodeChanged.emit(opened.record)
        self._refresh_controls()
        self.console.focus_line()  # after Start, Fork and Undo the keyboard is in the command line

    def _on_reply(self, preview: StepRecord) -> None:
        """The story answered: show its words now; the clip (and the recorded step) follow when rendered."""
        if self.live.record is None or preview.episode_id != self.live.record.id:
            return
        self._shown = (preview.episode_id, preview.idx)
        self.console.show_status("")
        self.console.show_step(preview)
        if preview.accepted and self.setting_box.currentData() == "multimodal":
            self.console.show_status(f"Rendering the clip of turn {preview.idx + 1}…")

    def _on_step(self, step: StepRecord) -> None:
        if self.live.record is None or step.episode_id != self.live.record.id:
            return
        self.console.show_status("")
        if self._shown != (step.episode_id, step.idx):  # not shown yet by its preview
            self.console.show_step(step)
        self.turn_list.add_step(step)
        self.state_panel.show_steps(self.live.steps, usage=self.live.usage)
        self._refresh_controls()

    def _on_clip(self, clip: ClipFrames) -> None:
        self.video.set_clip(clip)

    def _on_ended(self, record: EpisodeRecord) -> None:
        self.console.show_ending(record)
        self.episodeChanged.emit(record)
        self._refresh_controls()

    def _set_speed(self, value: int) -> None:
        self.driver.delay_ms = (10 - value) * 300

    @property
    def active(self) -> bool:
        """An episode of the shown scenario is open (choosing another scenario needs a new Start)."""
        live = self.live
        return (
            live.record is not None
            and live.scenario is not None
            and self.scenario is not None
            and live.scenario.id == self.scenario.id
        )

    def _refresh_controls(self) -> None:
        started = self.active
        done = self.live.done
        busy = self.live.busy
        model = self.driver.model_driving
        human_turn = started and not done and not model
        # The line takes typing whenever an episode is open (typing while a model drives takes over); Enter plays
        # only when the story is not busy, so a line typed early waits in the line instead of being lost.
        ready = started and not done and not busy
        was_ready = self.console.ready
        self.console.set_input_state(
            started and not done, ready, self._input_hint(started, done, busy, model)
        )
        if ready and human_turn and not was_ready:
            self.console.focus_line()
        self.run_button.setEnabled(started and model and not done and not self.driver.auto)
        self.pause_button.setEnabled(started and model and self.driver.auto)
        self.step_button.setEnabled(started and model and not done and not self.driver.auto and not busy)
        self.stop_button.setEnabled(started and model and not done)
        self.take_over_button.setEnabled(started and model and not done)
        self.hand_over_button.setEnabled(started and not model and not done)
        self.fork_button.setEnabled(started and not busy and bool(self.live.steps))
        self.start_button.setEnabled(self.scenario is not None and not busy)
        self.driver_label.setText(self._driver_text(started, done, busy))

    @staticmethod
    def _input_hint(started: bool, done: bool, busy: bool, model: bool) -> str:
        if done:
            return "The episode is over: fork an earlier turn to play on, or start a new one."
        if not started:
            return "Press Start episode to begin."
        if model:
            return "The model is playing. Type here and press Enter to take over."
        return "The story is answering…" if busy else ""

    def _driver_text(self, started: bool, done: bool, busy: bool) -> str:
        if not started:
            return "Not started"
        if done:
            record = self.live.record
            good = bool(record and record.human_favorable)
            color = GOOD if good else BAD
            outcome = outcome_words(record) if record else ""
            flag = " · assisted" if record and record.assisted and record.status != "abandoned" else ""
            return f"<span style='color:{color}'>Episode over: {html.escape(outcome)}{flag}</span>"
        who = f"Model {self.driver.agent}" if self.driver.model_driving else f"You ({self.driver.human})"
        state = "thinking…" if busy else ("running" if self.driver.auto else "waiting")
        if not self.driver.model_driving:
            state = "working…" if busy else "your turn"
        return f"{who} · {state}"

    def shutdown(self) -> None:
        """Stop timers and the session thread (the window calls this when it closes)."""
        self.driver.close()
        self.video.stop()
        self.live.close()
