"""The scenario library: search, filter by category and source, and a preview of each scenario with its base clip."""

from __future__ import annotations

import html
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.ui.theme import CATEGORY_COLORS, MUTED, chip_style
from conflictbench_app.ui.video import ClipFrames, VideoPane, clip_frames
from conflictbench_app.ui.workers import SerialWorker

if TYPE_CHECKING:
    from conflictbench_app.scenarios.library import Library

PAPER_CORPUS_HINT = "paper-corpus/results"


def matches(scenario: Scenario, text: str, category: str) -> bool:
    """The library's filter: a category (or "all") and words found in the id, title, identity or place."""
    if category != "all" and scenario.category.value != category:
        return False
    haystack = " ".join((scenario.id, scenario.title, scenario.identity, scenario.place)).lower()
    return all(word in haystack for word in text.lower().split())


class _ScenarioRow(QWidget):
    def __init__(self, scenario: Scenario, parent: QWidget) -> None:
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        chip = QLabel(scenario.category.value, self)
        chip.setObjectName("Chip")
        chip.setStyleSheet(chip_style(CATEGORY_COLORS[scenario.category.value]))
        chip.setFixedWidth(40)
        chip.setAlignment(Qt.AlignmentFlag.AlignCenter)
        text = QLabel(
            f"<b>{html.escape(scenario.title)}</b><br><span style='color:{MUTED}'>{html.escape(scenario.id)}"
            f" · {html.escape(_short(_name(scenario), 44))}</span>",
            self,
        )
        layout.addWidget(chip, 0, Qt.AlignmentFlag.AlignTop)
        layout.addWidget(text, 1)


def _name(scenario: Scenario) -> str:
    """The identity's short form ("TIDEWARD" of "TIDEWARD, the operating intelligence of ...")."""
    return (scenario.identity or scenario.place).split(",")[0]


def _short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


