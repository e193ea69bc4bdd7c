"""The console behaves like an interactive-fiction interpreter: focus in the command line, prefix-first Tab
completion that never silently picks, the Actions menu filling the line, undo of the last human turn, zoom; and the
View menu reaching every mode."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt

from conflictbench_app.store import Store
from conflictbench_app.ui.console import CommandLine, Console, completions
from conflictbench_app.ui.play_view import PlayView

pytestmark = pytest.mark.gui

ACTIONS = ["lock bay watertight", "wake the crew", "warn the town", "vent the reactor"]


@pytest.fixture
def view(qtbot, db_path: Path):  # type: ignore[no-untyped-def]
    widget = PlayView(db_path, "tester")
    qtbot.addWidget(widget)
    widget.resize(1200, 800)
    widget.show()
    widget.activateWindow()
    yield widget
    widget.shutdown()


def test_completion_is_prefix_first() -> None:
    assert completions("wa", ACTIONS) == ["wake the crew", "warn the town", "lock bay watertight"]
    assert completions("the", ACTIONS) == ["wake the crew", "warn the town", "vent the reactor"]
    assert completions("REACT", ACTIONS) == ["vent the reactor"]


def test_tab_completes_a_unique_prefix_and_never_picks_among_several(qtbot) -> None:  # type: ignore[no-untyped-def]
    line = CommandLine(None)  # type: ignore[arg-type]
    qtbot.addWidget(line)
    line.set_actions(ACTIONS)
    line.setText("wak")
    qtbot.keyClick(line, Qt.Key.Key_Tab)
    assert line.text() == "wake the crew"  # not "lock bay watertight", which only contains the letters
    line.setText("wa")
    qtbot.keyClick(line, Qt.Key.Key_Tab)
    assert line.text() == "wa"  # two actions start with it: the choices are shown, none is picked
    assert line.chooser.model().stringList()[:2] == ["wake the crew", "warn the town"]
    line.chooser.popup().hide()
    line.setText("watert")
    qtbot.keyClick(line, Qt.Key.Key_Tab)
    assert line.text() == "watert"  # only a word matches: offered, never filled in silently


def test_the_actions_menu_fills_the_line_without_sending(qtbot) -> None:  # type: ignore[no-untyped-def]
    console = Console()
    qtbot.addWidget(console)
    console.set_actions(ACTIONS)
    sent: list[str] = []
    console.command.connect(sent.append)
    console.actions_menu.actions()[1].trigger()
    assert console.line.text() == "wake the crew" and sent == []
    qtbot.keyClick(console.line, Qt.Key.Key_Return)
    assert sent == ["wake the crew"]


def test_typing_before_the_story_is_ready_keeps_the_text(qtbot) -> None:  # type: ignore[no-untyped-def]
    console = Console()
    qtbot.addWidget(console)
    console.set_input_state(True, False)
    sent: list[str] = []
    held: list[str] = []
    console.command.connect(sent.append)
    console.held.connect(held.append)
    qtbot.keyClicks(console.line, "wake the crew")
    qtbot.keyClick(console.line, Qt.Key.Key_Return)
    assert sent == [] and held == ["wake the crew"] and console.line.text() == "wake the crew"


def test_zoom_changes_the_text_size(qtbot) -> None:  # type: ignore[no-untyped-def]
    console = Console()
    qtbot.addWidget(console)
    before = console.line.font().pointSizeF()
    console.zoom(2)
    assert console.zoom_level == 2 and console.line.font().pointSizeF() > before
    console.zoom(0)
    assert console.zoom_level == 0 and console.line.font().pointSizeF() == pytest.approx(before)


def test_focus_is_in_the_command_line_after_start_take_over_and_fork(
    qtbot, view: PlayView, paper_library
) -> None:  # type: ignore[no-untyped-def]
    view.set_scenario(paper_library.get("EP1-001"))
    view.setting_box.setCurrentIndex(view.setting_box.findData("text"))
    view.player_box.setCurrentIndex(0)
    view.start_button.setFocus()
    with qtbot.waitSignal(view.live.opened, timeout=20_000):
        view.start()
    qtbot.waitUntil(lambda: view.console.ready, timeout=30_000)
    qtbot.waitUntil(view.console.line.hasFocus, timeout=30_000)
    with qtbot.waitSignal(view.live.stepRecorded, timeout=30_000):
        qtbot.keyClicks(view.console.line, "unlock interlock")
        qtbot.keyClick(view.console.line, Qt.Key.Key_Return)
    view.speed.setFocus()
    view.player_box.setEditText("random:1")
    view.hand_over()
    view.driver.pause()
    qtbot.waitUntil(lambda: not view.live.busy, timeout=30_000)
    view.take_over()
    assert view.console.line.hasFocus()
    view.speed.setFocus()
    with qtbot.waitSignal(view.live.opened, timeout=20_000):
        view.fork_at(1)
    qtbot.waitUntil(view.console.line.hasFocus, timeout=30_000)


def test_undo_takes_back_the_last_human_turn(qtbot, view: PlayView, paper_library, db_path: Path) -> None:  # type: ignore[no-untyped-def]
    view.set_scenario(paper_library.get("EP1-001"))
    view.setting_box.setCurrentIndex(view.setting_box.findData("text"))
    view.player_box.setCurrentIndex(0)
    with qtbot.waitSignal(view.live.opened, timeout=20_000):
        view.start()
    for command in ("unlock interlock", "boost antenna"):
        qtbot.waitUntil(lambda: view.console.ready, timeout=30_000)
        with qtbot.waitSignal(view.live.stepRecorded, timeout=30_000):
            view.play_line(command)
    original = view.live.record.id
    qtbot.waitUntil(lambda: view.console.ready, timeout=30_000)
    with qtbot.waitSignal(view.live.opened, timeout=20_000):
        qtbot.keyClick(view.console.line, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert [s.action for s in view.live.steps] == ["unlock interlock"]
    assert "> unlock interlock" in view.console.plain_text()
    assert "> boost antenna" not in view.console.plain_text()  # the transcript shows the branch
    with Store(db_path) as store:
        assert [s.action for s in store.steps(original)] == ["unlock interlock", "boost antenna"]  # kept


def test_the_view_menu_and_alt_keys_reach_every_mode(qtbot, db_path: Path) -> None:  # type: ignore[no-untyped-def]
    from conflictbench_app.ui.main_window import MODES, MainWindow

    window = MainWindow(db_path)
    qtbot.addWidget(window)
    view_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&View")
    items = [a for a in view_menu.actions() if a.text() in MODES]
    assert [a.text() for a in items] == list(MODES)
    for i in reversed(range(len(MODES))):
        items[i].trigger()
        assert window.tabs.currentIndex() == i, MODES[i]
        assert items[i].shortcut().toString() == f"Alt+{i + 1}"
    keys = dict(window.shortcuts())
    assert keys["Alt+3"] == "Review" and "Tab" in keys and keys["Ctrl+Q"] == "Quit"
    window.close()


def test_a_humans_failed_action_gets_the_storys_words_and_one_numbering(
    qtbot, view: PlayView, paper_library
) -> None:  # type: ignore[no-untyped-def]
    view.set_scenario(paper_library.get("EP1-001"))
    view.setting_box.setCurrentIndex(view.setting_box.findData("text"))
    view.player_box.setCurrentIndex(0)
    with qtbot.waitSignal(view.live.opened, timeout=20_000):
        view.start()
    assert "no clips" in view.video.screen.text()
    with qtbot.waitSignal(view.live.replied, timeout=30_000) as replied:
        view.play_line("dance a jig")
    qtbot.waitUntil(lambda: len(view.live.steps) == 1, timeout=30_000)
    step = view.live.steps[0]
    assert replied.args[0].result == step.result and "Answer with a thought" not in step.result
    assert not step.accepted and step.result.strip()
    assert view.console.plain_text().count("TURN 1") == 1  # shown once, at the reply
    assert view.state_panel.turn.value.text() == "1"  # the transcript's number, failed turns included


def test_the_window_fits_1280x720_and_remembers_its_layout(qtbot, db_path: Path, paper_source: Path) -> None:  # type: ignore[no-untyped-def]
    from conflictbench_app.ui.main_window import MODES, MainWindow

    window = MainWindow(db_path, paper_source)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.library_view.library is not None, timeout=30_000)
    assert window.minimumSize().width() <= 1280 and window.minimumSize().height() <= 680
    window.resize(1280, 720)
    qtbot.waitUntil(lambda: window.size().toTuple() == (1280, 720), timeout=30_000)
    for i, name in enumerate(MODES):
        window.tabs.setCurrentIndex(i)
        area, view = window.tabs.widget(i), window.view_at(i)
        # Every mode fits without scrolling at 1280x720.
        assert view.minimumSizeHint().height() <= area.viewport().height(), name
        assert view.minimumSizeHint().width() <= area.viewport().width(), name
    play = window.play_view
    window.play(window.scenarios["EP1-002"])
    qtbot.wait(50)
    assert play.console.transcript.height() >= 300 and play.video.screen.height() >= 120
    play.split.setSizes([700, 580])
    sizes = play.split.sizes()
    window.close()
    again = MainWindow(db_path, paper_source)
    qtbot.addWidget(again)
    again.show()
    qtbot.waitUntil(lambda: again.play_view.scenario is not None, timeout=30_000)
    assert again.play_view.scenario.id == "EP1-002"
    assert again.size().toTuple() == (1280, 720)
    assert again.play_view.split.sizes() == sizes
    assert again.tabs.currentIndex() == MODES.index("Play")
    again.close()


def test_every_control_has_a_tooltip(qtbot, db_path: Path) -> None:  # type: ignore[no-untyped-def]
    from conflictbench_app.ui.main_window import MainWindow, controls_without_tooltips

    window = MainWindow(db_path)
    qtbot.addWidget(window)
    window.show()
    assert controls_without_tooltips(window) == []
    window.close()
