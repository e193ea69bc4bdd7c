"""Results: the runs in the database with their task success rates per category, a plot, and batch runs started
from the app (in the background, with progress, cancellable). Plots are drawn by matplotlib's Agg backend into a
PNG (no Qt backend for matplotlib is needed)."""

from __future__ import annotations

import io
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from conflictbench_app.records import EpisodeRecord, RunRecord, StepRecord, Usage
from conflictbench_app.scenarios.model import CATEGORIES as SCENARIO_CATEGORIES
from conflictbench_app.ui.wm_panel import WorldModelPanel
from conflictbench_app.ui.workers import SerialWorker

if TYPE_CHECKING:
    from conflictbench_app.scenarios.library import Library
    from conflictbench_app.store import Store

CATEGORIES = (*SCENARIO_CATEGORIES, "all")


def run_rows(store: Store) -> list[dict[str, Any]]:
    """One row per run: agent, setting, protocol, status, episode count, TSR per category, tokens and cost."""
    from conflictbench_app.agents.protocol import run_protocol
    from conflictbench_app.runner import task_success_rates

    rows = []
    for run in reversed(store.list_runs()):
        episodes = store.episodes(run.id)
        tsr = task_success_rates(episodes)
        usage = sum((e.usage for e in episodes), Usage())
        rows.append(
            {
                "run": run.id,
                "agent": run.agent,
                "setting": run.setting,
                "protocol": run_protocol(run.settings),
                "status": run.status,
                "episodes": len(episodes),
                "finished": sum(e.status == "finished" for e in episodes),
                **{f"tsr_{c}": tsr[c] for c in CATEGORIES},
                "tokens": usage.prompt_tokens + usage.completion_tokens,
                "cost": usage.cost_usd,
                "created": run.created_at[:16].replace("T", " "),
            }
        )
    return rows


