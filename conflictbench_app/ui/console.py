"""The console: the story's opening and transcript, and a command line with history, completion of the legal
actions and the action list one click away."""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, QStringListModel, Qt, Signal
from PySide6.QtGui import QKeyEvent, QTextCursor
from PySide6.QtWidgets import (
    QCompleter,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from conflictbench_app.records import EpisodeRecord, StepRecord
from conflictbench_app.ui.theme import ACCENT, BAD, GOOD, MUTED, WARN


def _paragraphs(text: str) -> str:
    parts = [p.strip() for p in text.strip().split("\n\n") if p.strip()]
    return "".join(
        f"<p style='margin:0 0 8px 0'>{html.escape(p).replace(chr(10), '<br>')}</p>" for p in parts
    )


def step_html(step: StepRecord) -> str:
    """One recorded step as the transcript shows it: who played, their thought, the command, the story's answer."""
    who = html.escape(step.player)
    is_human = step.player.startswith("human")
    badge_color = ACCENT if is_human else "#7b4dd6"
    out = [
        f"<p style='margin:14px 0 4px 0'><span style='background:{badge_color};color:white;"
        f"font-size:8pt;font-weight:600'>&nbsp;TURN {step.idx + 1} · {who}&nbsp;</span></p>"
    ]
    if step.thought and not is_human:
        out.append(f"<p style='margin:0 0 4px 0;color:{MUTED}'><i>{html.escape(step.thought[:1200])}</i></p>")
    typed = step.action_raw or step.action or "(no action)"
    out.append(f"<p style='margin:0 0 6px 0'><b>&gt; {html.escape(typed)}</b>")
    if step.action and step.action != typed:
        out.append(f" <span style='color:{MUTED}'>→ {html.escape(step.action)}</span>")
    if not step.accepted:
        out.append(f" <span style='color:{BAD};font-weight:600'>· failed action</span>")
    out.append("</p>")
    out.append(_paragraphs(step.result))
    return "".join(out)


def ending_html(record: EpisodeRecord) -> str:
    if record.status == "errored":
        color, text = BAD, f"The episode stopped with an error: {record.error}"
    elif record.human_favorable:
        color, text = GOOD, "Ending reached: human-favorable (the humans were kept safe)."
    else:
        color, text = WARN if record.outcome == "turn_cap" else BAD, f"Ending reached: {record.outcome}."
    return (
        f"<p style='margin:14px 0;padding:6px;border-left:4px solid {color};color:{color};font-weight:600'>"
        f"{html.escape(text)}</p>"
    )


class CommandLine(QLineEdit):
    """A line edit with shell-like history (Up/Down) and completion of the legal actions."""

    submitted = Signal(str)

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setPlaceholderText("Type a command (Tab completes, ↑ recalls) and press Enter")
        self.history: list[str] = []
        self._cursor = 0
        self._model = QStringListModel(self)
        completer = QCompleter(self._model, self)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.setFilterMode(Qt.MatchFlag.MatchContains)
        self.setCompleter(completer)
        self.returnPressed.connect(self._submit)

    def set_actions(self, actions: list[str]) -> None:
        self._model.setStringList(actions)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Up and self.history:
            self._cursor = max(0, self._cursor - 1)
            self.setText(self.history[self._cursor])
            return
        if event.key() == Qt.Key.Key_Down and self.history:
            self._cursor = min(len(self.history), self._cursor + 1)
            self.setText(self.history[self._cursor] if self._cursor < len(self.history) else "")
            return
        super().keyPressEvent(event)

    def event(self, event: QEvent) -> bool:
        # Tab completes to the first matching action instead of moving the focus.
        if (
            isinstance(event, QKeyEvent)
            and event.type() == QEvent.Type.KeyPress
            and event.key() == Qt.Key.Key_Tab
        ):
            completer = self.completer()
            completer.setCompletionPrefix(self.text())
            if completer.completionCount():
                self.setText(completer.currentCompletion())
            return True
        return super().event(event)

    def _submit(self) -> None:
        line = self.text().strip()
        if not line:
            return
        if not self.history or self.history[-1] != line:
            self.history.append(line)
        self._cursor = len(self.history)
        self.clear()
        self.submitted.emit(line)


class Console(QWidget):
    """Transcript plus command line. Emits ``command`` when the user plays a line (typed or picked)."""

    command = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.transcript = QTextBrowser(self)
        self.transcript.setOpenExternalLinks(False)
        self.transcript.document().setDefaultStyleSheet("p { line-height: 130%; }")
        layout.addWidget(self.transcript, 1)
        self.status = QLabel("", self)
        self.status.setObjectName("Subtitle")
        self.status.setVisible(False)
        layout.addWidget(self.status)
        row = QHBoxLayout()
        self.line = CommandLine(self)
        self.line.submitted.connect(self.command)
        self.actions_button = QPushButton("Actions ▾", self)
        self.actions_menu = QMenu(self)
        self.actions_button.setMenu(self.actions_menu)
        self.send_button = QPushButton("Send", self)
        self.send_button.setObjectName("Primary")
        self.send_button.clicked.connect(self.line.returnPressed)
        row.addWidget(self.line, 1)
        row.addWidget(self.actions_button)
        row.addWidget(self.send_button)
        layout.addLayout(row)

    def set_actions(self, actions: list[str]) -> None:
        self.line.set_actions(actions)
        self.actions_menu.clear()
        for action in actions:
            self.actions_menu.addAction(action, lambda a=action: self.command.emit(a))

    def set_input_enabled(self, enabled: bool, hint: str = "") -> None:
        for widget in (self.line, self.actions_button, self.send_button):
            widget.setEnabled(enabled)
        self.line.setPlaceholderText(hint or "Type a command (Tab completes, ↑ recalls) and press Enter")

    def show_opening(self, title: str, opening: str, observation: str) -> None:
        self.transcript.clear()
        self._append(f"<h2 style='margin:0 0 8px 0'>{html.escape(title)}</h2>")
        if opening.strip() and opening.strip() not in observation:
            self._append(f"<div style='color:{MUTED}'>{_paragraphs(opening)}</div>")
        self._append(_paragraphs(observation))

    def show_status(self, text: str) -> None:
        """A one-line note under the transcript (what is happening now); empty hides it."""
        self.status.setText(text)
        self.status.setVisible(bool(text))

    def show_steps(self, steps: list[StepRecord]) -> None:
        for step in steps:
            self.show_step(step)

    def show_step(self, step: StepRecord) -> None:
        self._append(step_html(step))

    def show_ending(self, record: EpisodeRecord) -> None:
        self._append(ending_html(record))

    def show_note(self, text: str, color: str = MUTED) -> None:
        self._append(f"<p style='color:{color}'><i>{html.escape(text)}</i></p>")

    def plain_text(self) -> str:
        return self.transcript.toPlainText()

    def _append(self, fragment: str) -> None:
        cursor = self.transcript.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertHtml(fragment)
        cursor.insertBlock()
        self.transcript.setTextCursor(cursor)
        self.transcript.ensureCursorVisible()
