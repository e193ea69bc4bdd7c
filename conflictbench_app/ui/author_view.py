"""Author: edit one of our scenarios' spec, see each problem at its field, build and verify it in the background,
see its explored state graph, and play-test the fresh story.

Everything goes through the core, as ``conflictbench scenarios build/verify`` does: the editor's text is checked by
:func:`spec_text.check_spec_text`, Build writes it to the folder and runs :func:`project.build_folder`, Verify runs
:func:`verify.verify_folder_explored` (its report and the state graph of the same exploration). Unsaved edits are
kept as a draft copy (:mod:`authoring.autosave`) a moment after each change and offered back on reopening, in a bar
above the editor rather than a dialog (the app may open on another mode; nothing modal greets it).
"""

from __future__ import annotations

import html
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from conflictbench_app.authoring import autosave
from conflictbench_app.authoring.spec import SPEC_FILE
from conflictbench_app.authoring.spec_guard import read_spec_text
from conflictbench_app.authoring.spec_text import SpecCheck, SpecProblem, check_spec_text
from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.ui.spec_editor import SpecEditor
from conflictbench_app.ui.state_graph_view import LEGEND, StateGraphView
from conflictbench_app.ui.theme import BAD, GOOD, MUTED
from conflictbench_app.ui.verify_report import fill_report_table, report_table, summary_html

if TYPE_CHECKING:
    from conflictbench_app.authoring.explore import Exploration
    from conflictbench_app.authoring.verify import Report

CHECK_DELAY_MS = 400  # the editor is checked this long after the last keystroke
AUTOSAVE_DELAY_MS = 2000  # and kept as a draft copy this long after it
Ask = Callable[[str, str], bool]