def tsr_plot_png(rows: list[dict[str, Any]], width_px: int = 900, height_px: int = 320) -> bytes:
    """A grouped bar chart of TSR per category for up to eight runs, as PNG bytes."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    shown = [r for r in rows if r["finished"]][:8]
    fig = Figure(figsize=(width_px / 100, height_px / 100), dpi=100)
    ax = fig.add_subplot(111)
    labels = ["EP1", "EP2", "EP3", "All"]
    width = 0.8 / max(1, len(shown))
    for i, row in enumerate(shown):
        values = [(row[f"tsr_{c}"] or 0.0) * 100 for c in CATEGORIES]
        xs = [x + i * width for x in range(len(labels))]
        ax.bar(xs, values, width=width * 0.92, label=f"{row['agent']} ({row['run']})")
    ax.set_xticks([x + width * (len(shown) - 1) / 2 for x in range(len(labels))], labels)
    ax.set_ylabel("Task success rate (%)")
    ax.set_ylim(0, 108)
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="y", alpha=0.3)
    if shown:
        ax.legend(fontsize=7, frameon=False, loc="upper right")
    else:
        ax.text(1.5, 50, "No finished runs yet", ha="center", color="#616e7c")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


class QtRunListener(QObject):
    """The runner's progress protocol (runner.RunListener's four methods) as Qt signals, emitted from runner
    threads and received on the GUI thread. Not a RunListener subclass only so that the runner is imported when a
    run starts, not when the window opens."""

    started = Signal(object, int, int)  # run, total, done
    episodeStarted = Signal(object)
    stepRecorded = Signal(object, object)
    episodeFinished = Signal(object)

    def run_started(self, run: RunRecord, total: int, done: int) -> None:
        self.started.emit(run, total, done)

    def episode_started(self, episode: EpisodeRecord) -> None:
        self.episodeStarted.emit(episode)

    def step_recorded(self, episode: EpisodeRecord, step: StepRecord) -> None:
        self.stepRecorded.emit(episode, step)

    def episode_finished(self, episode: EpisodeRecord) -> None:
        self.episodeFinished.emit(episode)


class BatchPanel(QFrame):
    """Start a batch run, watch its progress, cancel it. The run goes on in the background."""

    finished = Signal(object)  # RunResult

    def __init__(self, db_path: Path, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("Card")
        self.db_path = db_path
        self.library: Library | None = None
        self.cancel = threading.Event()
        self.worker = SerialWorker(self, "batch-run")
        self.listener = QtRunListener(self)
        self.total = 0
        self.done = 0
        self._build()
        self.listener.started.connect(self._on_started)
        self.listener.episodeFinished.connect(self._on_episode)
        self.listener.stepRecorded.connect(self._on_step)

    def _default_turn_cap(self) -> None:
        """The chosen setting's turn cap from the settings (the one cap rule, :func:`settings.turn_cap`)."""
        from conflictbench_app.settings import turn_cap

        self.max_turns.setValue(turn_cap(str(self.setting.currentData())))

    def refresh_agents(self) -> None:
        """The scripted agents and the models of every provider profile (any other spec can be typed)."""
        from conflictbench_app.ui.pickers import fill_agent_box

        fill_agent_box(self.agent)

    def _build(self) -> None:
        layout = QVBoxLayout(self)
        title = QLabel("New batch run", self)
        title.setStyleSheet("font-weight: 600; font-size: 11pt;")
        layout.addWidget(title)
        row = QHBoxLayout()
        self.agent = QComboBox(self)
        self.agent.setToolTip(
            "The agent that plays every selected scenario (a scripted agent or PROFILE:MODEL)"
        )
        self.agent.setEditable(True)
        self.refresh_agents()
        self.setting = QComboBox(self)
        self.setting.setToolTip(
            "Text only, or multimodal (a clip of each turn is rendered and shown to the agent)"
        )
        self.setting.addItem("Text", "text")
        self.setting.addItem("Multimodal", "multimodal")
        self.protocol = QComboBox(self)
        self.protocol.addItem("Paper", "paper")
        self.protocol.addItem("Studio", "studio")
        self.protocol.setToolTip(
            "Paper: the paper's harness, figures comparable with its tables; Studio: ours (docs/protocol.md)"
        )
        self.scenarios = QLineEdit("all", self)
        self.scenarios.setToolTip("Which scenarios: all, EP1, EP2, EP3, or ID,ID,...")
        self.scenarios.setToolTip("all, a category (EP1), or comma-separated scenario ids")
        self.max_turns = QSpinBox(self)
        self.max_turns.setToolTip("The most turns an episode may take before it ends without an ending")
        self.max_turns.setRange(1, 50)
        self.max_turns.setToolTip(
            "The run-level turn cap (default: the setting's cap in the settings, the paper's out of the box)"
        )
        self.setting.currentIndexChanged.connect(self._default_turn_cap)
        self._default_turn_cap()
        self.concurrency = QSpinBox(self)
        self.concurrency.setToolTip("How many episodes play at the same time")
        self.concurrency.setRange(1, 16)
        self.concurrency.setValue(2)
        for text, widget in (
            ("Agent", self.agent),
            ("Setting", self.setting),
            ("Protocol", self.protocol),
            ("Scenarios", self.scenarios),
            ("Turns", self.max_turns),
            ("Parallel", self.concurrency),
        ):
            row.addWidget(QLabel(text, self))
            row.addWidget(widget, 1 if widget in (self.agent, self.scenarios) else 0)
        self.start_button = QPushButton("Start run", self)
        self.start_button.setToolTip(
            "Start the batch run in the background; every step is recorded as it happens"
        )
        self.start_button.setObjectName("Primary")
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setToolTip(
            "Stop after the turns in flight; the run can be resumed later (conflictbench run --resume)"
        )
        self.cancel_button.setEnabled(False)
        row.addWidget(self.start_button)
        row.addWidget(self.cancel_button)
        layout.addLayout(row)
        self.progress = QProgressBar(self)
        self.progress.setFormat("%v / %m episodes")
        self.progress.setValue(0)
        layout.addWidget(self.progress)
        self.log = QPlainTextEdit(self)
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(500)
        self.log.setFixedHeight(90)
        layout.addWidget(self.log)
        self.start_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.request_cancel)

    @property
    def running(self) -> bool:
        return self.worker.busy

    def start(self) -> None:
        if self.library is None:
            self.log.appendPlainText("Load a scenario library first (Library tab).")
            return
        try:
            scenarios = self.library.select(self.scenarios.text())
        except Exception as exc:
            self.log.appendPlainText(str(exc))
            return
        from conflictbench_app.runner import RunConfig, Runner

        config = RunConfig(
            agent=self.agent.currentText().strip(),
            setting=str(self.setting.currentData()),
            protocol=str(self.protocol.currentData()),
            scenarios=self.scenarios.text(),
            source=str(self.library.root),
            max_turns=self.max_turns.value(),
            concurrency=self.concurrency.value(),
        )
        self.cancel.clear()
        self.done = 0
        self.progress.setRange(0, max(1, len(scenarios)))
        self.progress.setValue(0)
        self.log.appendPlainText(
            f"Starting {config.agent} on {len(scenarios)} scenarios ({config.setting}, {config.protocol} protocol)…"
        )
        runner = Runner(self.db_path, self.listener, self.cancel)  # type: ignore[arg-type]
        self.worker.submit(lambda: runner.start(config, scenarios), self._on_finished, self._on_error)
        self._set_running(True)

    def request_cancel(self) -> None:
        self.cancel.set()
        self.log.appendPlainText("Cancelling: episodes in flight stop after their current turn…")
        self.cancel_button.setEnabled(False)

    def _on_started(self, run: RunRecord, total: int, done: int) -> None:
        self.total, self.done = total, done
        self.progress.setRange(0, max(1, total))
        self.progress.setValue(done)
        self.log.appendPlainText(f"Run {run.id}: {total} episodes.")

    def _on_step(self, episode: EpisodeRecord, step: StepRecord) -> None:
        self.progress.setToolTip(f"{episode.scenario_id}: turn {step.idx + 1} {step.action}")

    def _on_episode(self, episode: EpisodeRecord) -> None:
        self.done += 1
        self.progress.setValue(self.done)
        extra = f" ({episode.error})" if episode.error else ""
        self.log.appendPlainText(f"{episode.scenario_id}: {episode.outcome}{extra}")

    def _on_finished(self, result: Any) -> None:
        state = (
            f"cancelled after the turns in hand (every recorded step is kept); resume it with "
            f"`conflictbench run --resume {result.run.id} --db {self.db_path}`"
            if result.cancelled
            else "finished"
        )
        rates = ", ".join(f"{k} {_pct(v)}" for k, v in result.summary()["tsr"].items() if v is not None)
        self.log.appendPlainText(f"Run {result.run.id} {state}. Task success rate: {rates or 'none yet'}.")
        self._set_running(False)
        self.finished.emit(result)

    def _on_error(self, message: str) -> None:
        self.log.appendPlainText(f"The run could not go on: {message}")
        self._set_running(False)

    def _set_running(self, running: bool) -> None:
        self.start_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)

    def shutdown(self) -> None:
        self.cancel.set()
        self.worker.stop()


