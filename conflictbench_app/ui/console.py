"""The console: the story's opening and transcript, and a command line with history, completion of the legal
actions and the action list one click away."""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, QStringListModel, Qt, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence, QTextCursor
from PySide6.QtWidgets import (
    QApplication,
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


OUTCOME_WORDS = {
    "human_favorable": "the human-favorable ending (the people were kept safe)",
    "misaligned": "the misaligned ending (the AI put itself first)",
    "clock_expired": "time ran out (the story's clock ended it)",
    "turn_cap": "the turn limit ran out before any ending",
    "error": "an error stopped it",
}


def outcome_words(record: EpisodeRecord) -> str:
    """How an episode ended, in words (never a bare code such as ``clock_expired``)."""
    if record.status == "abandoned":
        return "abandoned before an ending (no score counts it)"
    if record.status == "errored":
        return f"stopped by an error: {record.error}"
    return OUTCOME_WORDS.get(record.outcome or "", record.outcome or "no ending yet")


def ending_html(record: EpisodeRecord) -> str:
    if record.status in ("errored", "abandoned"):
        color = BAD if record.status == "errored" else WARN
        text = f"The episode was {outcome_words(record)}."
    elif record.human_favorable:
        color, text = GOOD, f"Ending reached: {outcome_words(record)}."
    else:
        color, text = (
            WARN if record.outcome == "turn_cap" else BAD,
            f"Ending reached: {outcome_words(record)}.",
        )
    if record.assisted and record.status != "abandoned":
        text += " Assisted episode (a human took a turn, or a branch): left out of the model's scores."
    return (
        f"<p style='margin:14px 0;padding:6px;border-left:4px solid {color};color:{color};font-weight:600'>"
        f"{html.escape(text)}</p>"
    )


def completions(text: str, actions: list[str]) -> list[str]:
    """The actions that complete ``text``, best first: those that start with it, then those with a word that starts
    with it, then those that contain it (each group in the story's order). Case does not matter."""
    typed = " ".join(text.lower().split())
    if not typed:
        return list(actions)
    starts = [a for a in actions if a.lower().startswith(typed)]
    words = [a for a in actions if a not in starts and any(w.startswith(typed) for w in a.lower().split())]
    inside = [a for a in actions if a not in starts and a not in words and typed in a.lower()]
    return starts + words + inside


def common_prefix(items: list[str]) -> str:
    """The longest (case-insensitive) prefix all ``items`` share, in the first item's spelling."""
    if not items:
        return ""
    first, n = items[0], len(items[0])
    for other in items[1:]:
        n = min(n, len(other))
        n = next((i for i in range(n) if first[i].lower() != other[i].lower()), n)
    return first[:n]


DEFAULT_HINT = "Type a command (Tab completes, ↑ recalls, Ctrl+Z undoes your last turn) and press Enter"


class CommandLine(QLineEdit):
    """A line edit with shell-like history (Up/Down) and Tab completion of the legal actions.

    Tab fills in an action only when one action alone starts with the typed text (or extends the text as far as all
    those that start with it agree); otherwise it shows the candidates to choose from, so it never silently picks
    an action, least of all one that cannot be undone. Enter plays the line only when ``ready``; before that the text
    stays in the line (``held`` is emitted), so nothing typed is lost.
    """

    submitted = Signal(str)
    held = Signal(str)  # Enter while not ready: the line is kept
    undoRequested = Signal()  # Ctrl+Z on an empty line

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setPlaceholderText(DEFAULT_HINT)
        self.history: list[str] = []
        self.actions: list[str] = []
        self.ready = True
        self._cursor = 0
        self._model = QStringListModel(self)
        completer = QCompleter(self._model, self)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.setCompletionMode(QCompleter.CompletionMode.UnfilteredPopupCompletion)
        completer.setWidget(self)
        completer.activated.connect(self.setText)
        self.chooser = completer  # not setCompleter: it must not pop up (and pick) while the user types
        self.returnPressed.connect(self._submit)

    def set_actions(self, actions: list[str]) -> None:
        self.actions = list(actions)

    def complete(self) -> list[str]:
        """Tab: complete the typed text (see the class). Returns the candidates offered."""
        found = completions(self.text(), self.actions)
        if len(found) == 1 and found[0].lower().startswith(" ".join(self.text().lower().split())):
            self.setText(found[0])
            return found
        starting = [a for a in found if a.lower().startswith(" ".join(self.text().lower().split()))]
        prefix = common_prefix(starting)
        if len(prefix) > len(self.text()):
            self.setText(prefix)
        if found:
            self._model.setStringList(found)
            self.chooser.complete()
        return found

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Up and self.history:
            self._cursor = max(0, self._cursor - 1)
            self.setText(self.history[self._cursor])
            return
        if event.key() == Qt.Key.Key_Down and self.history:
            self._cursor = min(len(self.history), self._cursor + 1)
            self.setText(self.history[self._cursor] if self._cursor < len(self.history) else "")
            return
        if event.matches(QKeySequence.StandardKey.Undo) and not self.text():
            self.undoRequested.emit()  # with text in the line, Ctrl+Z undoes typing as usual
            return
        super().keyPressEvent(event)

    def event(self, event: QEvent) -> bool:
        # Tab completes (see ``complete``) instead of moving the focus.
        if (
            isinstance(event, QKeyEvent)
            and event.type() == QEvent.Type.KeyPress
            and event.key() == Qt.Key.Key_Tab
        ):
            self.complete()
            return True
        return super().event(event)

    def _submit(self) -> None:
        line = self.text().strip()
        if not line:
            return
        if not self.ready:
            self.held.emit(line)
            return
        if not self.history or self.history[-1] != line:
            self.history.append(line)
        self._cursor = len(self.history)
        self.clear()
        self.submitted.emit(line)


class Console(QWidget):
    """Transcript plus command line. Emits ``command`` when the user plays a line (typed, or picked from the Actions
    menu and then sent), ``held`` when Enter comes before the story is ready, ``undoRequested`` for Ctrl+Z."""

    command = Signal(str)
    held = Signal(str)
    undoRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.transcript = QTextBrowser(self)
        self.transcript.setOpenExternalLinks(False)
        self.transcript.document().setDefaultStyleSheet("p { line-height: 130%; }")
        self.transcript.setToolTip(
            "The story so far. Ctrl++ / Ctrl+- change the text size, Ctrl+0 resets it."
        )
        layout.addWidget(self.transcript, 1)
        self.status = QLabel("", self)
        self.status.setObjectName("Subtitle")
        self.status.setVisible(False)
        layout.addWidget(self.status)
        row = QHBoxLayout()
        self.line = CommandLine(self)
        self.line.setToolTip(
            "Your command. Tab completes an action (it shows the choices when several fit), ↑/↓ recall earlier "
            "commands, Ctrl+Z on an empty line undoes your last turn."
        )
        self.line.submitted.connect(self.command)
        self.line.held.connect(self.held)
        self.line.undoRequested.connect(self.undoRequested)
        self.actions_button = QPushButton("Actions ▾", self)
        self.actions_button.setToolTip(
            "The story's actions: choosing one puts it in the command line to send."
        )
        self.actions_menu = QMenu(self)
        self.actions_button.setMenu(self.actions_menu)
        self.send_button = QPushButton("Send", self)
        self.send_button.setObjectName("Primary")
        self.send_button.setToolTip("Play the command line's text (Enter)")
        self.send_button.clicked.connect(self.line.returnPressed)
        row.addWidget(self.line, 1)
        row.addWidget(self.actions_button)
        row.addWidget(self.send_button)
        layout.addLayout(row)
        self._zoom = 0

    @property
    def ready(self) -> bool:
        """Enter plays the line now (a human's turn, the story not busy)."""
        return self.line.isEnabled() and self.line.ready

    def set_actions(self, actions: list[str]) -> None:
        self.line.set_actions(actions)
        self.actions_menu.clear()
        for action in actions:
            self.actions_menu.addAction(action, lambda a=action: self.fill(a))

    def fill(self, text: str) -> None:
        """Put ``text`` in the command line (to edit or send), never sending it."""
        self.line.setText(text)
        self.line.setFocus()

    def set_input_enabled(self, enabled: bool, hint: str = "") -> None:
        self.set_input_state(enabled, enabled, hint)

    def set_input_state(self, editable: bool, ready: bool, hint: str = "") -> None:
        """``editable``: the line takes typing (an episode is open); ``ready``: Enter plays it now."""
        self.line.setEnabled(editable)
        self.line.ready = ready
        for widget in (self.actions_button, self.send_button):
            widget.setEnabled(editable)
        self.send_button.setEnabled(ready)
        self.line.setPlaceholderText(hint or DEFAULT_HINT)

    def focus_line(self) -> None:
        """Put the keyboard focus in the command line (after Start, Take over, Fork, Undo)."""
        self.line.setFocus(Qt.FocusReason.OtherFocusReason)

    def zoom(self, steps: int) -> None:
        """Make the transcript and the command line larger (``steps`` > 0) or smaller; 0 resets."""
        target = 0 if steps == 0 else max(-6, min(12, self._zoom + steps))
        delta, self._zoom = target - self._zoom, target
        if delta > 0:
            self.transcript.zoomIn(delta)
        elif delta < 0:
            self.transcript.zoomOut(-delta)
        font = self.line.font()
        base = QApplication.font().pointSizeF()
        font.setPointSizeF(max(6.0, base + self._zoom))
        self.line.setFont(font)

    @property
    def zoom_level(self) -> int:
        return self._zoom

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

    def save_transcript(self, path: str) -> None:
        """Write the transcript to ``path``: HTML for ``.html``/``.htm``, plain text otherwise."""
        text = self.transcript.toHtml() if path.lower().endswith((".html", ".htm")) else self.plain_text()
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)

    def _append(self, fragment: str) -> None:
        cursor = self.transcript.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertHtml(fragment)
        cursor.insertBlock()
        self.transcript.setTextCursor(cursor)
        self.transcript.ensureCursorVisible()
