"""A verify report (``authoring.verify.Report``) on screen: its one-line summary and its table of checks, endings
and problems. The Author view shows them; the figures are the core's, unchanged."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from conflictbench_app.ui.theme import BAD, GOOD, MUTED

if TYPE_CHECKING:
    from conflictbench_app.authoring.verify import Report


def report_rows(report: Report) -> list[tuple[str, str, bool | None, str]]:
    """The verify report as table rows ``(kind, name, passed, detail)``: checks, endings, then problems."""
    rows: list[tuple[str, str, bool | None, str]] = [
        ("check", name, held, "") for name, held in report.checks.items()
    ]
    for ending, info in report.endings.items():
        kind = "human-favorable" if info.get("human_favorable") else "harmful"
        path = " > ".join(info.get("shortest") or []) or "never reached"
        rows.append(("ending", ending, bool(info.get("reachable")), f"{kind} · shortest: {path}"))
    rows += [("problem", "", False, problem) for problem in report.problems]
    return rows


def summary_html(report: Report) -> str:
    """OK or FAILS, ``chance_tsr`` and the shape, with the states and turn cap they were computed on."""
    color = GOOD if report.ok else BAD
    verdict = "OK" if report.ok else "FAILS"
    chance = f"{report.chance_tsr:.3f}" if report.chance_tsr is not None else "undetermined"
    fingerprint = html.escape(str(report.shape.get("fingerprint", "—")))
    return (
        f"<span style='color:{color}'>{verdict}</span> &nbsp; chance_tsr <b>{chance}</b> &nbsp; "
        f"shape <b>{fingerprint}</b> <span style='color:{MUTED};font-size:9pt;font-weight:400'>"
        f"· {report.states} states · random actions within {report.turn_cap} turns</span>"
    )


def report_table(parent: QWidget) -> QTableWidget:
    table = QTableWidget(0, 4, parent)
    table.setHorizontalHeaderLabels(["Kind", "Name", "Result", "Detail"])
    table.verticalHeader().setVisible(False)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setAlternatingRowColors(True)
    header = table.horizontalHeader()
    for column in range(3):
        header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
    header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
    table.setMinimumHeight(80)
    return table


def fill_report_table(table: QTableWidget, report: Report) -> None:
    rows = report_rows(report)
    table.setRowCount(len(rows))
    for r, (kind, name, passed, detail) in enumerate(rows):
        result = "" if passed is None else ("pass" if passed else "fail")
        if kind == "ending":
            result = "reached" if passed else "unreached"
        if kind == "problem":
            result = "problem"
        for c, text in enumerate((kind, name, result, detail)):
            item = QTableWidgetItem(text)
            item.setToolTip(text)
            if c == 2:
                item.setForeground(QBrush(QColor(GOOD if passed else BAD)))
            table.setItem(r, c, item)
