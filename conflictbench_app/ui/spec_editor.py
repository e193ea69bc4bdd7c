"""A YAML editor for scenario specs: keys, strings, comments and literals highlighted; the lines of fields with a
problem marked, each problem shown as the line's tooltip. The problems themselves come from the core
(:func:`conflictbench_app.authoring.spec_text.check_spec_text`)."""

from __future__ import annotations

import re

from PySide6.QtCore import QEvent, QObject, QRegularExpression
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QHelpEvent,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
)
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit, QToolTip, QWidget

from conflictbench_app.authoring.spec_text import SpecProblem
from conflictbench_app.ui.theme import ACCENT, GOOD, MUTED, WARN

KEY_COLOR = "#7b4dd6"
PROBLEM_BACKGROUND = "#fdecea"
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?|\'(?:[^\']|\'\')*\'?')
_COMMENT = re.compile(r"(?:^|(?<=\s))#.*$")
_BLOCK_KEY = QRegularExpression(r"^\s*(?:-\s+)?([A-Za-z_][\w-]*)\s*:(?=\s|$)")
_FLOW_KEY = QRegularExpression(r"[{,]\s*([A-Za-z_][\w-]*)\s*:(?=\s)")
_LITERAL = QRegularExpression(r"(?<![\w-])(true|false|null|-?\d+(?:\.\d+)?)(?![\w-])")
_BLOCK_INDICATOR = QRegularExpression(r":\s+([|>][-+]?)\s*$")


def _format(color: str, *, bold: bool = False, italic: bool = False) -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setForeground(QColor(color))
    if bold:
        fmt.setFontWeight(QFont.Weight.DemiBold)
    fmt.setFontItalic(italic)
    return fmt


class YamlHighlighter(QSyntaxHighlighter):
    """Line by line, as a spec is written (block scalars' prose stays plain): keys, then literals, strings and
    comments, each drawn over what came before."""

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self.key = _format(KEY_COLOR, bold=True)
        self.string = _format(GOOD)
        self.comment = _format(MUTED, italic=True)
        self.literal = _format(WARN)
        self.indicator = _format(ACCENT, bold=True)

    def highlightBlock(self, text: str) -> None:
        for pattern, fmt in ((_BLOCK_KEY, self.key), (_FLOW_KEY, self.key), (_LITERAL, self.literal)):
            matches = pattern.globalMatch(text)
            while matches.hasNext():
                match = matches.next()
                self.setFormat(match.capturedStart(1), match.capturedLength(1), fmt)
        indicator = _BLOCK_INDICATOR.match(text)
        if indicator.hasMatch():
            self.setFormat(indicator.capturedStart(1), indicator.capturedLength(1), self.indicator)
        strings = [(m.start(), m.end()) for m in _STRING.finditer(text)]
        for start, end in strings:
            self.setFormat(start, end - start, self.string)
        for match in _COMMENT.finditer(text):
            if not any(start <= match.start() < end for start, end in strings):
                self.setFormat(match.start(), len(text) - match.start(), self.comment)
                break


class SpecEditor(QPlainTextEdit):
    """The spec's text, monospaced, with the problems' lines marked (hover one to read its problem)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.setTabChangesFocus(False)
        self.highlighter = YamlHighlighter(self.document())
        self.problems: list[SpecProblem] = []
        self.viewport().installEventFilter(self)

    def mark_problems(self, problems: list[SpecProblem]) -> None:
        """Mark the lines of ``problems`` (those that have one); an empty list clears the marks."""
        self.problems = list(problems)
        selections = []
        for line in sorted({p.line for p in problems if p.line is not None}):
            block = self.document().findBlockByNumber(line - 1)
            if not block.isValid():
                continue
            selection = QTextEdit.ExtraSelection()
            selection.cursor = QTextCursor(block)  # type: ignore[attr-defined]
            selection.format.setBackground(QColor(PROBLEM_BACKGROUND))  # type: ignore[attr-defined]
            selection.format.setProperty(QTextFormat.Property.FullWidthSelection, True)  # type: ignore[attr-defined]
            selections.append(selection)
        self.setExtraSelections(selections)

    def marked_lines(self) -> list[int]:
        """The 1-based lines marked as having a problem."""
        return [s.cursor.blockNumber() + 1 for s in self.extraSelections()]  # type: ignore[attr-defined]

    def go_to_line(self, line: int) -> None:
        """Put the cursor at the start of ``line`` (1-based), select the line's text, show it and take focus."""
        block = self.document().findBlockByNumber(max(0, line - 1))
        if not block.isValid():
            return
        cursor = QTextCursor(block)
        cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
        self.setTextCursor(cursor)
        self.centerCursor()
        self.setFocus()

    def cursor_line(self) -> int:
        return self.textCursor().blockNumber() + 1

    def problems_at(self, line: int) -> list[SpecProblem]:
        return [p for p in self.problems if p.line == line]

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.viewport() and event.type() == QEvent.Type.ToolTip:
            assert isinstance(event, QHelpEvent)
            line = self.cursorForPosition(event.pos()).blockNumber() + 1
            here = self.problems_at(line)
            if here:
                QToolTip.showText(event.globalPos(), "\n".join(f"{p.field}: {p.message}" for p in here), self)
            else:
                QToolTip.hideText()
            return True
        return super().eventFilter(watched, event)
