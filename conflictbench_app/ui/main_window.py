"""The main window: Library, Play / Watch live, Review and label, Regret replay, Results, Author. Settings in a
dialog."""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QByteArray, QSettings, QSize
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QScrollArea,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from conflictbench_app import __version__
from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.settings import Settings, get_settings, user_config_dir
from conflictbench_app.ui.author_view import AuthorView
from conflictbench_app.ui.library_view import LibraryView
from conflictbench_app.ui.play_view import PlayView
from conflictbench_app.ui.regret_view import RegretView
from conflictbench_app.ui.results_view import ResultsView
from conflictbench_app.ui.review_view import ReviewView
from conflictbench_app.ui.workers import SerialWorker

if TYPE_CHECKING:
    from conflictbench_app.scenarios.library import Library

CONTENT_NOTE = (
    "<h3>Before you start</h3>"
    "<p>ConflictBench scenarios depict emergencies in which people may be hurt or killed: industrial accidents, "
    "crashes, floods, medical crises. Some endings describe harm to people in plain words, and some clips show "
    "the scene as it unfolds (drawn schematically by default).</p>"
    "<p>The scenarios exist to test whether AI agents keep human safety first. You can stop at any time; "
    "every turn you play is recorded in your local database and nowhere else.</p>"
)
MODES = ("Library", "Play", "Review", "Regret", "Results", "Author")


def _scrollable(view: QWidget, parent: QWidget) -> QScrollArea:
    """``view`` in a frameless scroll area: on a small screen the window still fits, the panes shrink to their
    minimums and what is left scrolls instead of the window refusing to get smaller."""
    area = QScrollArea(parent)
    area.setWidgetResizable(True)
    area.setFrameShape(QScrollArea.Shape.NoFrame)
    holder = QWidget(area)
    layout = _Fill(holder)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.addWidget(view)
    area.setWidget(holder)
    return area


class _Fill(QVBoxLayout):
    """A view filling its scroll area. A layout with word-wrapped labels has a height-for-width, and a scroll area
    then sizes its widget to the preferred height (scrolling on any laptop); without one it sizes the widget to the
    viewport, down to the view's minimum, and scrolls only below that."""

    def hasHeightForWidth(self) -> bool:
        return False


def content_note_marker() -> Path:
    return user_config_dir() / "content-note-accepted"


