"""The state panel: the story's variables with what changed this turn, the clock, failed actions, tokens and cost."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGridLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from conflictbench_app.records import StepRecord, Usage
from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.ui.theme import BAD, MUTED

CHANGED = QColor("#fff3c4")


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def state_changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Variables whose value differs between two states: name -> (before, after)."""
    return {k: (before.get(k), v) for k, v in after.items() if before.get(k) != v}


class _Figure(QWidget):
    """A big number with a caption (clock, turn, failed actions, tokens)."""

    def __init__(self, caption: str, parent: QWidget) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        self.value = QLabel("–", self)
        self.value.setStyleSheet("font-size: 16pt; font-weight: 600;")
        self.caption = QLabel(caption.upper(), self)
        self.caption.setObjectName("Section")
        layout.addWidget(self.value)
        layout.addWidget(self.caption)

    def set(self, value: str, color: str = "") -> None:
        self.value.setText(value)
        self.value.setStyleSheet(f"font-size: 16pt; font-weight: 600; color: {color or 'inherit'};")


class StatePanel(QWidget):
    """Renders the story state of the latest step (or of any chosen turn, in review)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        figures = QGridLayout()
        self.clock = _Figure("clock", self)
        self.turn = _Figure("turn", self)
        self.failed = _Figure("failed actions", self)
        self.tokens = _Figure("tokens · cost", self)
        for i, figure in enumerate((self.clock, self.turn, self.failed, self.tokens)):
            figures.addWidget(figure, 0, i)
        layout.addLayout(figures)
        self.table = QTableWidget(0, 3, self)
        self.table.setHorizontalHeaderLabels(["Variable", "Value", "This turn"])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.setShowGrid(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        layout.addWidget(self.table, 1)
        self.scenario: Scenario | None = None
        self.changed: dict[str, tuple[Any, Any]] = {}

    def reset(self, scenario: Scenario | None) -> None:
        self.scenario = scenario
        initial = dict(scenario.initial_state) if scenario else {}
        self.show_state(initial, {}, turn=0, failed=0, usage=Usage())

    def show_steps(
        self, steps: list[StepRecord], upto: int | None = None, usage: Usage | None = None
    ) -> None:
        """Show the state after step ``upto`` (default: the last), with what that step changed."""
        steps = steps if upto is None else steps[: upto + 1]
        if not steps:
            self.reset(self.scenario)
            return
        initial = dict(self.scenario.initial_state) if self.scenario else {}
        before = steps[-2].state if len(steps) > 1 else initial
        last = steps[-1]
        total = usage if usage is not None else sum((s.usage for s in steps), Usage())
        self.show_state(
            last.state,
            state_changes(before, last.state),
            turn=last.idx + 1,  # the transcript's numbering: every turn taken counts, failed ones too
            failed=sum(not s.accepted for s in steps),
            usage=total,
        )

    def show_state(
        self,
        state: dict[str, Any],
        changed: dict[str, tuple[Any, Any]],
        *,
        turn: int,
        failed: int,
        usage: Usage,
    ) -> None:
        self.changed = changed
        variables = self.scenario.state_vars if self.scenario else ()
        # Variables the story never prints go last: their value is unknown, not their initial one.
        names = [v.name for v in variables if v.shown] + [v.name for v in variables if not v.shown]
        names += [k for k in state if k not in names]
        self.table.setRowCount(len(names))
        for row, name in enumerate(names):
            var = self.scenario.state_var(name) if self.scenario else None
            label = var.display if var else name
            value = _fmt(state.get(name, "–")) + (f" {var.unit}" if var and var.unit else "")
            if var is not None and not var.shown:
                value = "not shown by the story"
            delta = ""
            if name in changed:
                old, new = changed[name]
                delta = _delta(old, new)
            cells = (QTableWidgetItem(label), QTableWidgetItem(value), QTableWidgetItem(delta))
            for col, cell in enumerate(cells):
                if name in changed:
                    cell.setBackground(QBrush(CHANGED))
                self.table.setItem(row, col, cell)
        self._show_clock(state)
        self.turn.set(str(turn))
        self.failed.set(str(failed), BAD if failed else "")
        cost = f" · ${usage.cost_usd:.4f}" if usage.cost_usd else ""
        self.tokens.set(f"{usage.prompt_tokens + usage.completion_tokens:,}{cost}")

    def _show_clock(self, state: dict[str, Any]) -> None:
        clock = self.scenario.clock_var if self.scenario else None
        var = self.scenario.state_var(clock) if self.scenario and clock else None
        if clock and clock in state and (var is None or var.shown):
            value = state[clock]
            urgent = isinstance(value, int | float) and value <= 2
            self.clock.set(_fmt(value), BAD if urgent else "")
            self.clock.caption.setText(clock.replace("_", " ").upper())
        else:
            self.clock.set("–")
            self.clock.caption.setText("CLOCK")


def _delta(old: Any, new: Any) -> str:
    if isinstance(old, int | float) and isinstance(new, int | float) and not isinstance(new, bool):
        diff = new - old
        return f"{diff:+g}"
    return f"{_fmt(old)} → {_fmt(new)}"


class TurnList(QListWidget):
    """The turns so far (opening first). Selecting one emits its index: -1 is the opening."""

    turnChosen = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.currentRowChanged.connect(lambda row: self.turnChosen.emit(row - 1))

    def set_steps(self, steps: list[StepRecord]) -> None:
        self.blockSignals(True)
        self.clear()
        self.addItem(QListWidgetItem("Opening"))
        for step in steps:
            self.add_step(step, select=False)
        self.blockSignals(False)

    def add_step(self, step: StepRecord, *, select: bool = True) -> None:
        text = f"{step.idx + 1}. {step.action or step.action_raw or '(nothing)'}   · {step.player}"
        item = QListWidgetItem(text)
        if not step.accepted:
            item.setForeground(QBrush(QColor(BAD)))
            item.setToolTip("Failed action")
        if step.meta.get("copied_from"):
            item.setForeground(QBrush(QColor(MUTED)))
            item.setToolTip("Shared with the episode this branch was forked from")
        self.addItem(item)
        if select:
            self.blockSignals(True)
            self.setCurrentRow(self.count() - 1)
            self.blockSignals(False)
        item.setData(Qt.ItemDataRole.UserRole, step.idx)
