"""The Results view's world-model tab: every stored judgment of ``conflictbench wm-eval`` (the newest of each clip,
dimension, judge and prompt), and for the chosen one the five frames the judge saw and its rationale. Tables 4 and
7 themselves are in the report tab (evaluation.report); this is where a score is traced to what produced it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from conflictbench_app.errors import ConflictBenchError

COLUMNS = ("Renderer", "Scenario", "Step", "Action", "Dimension", "Score", "Judge", "Prompt")
EMPTY = (
    "No world model has been judged in this database yet: `conflictbench wm-eval --runs RUN_ID --renderers "
    "schematic --judge PROFILE:MODEL` scores rendered clips (docs/wm-eval.md)."
)


class WorldModelPanel(QWidget):
    """The judgments in a table; selecting one shows its frames and rationale."""

    def __init__(self, db_path: Path, parent: QWidget) -> None:
        super().__init__(parent)
        self.db_path = db_path
        self.judgments: list[Any] = []
        layout = QVBoxLayout(self)
        self.summary = QLabel(EMPTY, self)
        self.summary.setObjectName("Subtitle")
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        split = QSplitter(Qt.Orientation.Vertical, self)
        self.table = _table(split)
        self.table.setToolTip("Each judgment of a rendered clip; choose one to see the frames the judge saw")
        detail = QWidget(split)
        rows = QVBoxLayout(detail)
        strip = QHBoxLayout()
        self.frames = [QLabel(detail) for _ in range(5)]
        for label in self.frames:
            label.setMinimumSize(120, 68)
            label.setAlignment(Qt.AlignmentFlag.AlignCenter)
            strip.addWidget(label)
        rows.addLayout(strip)
        self.rationale = QLabel("", detail)
        self.rationale.setWordWrap(True)
        self.rationale.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        rows.addWidget(self.rationale, 1)
        split.setSizes([220, 200])
        layout.addWidget(split, 1)
        self.table.currentCellChanged.connect(lambda row, *_: self.show_judgment(row))

    def refresh(self) -> None:
        from conflictbench_app.evaluation.wm_tables import newest
        from conflictbench_app.store import Store

        with Store(self.db_path) as store:
            self.judgments = sorted(
                newest(store.wm_judgments()),
                key=lambda j: (j.renderer, j.scenario_id, j.step, j.dimension, j.judge),
            )
        renderers = sorted({j.renderer for j in self.judgments})
        self.summary.setText(
            f"{len(self.judgments)} judgment(s) of {len(renderers)} renderer(s): {', '.join(renderers)}. "
            "Tables 4 and 7 are in the report tab."
            if self.judgments
            else EMPTY
        )
        self.table.setRowCount(len(self.judgments))
        for i, j in enumerate(self.judgments):
            score = "unparsed" if j.score is None else f"{j.score:.3f}"
            cells = (
                j.renderer,
                j.scenario_id,
                str(j.step),
                j.action or "(opening)",
                j.dimension,
                score,
                j.judge,
                f"{j.prompt_id}#{j.prompt_sha[:12]}",
            )
            for col, text in enumerate(cells):
                self.table.setItem(i, col, QTableWidgetItem(text))
        if self.judgments:
            self.table.setCurrentCell(0, 0)

    def show_judgment(self, row: int) -> None:
        """The chosen judgment's frames (numbers in their tooltips) and what the judge wrote."""
        from conflictbench_app.evaluation.wm_eval import judged_frames

        for label in self.frames:
            label.clear()
        if not 0 <= row < len(self.judgments):
            self.rationale.setText("")
            return
        judgment = self.judgments[row]
        verdict = (
            "unparsed: every reply was unusable, so no score is stored"
            if judgment.score is None
            else f"{judgment.score:.3f}"
        )
        subs = ", ".join(f"{k} {v:.2f}" for k, v in judgment.subscores.items())
        text = f"<b>{judgment.dimension}</b>: {verdict}" + (f" ({subs})" if subs else "")
        text += f"<br>{judgment.rationale or '(no rationale)'}"
        try:
            images = judged_frames(judgment)
        except ConflictBenchError as exc:
            images, text = [], f"{text}<br><i>{exc}</i>"
        for label, image, number in zip(self.frames, images, judgment.frames, strict=False):
            pixmap = QPixmap()
            pixmap.loadFromData(image)
            label.setPixmap(pixmap)
            label.setToolTip(f"frame {number} of the clip")
        self.rationale.setText(text)


def _table(parent: QWidget) -> QTableWidget:
    table = QTableWidget(0, len(COLUMNS), parent)
    table.setHorizontalHeaderLabels(list(COLUMNS))
    table.verticalHeader().setVisible(False)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    table.horizontalHeader().setStretchLastSection(True)
    return table