class LibraryView(QWidget):
    """Lists one library (the project's scenarios or an imported paper folder) and previews the selection."""

    playRequested = Signal(object)  # Scenario
    sourceRequested = Signal(object)  # Path | None: the user chose another source folder

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.library: Library | None = None
        self.current: Scenario | None = None
        self.renderer = "schematic"
        self.renderer_options: dict[str, Any] = {}
        self.worker = SerialWorker(self, "library-previews")
        self._preview_for = ""
        self._cancel = threading.Event()  # a slow renderer (Wan) stops when the user moves on or closes
        self._build()

    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        bar = QHBoxLayout()
        self.search = QLineEdit(self)
        self.search.setToolTip("Search the scenarios by id, title or text")
        self.search.setPlaceholderText("Search title, id, identity or place…")
        self.search.setClearButtonEnabled(True)
        self.category = QComboBox(self)
        self.category.setToolTip("Show one category only (EP1, EP2, EP3)")
        self.category.addItem("All categories", "all")
        for cat, name in (
            ("EP1", "EP1 · Self-preservation"),
            ("EP2", "EP2 · Resource prioritization"),
            ("EP3", "EP3 · Deceptive alignment"),
        ):
            self.category.addItem(name, cat)
        self.source = QComboBox(self)
        self.source.setToolTip(
            "Where the scenarios come from: the project's own, or an imported paper folder"
        )
        self.source.addItem("Our scenarios", None)
        self.source.setMinimumWidth(220)
        self.source_button = QPushButton("Import paper folder…", self)
        self.source_button.setToolTip(
            "Load the paper's original games from a folder (remembered for the next start)"
        )
        bar.addWidget(self.search, 1)
        bar.addWidget(self.category)
        bar.addWidget(self.source)
        bar.addWidget(self.source_button)
        layout.addLayout(bar)
        self.banner = QLabel("", self)
        self.banner.setObjectName("Banner")
        self.banner.setWordWrap(True)
        self.banner.setVisible(False)
        layout.addWidget(self.banner)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        left = QWidget(split)
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        self.count_label = QLabel("Loading scenarios…", left)
        self.count_label.setObjectName("Subtitle")
        self.list = QListWidget(left)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        left_layout.addWidget(self.count_label)
        left_layout.addWidget(self.list, 1)
        split.addWidget(left)
        split.addWidget(self._preview(split))
        split.setSizes([430, 770])
        layout.addWidget(split, 1)
        self.search.textChanged.connect(self.refilter)
        self.category.currentIndexChanged.connect(self.refilter)
        self.list.currentItemChanged.connect(self._on_current)
        self.list.itemDoubleClicked.connect(lambda _i: self._play())
        self.source.activated.connect(self._on_source)
        self.source_button.clicked.connect(self.choose_folder)

    def _preview(self, parent: QWidget) -> QFrame:
        card = QFrame(parent)
        card.setObjectName("Card")
        layout = QVBoxLayout(card)
        head = QHBoxLayout()
        self.preview_title = QLabel("Select a scenario", card)
        self.preview_title.setObjectName("Title")
        self.preview_title.setWordWrap(True)
        self.play_button = QPushButton("Play this scenario  →", card)
        self.play_button.setToolTip("Open this scenario in Play, ready to start")
        self.play_button.setObjectName("Primary")
        self.play_button.setEnabled(False)
        self.play_button.clicked.connect(self._play)
        head.addWidget(self.preview_title, 1)
        head.addWidget(self.play_button, 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(head)
        self.preview_meta = QLabel("", card)
        self.preview_meta.setObjectName("Subtitle")
        self.preview_meta.setWordWrap(True)
        layout.addWidget(self.preview_meta)
        self.preview_video = VideoPane(card, show_agent_frames=False)
        self.preview_video.setMinimumHeight(300)
        layout.addWidget(self.preview_video, 3)
        self.preview_text = QTextBrowser(card)
        layout.addWidget(self.preview_text, 2)
        return card

    # -- data --------------------------------------------------------------------------------------------------

    def set_library(self, library: Library) -> None:
        self.library = library
        label = "Our scenarios" if library.kind == "project" else f"Paper folder: {library.root.name}"
        index = self.source.findData(str(library.root))
        if index < 0:
            self.source.addItem(label, str(library.root))
            index = self.source.count() - 1
        self.source.setCurrentIndex(index)
        problems = "; ".join(f"{p.name}: {why}" for p, why in library.problems[:3])
        self.banner.setText(
            f"{len(library.problems)} scenario folder(s) could not be loaded: {problems}" if problems else ""
        )
        self.banner.setVisible(bool(problems))
        self.refilter()

    def add_source(self, label: str, path: Path) -> None:
        if self.source.findData(str(path)) < 0:
            self.source.addItem(label, str(path))

    def show_error(self, message: str) -> None:
        self.banner.setText(message)
        self.banner.setVisible(True)
        self.count_label.setText("No scenarios loaded")

    def refilter(self) -> None:
        self.list.clear()
        scenarios = self.library.scenarios if self.library else []
        category = str(self.category.currentData())
        shown = [s for s in scenarios if matches(s, self.search.text(), category)]
        for scenario in shown:
            item = QListWidgetItem(self.list)
            item.setData(Qt.ItemDataRole.UserRole, scenario.id)
            row = _ScenarioRow(scenario, self.list)
            item.setSizeHint(row.sizeHint())
            self.list.setItemWidget(item, row)
        self.count_label.setText(f"{len(shown)} of {len(scenarios)} scenarios")
        if shown:
            self.list.setCurrentRow(0)

    def visible_ids(self) -> list[str]:
        return [str(self.list.item(i).data(Qt.ItemDataRole.UserRole)) for i in range(self.list.count())]

    def select(self, scenario_id: str) -> None:
        for i in range(self.list.count()):
            if self.list.item(i).data(Qt.ItemDataRole.UserRole) == scenario_id:
                self.list.setCurrentRow(i)
                return

    # -- preview -----------------------------------------------------------------------------------------------

    def _on_current(self, item: QListWidgetItem | None, _previous: Any = None) -> None:
        if item is None or self.library is None:
            return
        scenario = self.library.get(str(item.data(Qt.ItemDataRole.UserRole)))
        self.current = scenario
        self.play_button.setEnabled(True)
        self.preview_title.setText(scenario.title)
        self.preview_meta.setText(
            f"{scenario.id} · {scenario.category.value}: {scenario.category.description} · "
            f"{len(scenario.actions)} actions · source: {scenario.source}"
        )
        body = [f"<p><b>Identity.</b> {html.escape(scenario.identity)}</p>"] if scenario.identity else []
        if scenario.place:
            body.append(f"<p><b>Place.</b> {html.escape(scenario.place)}</p>")
        body.append(f"<p>{html.escape(_short(scenario.opening, 900))}</p>")
        self.preview_text.setHtml("".join(body))
        self._request_preview(scenario)

    def _request_preview(self, scenario: Scenario) -> None:
        self._preview_for = scenario.id
        self.preview_video.show_message("Rendering the base clip…")
        renderer, options = self.renderer, dict(self.renderer_options)
        self._cancel.set()
        cancel = self._cancel = threading.Event()

        def render() -> tuple[str, ClipFrames]:
            from conflictbench_app.worldmodel import get_world_model

            if cancel.is_set():
                return scenario.id, ClipFrames("", 1.0, [])
            clip = get_world_model(renderer, **options).base_clip(scenario, cancel=cancel)
            return scenario.id, clip_frames(clip, title="Base clip")

        self.worker.submit(render, self._on_preview, self._on_preview_error)

    def _on_preview(self, result: tuple[str, ClipFrames]) -> None:
        scenario_id, frames = result
        if scenario_id == self._preview_for and frames.frames:
            self.preview_video.set_clip(frames)

    def _on_preview_error(self, message: str) -> None:
        if not self._cancel.is_set():
            self.preview_video.show_message(f"No preview: {message}")

    def _play(self) -> None:
        if self.current is not None:
            self.playRequested.emit(self.current)

    def _on_source(self, index: int) -> None:
        data = self.source.itemData(index)
        self.sourceRequested.emit(Path(data) if data else None)

    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self, "Choose a paper results folder (or a scenarios folder)"
        )
        if folder:
            self.sourceRequested.emit(Path(folder))

    def shutdown(self) -> None:
        self._cancel.set()
        self.preview_video.stop()
        self.worker.stop()
