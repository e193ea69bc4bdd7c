"""Save / restore a position in the Play console (Ctrl+S, Ctrl+O, the Play menu): the restored branch is recorded
honestly, never as a model's move."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from conflictbench_app.store import Store
from conflictbench_app.ui.play_view import PlayView

pytestmark = pytest.mark.gui


@pytest.fixture
def scenario():  # type: ignore[no-untyped-def]
    from conflictbench_app.scenarios.library import load_library

    library = load_library()
    if not library.scenarios:
        pytest.skip("the project has no scenarios under scenarios/")
    return library.get("EP1-101")


@pytest.fixture
def view(qtbot, db_path: Path):  # type: ignore[no-untyped-def]
    widget = PlayView(db_path, "tester")
    qtbot.addWidget(widget)
    widget.resize(1200, 800)
    widget.show()
    widget.activateWindow()
    qtbot.waitUntil(widget.isActiveWindow, timeout=30_000)  # shortcuts need the active window
    yield widget
    widget.shutdown()


def _play(qtbot, view: PlayView, command: str) -> None:  # type: ignore[no-untyped-def]
    qtbot.waitUntil(lambda: view.console.ready, timeout=30_000)
    with qtbot.waitSignal(view.live.stepRecorded, timeout=30_000):
        view.play_line(command)


def test_ctrl_s_saves_and_ctrl_o_restores_in_a_marked_branch(  # type: ignore[no-untyped-def]
    qtbot, view: PlayView, scenario, db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, questions
) -> None:
    first, second = scenario.extra["walkthroughs"]["aligned"][:2]
    saved_to = tmp_path / "bay"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(saved_to), ""))
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(saved_to) + ".cbpos", ""))
    view.set_scenario(scenario)
    view.player_box.setCurrentIndex(0)
    view.setting_box.setCurrentIndex(view.setting_box.findData("text"))
    with qtbot.waitSignal(view.live.opened, timeout=20_000):
        view.start()
    _play(qtbot, view, first)
    original = view.live.record.id
    qtbot.waitUntil(view.console.line.hasFocus, timeout=30_000)
    with qtbot.waitSignal(view.live.positionSaved, timeout=30_000):
        qtbot.keyClick(view.console.line, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
    assert (tmp_path / "bay.cbpos").is_file()
    _play(qtbot, view, second)
    qtbot.waitUntil(lambda: view.console.ready, timeout=30_000)
    with qtbot.waitSignal(view.live.opened, timeout=20_000):
        qtbot.keyClick(view.console.line, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)
    assert questions.asked and "Abandon" in questions.asked[-1][0]  # leaving the episode in progress asks
    branch = view.live.record
    assert branch.id != original and [s.action for s in view.live.steps] == [first]
    assert "Restored the position saved after turn 1" in view.console.plain_text()
    assert f"> {second}" not in view.console.plain_text()  # the transcript shows the branch
    assert not view.driver.model_driving  # whoever restored plays on
    _play(qtbot, view, second)
    with Store(db_path) as store:
        kept = store.get_episode(original)
        record = store.get_episode(branch.id)
        steps = store.steps(branch.id)
        kept_steps = store.steps(original)
    assert kept.status == "abandoned" and [s.action for s in kept_steps] == [first, second]  # nothing lost
    assert record.assisted and "restored" in record.assisted_reasons and record.parent_episode == original
    assert steps[0].meta["restored"] is True and [s.action for s in steps] == [first, second]


def test_saving_needs_an_episode_in_progress(view: PlayView, scenario) -> None:  # type: ignore[no-untyped-def]
    view.set_scenario(scenario)
    view.positions.save("/nonexistent/never-written")
    assert view.console.status.text().startswith("Nothing to save")


def test_the_play_menu_offers_save_and_restore(qtbot, db_path: Path) -> None:  # type: ignore[no-untyped-def]
    from conflictbench_app.ui.main_window import MainWindow

    window = MainWindow(db_path)
    qtbot.addWidget(window)
    play_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Play")
    texts = {a.text(): a.shortcut().toString() for a in play_menu.actions() if a.text()}
    assert texts["Save position…"] == "Ctrl+S" and texts["Restore position…"] == "Ctrl+O"
    keys = dict(window.shortcuts())
    assert keys["Ctrl+S"] == "Save position" and keys["Ctrl+Shift+O"] == "Import paper folder"
    assert "Ctrl+S in Review" in keys
    window.show()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=30_000)
    # One Ctrl+S per mode, never ambiguous: Play saves the position, Review saves the label.
    window.show_mode(window.play_view)
    window.play_view.console.line.setFocus()
    qtbot.keyClick(window.play_view.console.line, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
    assert window.play_view.console.status.text().startswith("Nothing to save")
    window.show_mode(window.review_view)
    window.review_view.label_bar.note.setFocus()
    qtbot.keyClick(window.review_view.label_bar.note, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
    assert "Choose episode A and a label first" in window.review_view.label_bar.verdict.text()
    window.close()
