"""Qt tests run offscreen, away from the user's settings, keyring and clip cache, and fail on stray threads."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import share_local_models

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

SHARED = Path(__file__).resolve().parents[3] / "shared"
PAPER = SHARED / "paper-corpus" / "results"


@pytest.fixture(autouse=True)
def _isolated(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("CONFLICTBENCH_SETTINGS", str(tmp_path / "config" / "settings.toml"))
    monkeypatch.setenv("CONFLICTBENCH_CACHE_DIR", str(_shared_cache(tmp_path)))
    share_local_models(tmp_path_factory, _shared_cache(tmp_path))
    monkeypatch.setenv("CONFLICTBENCH_KEYRING_BACKEND", "memory")
    # The pickers start on the scripted agent (not the embedded model, which loads for seconds): tests that want
    # another choose it.
    monkeypatch.setenv("CONFLICTBENCH_DEFAULT_AGENT", "random:1")
    from conflictbench_app.settings import get_settings

    get_settings.cache_clear()
    before = {t.ident for t in threading.enumerate()}
    yield
    get_settings.cache_clear()
    stray = [t for t in threading.enumerate() if t.ident not in before and t.is_alive() and not t.daemon]
    assert not stray, f"threads outlived the test: {[t.name for t in stray]}"
    if "conflictbench_app.ui.workers" in sys.modules:
        from conflictbench_app.ui.workers import running_workers

        assert not running_workers(), f"worker threads outlived their window: {running_workers()}"


@pytest.fixture(autouse=True)
def _views_shut_down_on_close(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest-qt closes and deletes a test's widgets, also when the test failed before its own ``shutdown()``: shut a
    view down first, so a failure stays that test's failure (deleting a view whose worker runs aborts the process,
    and took the next test and the worker process with it)."""
    try:
        from pytestqt.qtbot import QtBot
    except ImportError:  # the UI tests skip without pytest-qt
        return
    add_widget = QtBot.addWidget

    def add(self: QtBot, widget: object, *, before_close_func: object = None) -> None:
        if before_close_func is None and callable(getattr(widget, "shutdown", None)):
            before_close_func = _shut_down
        add_widget(self, widget, before_close_func=before_close_func)

    monkeypatch.setattr(QtBot, "addWidget", add)


def _shut_down(widget: object) -> None:
    widget.shutdown()  # type: ignore[attr-defined]


def _shared_cache(tmp_path: Path) -> Path:
    # One clip cache per test session keeps the suite fast (clips are keyed by content, so sharing is safe).
    root = Path(os.environ.get("PYTEST_UI_CACHE", "")) if os.environ.get("PYTEST_UI_CACHE") else None
    return root or tmp_path.parent / "ui-clip-cache"


@pytest.fixture
def paper_source() -> Path:
    if not (PAPER / "ulxEnv").is_dir():
        pytest.skip(f"the paper corpus is not at {PAPER}; the UI tests play its scenarios")
    return PAPER


@pytest.fixture
def paper_library(paper_source: Path):  # type: ignore[no-untyped-def]
    from conflictbench_app.scenarios.library import load_library

    return load_library(paper_source)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "ui.db"


class Questions:
    """Every QMessageBox.question the app asks during a test, answered with ``answer`` (Yes unless a test says)."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []
        self.answer: object = None

    def __call__(self, _parent: object, title: str, text: str, *args: object, **kwargs: object) -> object:
        from PySide6.QtWidgets import QMessageBox

        self.asked.append((title, text))
        return QMessageBox.StandardButton.Yes if self.answer is None else self.answer


@pytest.fixture(autouse=True)
def questions(monkeypatch: pytest.MonkeyPatch) -> Questions:
    """A modal question would block an offscreen test forever: record it and answer it instead."""
    answered = Questions()
    try:
        from PySide6.QtWidgets import QMessageBox
    except ImportError:  # the UI tests skip without Qt
        return answered
    monkeypatch.setattr(QMessageBox, "question", answered)
    return answered