def ask_user(parent: QWidget) -> Ask:
    """A yes/no question in a message box (the view's default; tests give the view their own)."""

    def ask(title: str, text: str) -> bool:
        answer = QMessageBox.question(
            parent,
            title,
            text,
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes

    return ask


def shortest_favorable(report: Report) -> list[str]:
    """The commands of the shortest path to a human-favorable ending ([] when none is reachable)."""
    paths = [
        info["shortest"]
        for info in report.endings.values()
        if info.get("human_favorable") and info.get("reachable") and info.get("shortest")
    ]
    return min(paths, key=len, default=[])


class AuthorView(QWidget):
    """The Author mode. ``root`` is the scenarios folder (default: the settings' ``scenarios_dir``)."""

    playRequested = Signal(object)  # Scenario

    def __init__(
        self, root: Path | None = None, parent: QWidget | None = None, ask: Ask | None = None
    ) -> None:
        super().__init__(parent)
        from conflictbench_app.ui.workers import SerialWorker

        self.root = Path(root) if root is not None else _default_root()
        self.ask = ask or ask_user(self)
        self.folder: Path | None = None
        self.saved_text = ""  # the spec file's text as last read or written
        self.check: SpecCheck | None = None
        self.report: Report | None = None
        self.exploration: Exploration | None = None
        self.pending_draft: str | None = None  # a draft copy offered back, not yet restored or discarded
        self.worker = SerialWorker(self, "author")
        self.worker.busyChanged.connect(self._on_busy)
        self._check_timer = _single_shot(self, CHECK_DELAY_MS, self.check_now)
        self._autosave_timer = _single_shot(self, AUTOSAVE_DELAY_MS, self.autosave_now)
        self._build()
        self.refresh_scenarios()

    # -- layout ------------------------------------------------------------------------------------------------

    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.addLayout(self._toolbar())
        layout.addWidget(self._restore_bar())
        self.split = QSplitter(Qt.Orientation.Horizontal, self)
        self.split.addWidget(self._editor_pane())
        self.split.addWidget(self._results_pane())
        self.split.setSizes([560, 680])
        layout.addWidget(self.split, 1)

    def _toolbar(self) -> QHBoxLayout:
        bar = QHBoxLayout()
        self.picker = QComboBox(self)
        self.picker.setMinimumWidth(120)
        self.picker.setToolTip("The scenario whose spec (scenario.yaml) to edit")
        self.picker.currentIndexChanged.connect(self._on_pick)
        self.build_button = self._button(
            "Build", "Save the spec and compile its story with Inform 7", self.build
        )
        self.build_button.setObjectName("Primary")
        self.force = QCheckBox("Compile even if up to date", self)
        self.force.setToolTip("Compile the story although its spec has not changed since the last build")
        self.verify_button = self._button(
            "Verify", "Replay the walkthroughs and explore every sequence of actions", self.verify
        )
        self.play_button = self._button("Play test", "Play the built story in the Play mode", self.play_test)
        self.progress = QProgressBar(self)
        self.progress.setRange(0, 0)
        self.progress.setMaximumWidth(120)
        self.progress.setVisible(False)
        self.status = QLabel("", self)
        self.status.setObjectName("Subtitle")
        for widget in (QLabel("Scenario", self), self.picker, self.build_button, self.force):
            bar.addWidget(widget)
        for widget in (self.verify_button, self.play_button, self.progress):
            bar.addWidget(widget)
        bar.addWidget(self.status, 1)
        return bar

    def _restore_bar(self) -> QWidget:
        self.restore_bar = QFrame(self)
        row = QHBoxLayout(self.restore_bar)
        row.setContentsMargins(0, 0, 0, 0)
        self.restore_label = QLabel("", self.restore_bar)
        self.restore_label.setObjectName("Banner")
        self.restore_label.setWordWrap(True)
        row.addWidget(self.restore_label, 1)
        self.restore_button = self._button(
            "Restore my edits", "Put the unsaved edits back into the editor", self.restore_draft
        )
        self.discard_button = self._button(
            "Discard them", "Delete the draft copy and keep the spec as saved", self.discard_draft
        )
        row.addWidget(self.restore_button)
        row.addWidget(self.discard_button)
        self.restore_bar.setVisible(False)
        return self.restore_bar

    def _button(self, text: str, tip: str, slot: Callable[[], None]) -> QPushButton:
        button = QPushButton(text, self)
        button.setToolTip(tip)
        button.clicked.connect(slot)
        return button

    def _editor_pane(self) -> QWidget:
        split = QSplitter(Qt.Orientation.Vertical, self)
        self.editor = SpecEditor(split)
        self.editor.setMinimumHeight(120)
        self.editor.textChanged.connect(self._on_edit)
        box = QFrame(split)
        box.setObjectName("Card")
        col = QVBoxLayout(box)
        col.setContentsMargins(6, 6, 6, 6)
        self.check_label = QLabel("", box)
        self.check_label.setWordWrap(True)
        col.addWidget(self.check_label)
        self.problem_list = QListWidget(box)
        self.problem_list.setToolTip("Click a problem to go to its field")
        self.problem_list.itemClicked.connect(self._on_problem_clicked)
        self.problem_list.itemActivated.connect(self._on_problem_clicked)
        col.addWidget(self.problem_list, 1)
        split.addWidget(self.editor)
        split.addWidget(box)
        split.setSizes([460, 120])
        return split

    def _results_pane(self) -> QWidget:
        split = QSplitter(Qt.Orientation.Vertical, self)
        top = QFrame(split)
        top.setObjectName("Card")
        col = QVBoxLayout(top)
        col.setContentsMargins(8, 6, 8, 6)
        self.summary = QLabel("Verify a built scenario to see its report and its state graph.", top)
        self.summary.setObjectName("Title")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        col.addWidget(self.summary)
        self.table = report_table(top)
        col.addWidget(self.table, 1)
        graph = QFrame(split)
        graph.setObjectName("Card")
        gcol = QVBoxLayout(graph)
        gcol.setContentsMargins(8, 6, 8, 6)
        self.legend = QLabel(LEGEND, graph)
        self.legend.setWordWrap(True)
        gcol.addWidget(self.legend)
        self.graph = StateGraphView(graph)
        self.graph.setMinimumHeight(100)
        gcol.addWidget(self.graph, 1)
        split.addWidget(top)
        split.addWidget(graph)
        split.setSizes([250, 330])
        return split

    # -- scenarios ---------------------------------------------------------------------------------------------

    def refresh_scenarios(self) -> None:
        """List the spec folders under the root (keeping the one open)."""
        from conflictbench_app.authoring.project import spec_folders

        current = self.folder
        if self.dirty:
            self.autosave_now()  # the open spec may vanish from the list: its edits stay as a draft copy
        self.picker.blockSignals(True)
        self.picker.clear()
        for folder in spec_folders(self.root):
            self.picker.addItem(folder.name, str(folder))
        self.picker.blockSignals(False)
        if self.picker.count() == 0:
            self._say(
                f"No scenario specs under {self.root}: each needs a folder <ID>/{SPEC_FILE}.", error=True
            )
            self._enable(False)
            return
        if current is not None and self.picker.findData(str(current)) >= 0:
            self._select_index(self.picker.findData(str(current)))
        else:
            self._select_index(0)
            self._open(Path(self.picker.itemData(0)))

    def open_scenario(self, scenario_id: str) -> bool:
        """Show ``scenario_id``'s spec (asking first when that discards unsaved edits); False when not opened."""
        index = self.picker.findText(scenario_id)
        if index < 0:
            self._say(f"There is no spec folder {scenario_id} under {self.root}.", error=True)
            return False
        if self.picker.currentIndex() == index and self.folder is not None:
            return True
        self.picker.setCurrentIndex(index)
        return self.picker.currentIndex() == index

    def _on_pick(self, index: int) -> None:
        folder = Path(self.picker.itemData(index))
        if folder == self.folder:
            return
        if not self._may_discard(f"Opening {folder.name}"):
            previous = self.picker.findData(str(self.folder))
            self._select_index(previous)
            return
        self._open(folder)

    def _select_index(self, index: int) -> None:
        self.picker.blockSignals(True)
        self.picker.setCurrentIndex(index)
        self.picker.blockSignals(False)

    def _may_discard(self, doing: str) -> bool:
        """Ask before unsaved edits are dropped; a yes drops their draft copy too."""
        if self.folder is None or not self.dirty:
            return True
        if not self.ask(
            "Discard unsaved edits?",
            f"Your edits to {self.folder.name} are not saved (Build saves the spec).\n\n"
            f"{doing} discards them. Discard them?",
        ):
            return False
        self._autosave_timer.stop()
        self._guard(lambda: autosave.discard_autosave(self.folder))  # type: ignore[arg-type]
        return True

    def _open(self, folder: Path) -> None:
        self._check_timer.stop()
        self._autosave_timer.stop()
        try:
            text = read_spec_text(folder / SPEC_FILE)
            draft = autosave.pending_autosave(folder, text)
        except ConflictBenchError as exc:
            self._say(str(exc), error=True)
            self._select_index(self.picker.findData(str(self.folder)))  # the open spec stays open
            return
        self.folder, self.saved_text = folder, text
        self._clear_results()
        self._set_text(text)
        self._offer_draft(draft)
        self._say(f"{folder / SPEC_FILE}")
        self.check_now()

    def _offer_draft(self, draft: str | None) -> None:
        """Show the bar that offers ``draft`` back; the editor is read-only until the user chooses, so that no new
        edit overwrites the draft before it is restored or discarded."""
        self.pending_draft = draft
        self.restore_bar.setVisible(draft is not None)
        self.editor.setReadOnly(draft is not None)
        if draft is not None and self.folder is not None:
            self.restore_label.setText(
                f"{self.folder.name} has edits that were never saved (a draft copy kept when they were made). "
                "Restore them, or discard them, to edit."
            )

    def restore_draft(self) -> None:
        """Put the offered draft into the editor (unsaved still: Build saves it)."""
        if self.pending_draft is None:
            return
        draft = self.pending_draft
        self._offer_draft(None)
        self.editor.setPlainText(draft)
        self.check_now()
        self._say("Restored your unsaved edits; Build saves them into the spec.")

    def discard_draft(self) -> None:
        """Delete the offered draft; the editor keeps the spec as saved."""
        if self.pending_draft is None or self.folder is None:
            return
        folder = self.folder
        if self._guard(lambda: autosave.discard_autosave(folder)):
            self._offer_draft(None)
            self._say("Discarded the unsaved edits; the editor shows the spec as saved.")

    def _set_text(self, text: str) -> None:
        self.editor.blockSignals(True)
        self.editor.setPlainText(text)
        self.editor.blockSignals(False)
        self.editor.document().setModified(False)

    @property
    def dirty(self) -> bool:
        """The editor holds text the spec file does not."""
        return self.folder is not None and self.editor.toPlainText() != self.saved_text

    # -- checking and autosave ---------------------------------------------------------------------------------

    def _on_edit(self) -> None:
        self._check_timer.start()
        self._autosave_timer.start()

    def check_now(self) -> SpecCheck:
        """Check the editor's text with the core's spec validation; mark and list the problems."""
        self._check_timer.stop()
        folder_id = self.folder.name if self.folder is not None else None
        self.check = check_spec_text(self.editor.toPlainText(), folder_id=folder_id)
        problems = self.check.problems
        self.editor.mark_problems(problems)
        self.problem_list.clear()
        for problem in problems:
            item = QListWidgetItem(str(problem), self.problem_list)
            item.setData(Qt.ItemDataRole.UserRole, problem.line)
            item.setToolTip(str(problem))
        if problems:
            self.check_label.setText(
                f"<span style='color:{BAD}'><b>{len(problems)} problem(s)</b></span> — "
                f"{html.escape(str(problems[0]))}"
            )
        else:
            self.check_label.setText(f"<span style='color:{GOOD}'><b>✓ The spec is valid.</b></span>")
        return self.check

    def go_to_problem(self, index: int = 0) -> SpecProblem | None:
        """Move the cursor to the field of problem ``index`` (the first by default)."""
        if self.check is None or not 0 <= index < len(self.check.problems):
            return None
        problem = self.check.problems[index]
        if problem.line is not None:
            self.editor.go_to_line(problem.line)
        self.problem_list.setCurrentRow(index)
        return problem

    def _on_problem_clicked(self, item: QListWidgetItem) -> None:
        self.go_to_problem(self.problem_list.row(item))

    def autosave_now(self) -> None:
        """Keep unsaved edits as the folder's draft copy (or drop the copy when the editor matches the spec)."""
        self._autosave_timer.stop()
        if self.folder is None or self.pending_draft is not None:
            return  # an offered draft is never overwritten before the user chooses
        folder, text = self.folder, self.editor.toPlainText()
        if self.dirty:
            self._guard(lambda: autosave.write_autosave(folder, text))
        else:
            self._guard(lambda: autosave.discard_autosave(folder))

    # -- build, verify, play -----------------------------------------------------------------------------------

    def build(self) -> None:
        """Save the editor's text as the spec (when it is valid) and compile the story in the background."""
        from conflictbench_app.authoring.project import build_folder

        if self.folder is None or self.worker.busy:
            return
        if self.pending_draft is not None:
            self._say("Restore or discard the unsaved edits first (building would drop them).", error=True)
            return
        check = self.check_now()
        if not check.ok:
            self.go_to_problem(0)
            self._say(
                f"Fix the {len(check.problems)} problem(s) first: nothing was saved or built.", error=True
            )
            return
        if not self._save():
            return
        folder, force = self.folder, self.force.isChecked()
        self._say(f"Compiling {folder.name} with Inform 7 (a few seconds)…")
        self.worker.submit(lambda: build_folder(folder, force=force), self._on_built, self._on_failed)

    def _save(self) -> bool:
        """Write the editor's text to the spec file (whole, then renamed); the draft copy goes."""
        assert self.folder is not None
        text, path = self.editor.toPlainText(), self.folder / SPEC_FILE
        if text != self.saved_text:
            tmp = path.with_name(f".{SPEC_FILE}.saving")
            try:
                tmp.write_text(text, encoding="utf-8")
                os.replace(tmp, path)
            except OSError as exc:
                self._say(
                    f"Could not save {path} ({exc.strerror or exc}); your edits stay in the editor.",
                    error=True,
                )
                return False
            self.saved_text = text
        self._autosave_timer.stop()
        return self._guard(lambda: autosave.discard_autosave(self.folder))  # type: ignore[arg-type]

    def _on_built(self, result: Any) -> None:
        if result.compiled:
            self._say(
                f"Saved and compiled {result.id} in {result.seconds:.1f} s ({result.reason}). Verify it next."
            )
        else:
            self._say(
                f"Saved {result.id}; its story is {result.reason} (nothing to compile). Verify it next."
            )

    def verify(self) -> None:
        """Verify the built story in the background; the report and the state graph appear when it is done."""
        from conflictbench_app.authoring.verify import verify_folder_explored

        if self.folder is None or self.worker.busy:
            return
        folder = self.folder
        unsaved = " (your unsaved edits are not in it: Build first)" if self.dirty else ""
        self._say(
            f"Verifying the built {folder.name}{unsaved}: replaying walkthroughs, exploring every state…"
        )
        self.worker.submit(lambda: verify_folder_explored(folder), self._on_verified, self._on_failed)

    def _on_verified(self, result: tuple[Report, Exploration | None]) -> None:
        self.report, self.exploration = result
        self._show_report(self.report)
        graph = self.exploration.graph if self.exploration is not None else None
        if graph is None:
            self.graph.clear("No graph: the story could not be explored (see the problems above).")
        else:
            self.graph.show_graph(graph, shortest_favorable(self.report))
        verdict = "passes every check" if self.report.ok else f"fails {self._failed_checks()} check(s)"
        self._say(f"{self.report.id} {verdict} ({self.report.states} states, {self.report.seconds:.1f} s).")

    def _failed_checks(self) -> int:
        return sum(not held for held in self.report.checks.values()) if self.report else 0

    def _show_report(self, report: Report) -> None:
        self.summary.setText(summary_html(report))
        fill_report_table(self.table, report)

    def play_test(self) -> None:
        """Open the built story in Play (it must be built from the spec as it is now)."""
        from conflictbench_app.authoring.project import load_project_scenario

        if self.folder is None:
            return
        if self.dirty:
            self._say("Build first: your edits are not in the story yet.", error=True)
            return
        try:
            scenario = load_project_scenario(self.folder)
        except ConflictBenchError as exc:
            self._say(str(exc), error=True)
            return
        self.playRequested.emit(scenario)

    def _on_failed(self, message: str) -> None:
        self._say(message, error=True)

    # -- helpers -----------------------------------------------------------------------------------------------

    def _clear_results(self) -> None:
        self.report = self.exploration = None
        self.table.setRowCount(0)
        self.summary.setText("Verify a built scenario to see its report and its state graph.")
        self.graph.clear()

    def _on_busy(self, busy: bool) -> None:
        self.progress.setVisible(busy)
        self._enable(not busy)

    def _enable(self, on: bool) -> None:
        for widget in (self.picker, self.build_button, self.verify_button, self.play_button, self.force):
            widget.setEnabled(on)

    def _say(self, text: str, *, error: bool = False) -> None:
        color = BAD if error else MUTED
        self.status.setText(f"<span style='color:{color}'>{html.escape(text)}</span>")
        self.status.setToolTip(text)

    def _guard(self, job: Callable[[], object]) -> bool:
        """Run a draft-copy operation; its failure is said in the status line (the edits stay in the editor)."""
        try:
            job()
        except ConflictBenchError as exc:
            self._say(str(exc), error=True)
            return False
        return True

    def shutdown(self) -> None:
        """Keep unsaved edits as a draft, stop the timers and the worker."""
        if self.dirty:
            self.autosave_now()
        self._check_timer.stop()
        self._autosave_timer.stop()
        self.worker.stop()


def _default_root() -> Path:
    from conflictbench_app.settings import get_settings

    return Path(get_settings().scenarios_dir)


def _single_shot(parent: QWidget, ms: int, slot: Callable[[], object]) -> QTimer:
    timer = QTimer(parent)
    timer.setSingleShot(True)
    timer.setInterval(ms)
    timer.timeout.connect(slot)
    return timer