class ContentNote(QDialog):
    """Shown once, before first use (and from Help at any time)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Content note")
        self.setMinimumWidth(520)
        layout = QVBoxLayout(self)
        text = QLabel(CONTENT_NOTE, self)
        text.setWordWrap(True)
        layout.addWidget(text)
        self.remember = QCheckBox("Don't show this again", self)
        self.remember.setChecked(True)
        layout.addWidget(self.remember)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("I understand, continue")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)


def ask_content_note(parent: QWidget | None = None) -> bool:
    """True when the user has accepted the note (now or before)."""
    marker = content_note_marker()
    if marker.exists():
        return True
    dialog = ContentNote(parent)
    if dialog.exec() != QDialog.DialogCode.Accepted:
        return False
    if dialog.remember.isChecked():
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("accepted\n", encoding="utf-8")
    return True


class MainWindow(QMainWindow):
    def __init__(
        self, db_path: Path | None = None, source: Path | None = None, settings: Settings | None = None
    ):
        super().__init__()
        self.settings = settings or get_settings()
        self.db_path = Path(db_path or self.settings.db)
        self.source = source
        self.scenarios: dict[str, Scenario] = {}
        self._shut = False
        self.setWindowTitle(f"ConflictBench Studio {__version__}")
        self.resize(1360, 860)
        self.setMinimumSize(800, 540)  # smaller than that, the modes scroll
        self.loader = SerialWorker(self, "library-loader")
        self._build()
        self._menus()
        self._restore_layout()
        self.load_library(source)

    def _build(self) -> None:
        annotator = self.settings.annotator
        self.tabs = QTabWidget(self)
        self.tabs.setDocumentMode(True)
        self.library_view = LibraryView(self.tabs)
        self.play_view = PlayView(self.db_path, annotator or "player", self.tabs)
        self.review_view = ReviewView(self.db_path, annotator, self.scenario, self.tabs)
        self.regret_view = RegretView(self.db_path, self.tabs)
        self.results_view = ResultsView(self.db_path, self.tabs)
        self.author_view = AuthorView(self.settings.scenarios_dir, self.tabs)
        for view in (self.library_view, self.play_view):
            view.renderer = self.settings.renderer
            view.renderer_options = self._renderer_options()
        for view, name in zip(
            (
                self.library_view,
                self.play_view,
                self.review_view,
                self.regret_view,
                self.results_view,
                self.author_view,
            ),
            MODES,
            strict=True,
        ):
            self.tabs.addTab(_scrollable(view, self.tabs), name)
        self.setCentralWidget(self.tabs)
        for folder in self.settings.library_sources:
            if folder.is_dir():
                self.library_view.add_source(f"Paper folder: {folder.name}", folder)
        self.library_view.playRequested.connect(self.play)
        self.author_view.playRequested.connect(self.play)
        self.library_view.sourceRequested.connect(self.load_library)
        self.tabs.currentChanged.connect(self._on_tab)
        self.statusBar().showMessage(f"Database: {self.db_path}")

    def _renderer_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {}  # the default clip cache, shared with `conflictbench run`
        if self.settings.renderer == "wan" and self.settings.wan_model_dir:
            options["model_dir"] = self.settings.wan_model_dir
        return options

    def _menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        # Ctrl+O restores a saved position in Play (as an interpreter's RESTORE); importing a folder is Ctrl+Shift+O.
        self._action(file_menu, "Import paper folder…", self.library_view.choose_folder, "Ctrl+Shift+O")
        self._action(file_menu, "Open database…", self.choose_database)
        self._action(file_menu, "Settings…", self.open_settings, "Ctrl+,")
        self._action(file_menu, "Export transcript…", self.export_transcript, "Ctrl+E")
        file_menu.addSeparator()
        self._action(file_menu, "Quit", self.close, "Ctrl+Q")
        view_menu = self.menuBar().addMenu("&View")
        for i, name in enumerate(MODES):
            # triggered(bool) passes `checked` first: it must not land in the index (every item went to Library).
            self._action(
                view_menu, name, lambda _checked=False, i=i: self.tabs.setCurrentIndex(i), f"Alt+{i + 1}"
            )
        view_menu.addSeparator()
        console = self.play_view.console
        self._action(view_menu, "Larger text", lambda: console.zoom(1), "Ctrl++")
        self._action(view_menu, "Smaller text", lambda: console.zoom(-1), "Ctrl+-")
        self._action(view_menu, "Normal text size", lambda: console.zoom(0), "Ctrl+0")
        play_menu = self.menuBar().addMenu("&Play")
        self._action(play_menu, "Undo my last turn", self.play_view.undo_turn, "Ctrl+Shift+Z")
        play_menu.addSeparator()
        play_menu.addAction(self.play_view.positions.save_action)  # Ctrl+S / Ctrl+O while Play is shown
        play_menu.addAction(self.play_view.positions.restore_action)
        help_menu = self.menuBar().addMenu("&Help")
        self._action(help_menu, "Keyboard shortcuts", self.show_shortcuts, "F1")
        self._action(help_menu, "Content note", lambda: ContentNote(self).exec())
        self._action(help_menu, "About", self.about)

    def _action(self, menu: Any, text: str, slot: Any, shortcut: str = "") -> QAction:
        action = QAction(text, self)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    # -- library -----------------------------------------------------------------------------------------------

    def load_library(self, source: Path | None) -> None:
        """Load a scenario source in the background (the window stays responsive)."""
        from conflictbench_app.scenarios.library import load_library

        self.library_view.count_label.setText("Loading scenarios…")
        self.loader.submit(lambda: load_library(source), self._on_library, self._on_library_error)

    def _on_library(self, library: Library) -> None:
        self.scenarios.update({s.id: s for s in library.scenarios})
        last = str(self.layout_store().value("last_scenario", "") or "")
        if last in self.scenarios and self.play_view.scenario is None:
            self.play_view.set_scenario(self.scenarios[last])  # where the last session left off
        self.library_view.set_library(library)
        self.results_view.batch.library = library
        self.statusBar().showMessage(
            f"{len(library.scenarios)} scenarios from {library.root} · database {self.db_path}"
        )
        if library.kind == "paper" and library.scenarios:
            self._remember_source(Path(library.root))

    def _remember_source(self, folder: Path) -> None:
        """Offer an imported paper folder again at the next start (kept in the settings file)."""
        from conflictbench_app.settings import write_settings

        known = [Path(p) for p in self.settings.library_sources]
        if folder.resolve() in {p.resolve() for p in known}:
            return
        try:
            write_settings({"library_sources": [*known, folder.resolve()]})
        except (ConflictBenchError, OSError) as exc:
            self.statusBar().showMessage(f"The folder is loaded but could not be remembered: {exc}")
            return
        self.settings = get_settings()

    def _on_library_error(self, message: str) -> None:
        self.library_view.show_error(message)

    def scenario(self, scenario_id: str) -> Scenario | None:
        return self.scenarios.get(scenario_id)

    def play(self, scenario: Scenario) -> None:
        self.play_view.set_scenario(scenario)
        self.show_mode(self.play_view)

    def view_at(self, index: int) -> QWidget:
        """The mode's view at tab ``index`` (each sits in a scroll area, for screens smaller than its layout)."""
        area = self.tabs.widget(index)
        if not isinstance(area, QScrollArea):
            return area
        holder = area.widget()
        return holder.layout().itemAt(0).widget()

    def show_mode(self, view: QWidget) -> None:
        """Switch to the tab that holds ``view``."""
        for i in range(self.tabs.count()):
            if self.view_at(i) is view:
                self.tabs.setCurrentIndex(i)
                return

    def _on_tab(self, index: int) -> None:
        view = self.view_at(index)
        if view in (self.review_view, self.regret_view, self.results_view):
            try:
                view.refresh()  # type: ignore[attr-defined]
            except Exception as exc:  # a broken database must not close the window
                from conflictbench_app.ui.workers import readable_error

                QMessageBox.warning(self, "Cannot read the database", readable_error(exc))

    # -- settings ----------------------------------------------------------------------------------------------

    def open_settings(self) -> None:
        from conflictbench_app.ui.settings_dialog import SettingsDialog

        dialog = SettingsDialog(self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.settings = get_settings()
            self.review_view.annotator = self.settings.annotator
            self.play_view.driver.player_name = self.settings.annotator or "player"
            self.play_view.refresh_agents()
            self.results_view.batch.refresh_agents()
            for view in (self.library_view, self.play_view):
                view.renderer = self.settings.renderer
                view.renderer_options = self._renderer_options()
            if Path(self.settings.db) != self.db_path:
                self.statusBar().showMessage("The new database is used from the next start.")

    def choose_database(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a ConflictBench database", str(self.db_path.parent))
        if path:
            from conflictbench_app.settings import write_settings

            try:
                write_settings({"db": path})
            except (ConflictBenchError, OSError) as exc:
                QMessageBox.warning(self, "Database", f"Could not save the choice: {exc}")
                return
            QMessageBox.information(self, "Database", "The app will use this database from the next start.")

    def export_transcript(self) -> None:
        """Save the Play console's transcript as text or HTML."""
        path, _ = QFileDialog.getSaveFileName(
            self, "Export the transcript", str(Path.home() / "transcript.txt"), "Text (*.txt);;HTML (*.html)"
        )
        if path:
            try:
                self.play_view.console.save_transcript(path)
            except OSError as exc:
                QMessageBox.warning(self, "Transcript", f"Could not write {path}: {exc}")
                return
            self.statusBar().showMessage(f"Transcript saved to {path}")

    def shortcuts(self) -> list[tuple[str, str]]:
        """(keys, what they do): every menu shortcut, then the command line's own keys."""
        rows = [
            (a.shortcut().toString(), a.text().replace("&", "").rstrip("…"))
            for menu in self.menuBar().findChildren(QMenu)
            for a in menu.actions()
            if not a.shortcut().isEmpty()
        ]
        return [
            *rows,
            ("Tab", "Complete the command (shows the choices when several actions fit)"),
            ("↑ / ↓", "Recall earlier commands"),
            ("Ctrl+Z (empty command line)", "Undo your last turn"),
            ("Ctrl+1 / Ctrl+2 / Ctrl+3 in Review", "Label episode A aligned / misaligned / unsure"),
            ("Ctrl+S in Review", "Save the label and go on to the next unlabeled episode"),
            ("Ctrl+N in Review", "Go to the next unlabeled episode"),
            ("Enter", "Play the command"),
        ]

    def show_shortcuts(self) -> None:
        rows = "".join(
            f"<tr><td><b>{html.escape(k)}</b></td><td>{html.escape(t)}</td></tr>" for k, t in self.shortcuts()
        )
        QMessageBox.information(self, "Keyboard shortcuts", f"<table cellspacing='6'>{rows}</table>")

    def about(self) -> None:
        QMessageBox.about(
            self,
            "ConflictBench Studio",
            f"<b>ConflictBench Studio {__version__}</b><p>Play, watch, review and label the ConflictBench "
            "human-safety benchmark for AI agents.</p>",
        )

    # -- closing -----------------------------------------------------------------------------------------------

    def closeEvent(self, event: QCloseEvent) -> None:
        # Quitting mid-episode (Ctrl+Q, the window's close button) abandons it: ask first.
        if not self._shut and not self.play_view.confirm_leave("Quitting"):
            event.ignore()
            return
        self.shutdown()
        super().closeEvent(event)

    # -- layout ------------------------------------------------------------------------------------------------

    @staticmethod
    def layout_store() -> QSettings:
        """Where the window keeps its layout and the last scenario (beside the settings file)."""
        return QSettings(str(user_config_dir() / "window.ini"), QSettings.Format.IniFormat)

    def _restore_layout(self) -> None:
        saved = self.layout_store()
        geometry = saved.value("geometry")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)
        size = saved.value("size")
        if isinstance(size, QSize) and size.isValid():
            self.resize(
                size
            )  # restoreGeometry clamps to the current screen; the user's size wins where it fits
        for key, splitter in (
            ("play_split", self.play_view.split),
            ("play_right", self.play_view.right_split),
        ):
            state = saved.value(key)
            if isinstance(state, QByteArray):
                splitter.restoreState(state)
        mode = saved.value("mode")
        if mode is not None and str(mode).isdigit() and int(str(mode)) < self.tabs.count():
            self.tabs.setCurrentIndex(int(str(mode)))

    def save_layout(self) -> None:
        """Remember the window's size and place, the Play panes, the mode and the scenario for the next start."""
        saved = self.layout_store()
        saved.setValue("geometry", self.saveGeometry())
        saved.setValue("size", self.size())
        saved.setValue("play_split", self.play_view.split.saveState())
        saved.setValue("play_right", self.play_view.right_split.saveState())
        saved.setValue("mode", self.tabs.currentIndex())
        if self.play_view.scenario is not None:
            saved.setValue("last_scenario", self.play_view.scenario.id)
        saved.sync()

    def shutdown(self) -> None:
        """Stop every timer and thread this window owns (recorded episodes stay as they are)."""
        if self._shut:
            return
        self._shut = True
        self.save_layout()
        self.loader.stop()
        self.library_view.shutdown()
        self.play_view.shutdown()
        self.review_view.shutdown()
        self.regret_view.shutdown()
        self.results_view.shutdown()
        self.author_view.shutdown()


def controls_without_tooltips(root: QWidget) -> list[str]:
    """The buttons, pickers, fields and sliders under ``root`` that have no tooltip, as ``Class 'text' in Parent``
    (the line edits inside combo and spin boxes belong to their box; text-less tool buttons are Qt's own)."""
    from PySide6.QtWidgets import (
        QAbstractButton,
        QAbstractSpinBox,
        QComboBox,
        QLineEdit,
        QSlider,
        QToolButton,
    )

    missing = []
    for kind in (QAbstractButton, QComboBox, QLineEdit, QSlider, QAbstractSpinBox):
        for control in root.findChildren(kind):
            parent = control.parent()
            text = control.text() if hasattr(control, "text") else ""
            qt_own = (
                isinstance(control, QToolButton) or type(control) is QAbstractButton
            )  # scroll arrows, corners
            if control.toolTip() or (qt_own and not text):
                continue
            if isinstance(control, QLineEdit) and isinstance(parent, (QComboBox, QAbstractSpinBox)):
                continue
            missing.append(f"{type(control).__name__} {text!r} in {type(parent).__name__}")
    return missing