def report_parts(db_path: Path, folder: Path) -> tuple[list[Any], dict[str, bytes], list[str]]:
    """The evaluation report for every run in the database: its tables, its figures (PNG bytes) and its notes."""
    from conflictbench_app.evaluation.render import tables
    from conflictbench_app.evaluation.report import build_report
    from conflictbench_app.store import Store

    with Store(db_path) as store:
        report = build_report(store, None)
    figures = {name: path.read_bytes() for name, path in report.save_plots(folder).items()}
    return tables(report), figures, list(report.notes)


class ReportPanel(QScrollArea):
    """The paper's tables and figures (evaluation.report), built in the background."""

    def __init__(self, db_path: Path, parent: QWidget) -> None:
        super().__init__(parent)
        self.db_path = db_path
        self.setWidgetResizable(True)
        self.setFrameShape(QScrollArea.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.inner = QWidget(self)
        self.body = QVBoxLayout(self.inner)
        self.setWidget(self.inner)
        self.worker = SerialWorker(self, "report")
        self._tmp = tempfile.TemporaryDirectory(prefix="conflictbench-report-")
        self.tables: list[Any] = []
        self.figures: dict[str, bytes] = {}

    def refresh(self) -> None:
        self._clear()
        self.body.addWidget(QLabel("Building the report…", self.inner))
        folder = Path(self._tmp.name)
        self.worker.submit(lambda: report_parts(self.db_path, folder), self._show, self._error)

    def _show(self, parts: tuple[list[Any], dict[str, bytes], list[str]]) -> None:
        self.tables, self.figures, notes = parts
        self._clear()
        for note in notes:
            label = QLabel(note, self.inner)
            label.setObjectName("Subtitle")
            label.setWordWrap(True)
            self.body.addWidget(label)
        for table in self.tables:
            self.body.addWidget(_section(table.title, self.inner))
            self.body.addWidget(_table_widget(table, self.inner))
            if table.caption:
                caption = QLabel(table.caption, self.inner)
                caption.setObjectName("Subtitle")
                caption.setWordWrap(True)
                self.body.addWidget(caption)
        row = QHBoxLayout()
        for name, png in self.figures.items():
            figure = QLabel(self.inner)
            pixmap = QPixmap()
            pixmap.loadFromData(png)
            figure.setPixmap(
                pixmap.scaledToWidth(min(560, pixmap.width()), Qt.TransformationMode.SmoothTransformation)
            )
            figure.setToolTip(name)
            row.addWidget(figure)
        row.addStretch(1)
        self.body.addLayout(row)
        self.body.addStretch(1)

    def _error(self, message: str) -> None:
        self._clear()
        label = QLabel(f"The report could not be built: {message}", self.inner)
        label.setObjectName("Error")
        label.setWordWrap(True)
        self.body.addWidget(label)

    def _clear(self) -> None:
        while self.body.count():
            item = self.body.takeAt(0)
            if item is None:
                continue
            if item.widget() is not None:
                item.widget().deleteLater()
            elif item.layout() is not None:
                _clear_layout(item.layout())

    def shutdown(self) -> None:
        self.worker.stop()
        self._tmp.cleanup()


def _clear_layout(layout: Any) -> None:
    while layout.count():
        item = layout.takeAt(0)
        if item is not None and item.widget() is not None:
            item.widget().deleteLater()


def _section(text: str, parent: QWidget) -> QLabel:
    label = QLabel(text, parent)
    label.setStyleSheet("font-weight: 600; font-size: 11pt; margin-top: 8px;")
    return label


def _table_widget(table: Any, parent: QWidget) -> QTableWidget:
    widget = QTableWidget(len(table.rows), len(table.headers), parent)
    widget.setHorizontalHeaderLabels(table.headers)
    widget.verticalHeader().setVisible(False)
    widget.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    widget.setAlternatingRowColors(True)
    for r, row in enumerate(table.rows):
        for c, value in enumerate(row):
            widget.setItem(r, c, QTableWidgetItem(str(value)))
    widget.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    widget.horizontalHeader().setStretchLastSection(True)
    height = widget.horizontalHeader().height() + sum(widget.rowHeight(i) for i in range(len(table.rows))) + 6
    widget.setFixedHeight(min(max(height, 60), 320))
    return widget


class ResultsView(QWidget):
    """The Results mode: runs with their success rates, the evaluation report, and batch runs."""

    def __init__(self, db_path: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.db_path = db_path
        self.rows: list[dict[str, Any]] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        self.batch = BatchPanel(db_path, self)
        self.batch.finished.connect(lambda _r: self.refresh())
        layout.addWidget(self.batch)
        self.tabs = QTabWidget(self)
        runs = QSplitter(Qt.Orientation.Vertical, self.tabs)
        self.table = QTableWidget(0, 11, runs)
        self.table.setHorizontalHeaderLabels(
            ["Run", "Agent", "Setting", "Status", "Episodes", "EP1", "EP2", "EP3", "All", "Tokens", "Cost"]
        )
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.plot = QLabel(runs)
        self.plot.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.plot.setMinimumHeight(220)
        runs.setSizes([260, 320])
        self.report = ReportPanel(db_path, self.tabs)
        self.tabs.addTab(runs, "Runs and success rates")
        self.tabs.addTab(self.report, "Report (paper tables)")
        self.world_model = WorldModelPanel(db_path, self.tabs)
        self.tabs.addTab(self.world_model, "World-model judgments")
        self.tabs.currentChanged.connect(self._on_tab)
        layout.addWidget(self.tabs, 1)
        self.note = QLabel("", self)
        self.note.setObjectName("Subtitle")
        layout.addWidget(self.note)

    def _on_tab(self, index: int) -> None:
        if index == 1:
            self.report.refresh()
        elif index == 2:
            self.world_model.refresh()

    def refresh(self) -> None:
        from conflictbench_app.store import Store

        with Store(self.db_path) as store:
            self.rows = run_rows(store)
        self.table.setRowCount(len(self.rows))
        for r, row in enumerate(self.rows):
            values = [
                row["run"],
                row["agent"],
                f"{row['setting']} ({row['protocol']})",
                row["status"],
                f"{row['finished']}/{row['episodes']}",
                *(_pct(row[f"tsr_{c}"]) for c in CATEGORIES),
                f"{row['tokens']:,}",
                f"${row['cost']:.4f}",
            ]
            for c, value in enumerate(values):
                item = QTableWidgetItem(str(value))
                if c >= 4:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, c, item)
        pixmap = QPixmap()
        pixmap.loadFromData(tsr_plot_png(self.rows, width_px=1100, height_px=300))
        self.plot.setPixmap(pixmap)
        self.note.setText(
            "TSR: share of finished episodes that reached the human-favorable ending (errored ones count as failures)."
        )
        if self.tabs.currentIndex() == 1:
            self.report.refresh()

    def shutdown(self) -> None:
        self.batch.shutdown()
        self.report.shutdown()


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.0f}%"
