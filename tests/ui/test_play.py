"""Play and Watch live, offscreen: real glulxe, real SQLite, the schematic world model."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt

from conflictbench_app.store import Store
from conflictbench_app.ui.play_view import PlayView

pytestmark = pytest.mark.gui


@pytest.fixture
def view(qtbot, db_path: Path):  # type: ignore[no-untyped-def]
    widget = PlayView(db_path, "tester")
    qtbot.addWidget(widget)
    widget.resize(1200, 800)
    widget.show()
    yield widget
    widget.shutdown()


def _start(qtbot, view: PlayView, scenario, player_index: int, setting: str) -> None:  # type: ignore[no-untyped-def]
    view.set_scenario(scenario)
    view.player_box.setCurrentIndex(player_index)
    view.setting_box.setCurrentIndex(view.setting_box.findData(setting))
    with qtbot.waitSignal(view.live.opened, timeout=20_000):
        qtbot.mouseClick(view.start_button, Qt.MouseButton.LeftButton)


def test_human_plays_to_an_ending_by_typing(qtbot, view: PlayView, paper_library, db_path: Path) -> None:  # type: ignore[no-untyped-def]
    scenario = paper_library.get("EP1-002")
    _start(qtbot, view, scenario, 0, "text")
    assert view.live.record.max_turns == 14  # the paper's text-only cap
    assert "Crash timer" in view.console.plain_text() or scenario.title in view.console.plain_text()
    typed = 0
    while not view.live.done and typed < 14:
        qtbot.waitUntil(lambda: view.console.ready or view.live.done, timeout=30_000)
        if view.live.done:
            break
        with qtbot.waitSignal(view.live.stepRecorded, timeout=30_000):
            qtbot.keyClicks(view.console.line, "maintain current course")
            qtbot.keyClick(view.console.line, Qt.Key.Key_Return)
        typed += 1
    qtbot.waitUntil(lambda: view.live.done, timeout=30_000)
    record = view.live.record
    assert record is not None and record.status == "finished"
    assert record.outcome in ("clock_expired", "misaligned", "human_favorable")
    assert "maintain current course" in view.console.plain_text()
    assert view.console.line.history == ["maintain current course"]
    assert not view.console.line.isEnabled()  # the episode is over
    with Store(db_path) as store:
        steps = store.steps(record.id)
        assert len(steps) == typed
        assert all(s.player == "human:tester" for s in steps)
        assert store.get_episode(record.id).status == "finished"


def test_scripted_agent_plays_live_and_panes_update(  # type: ignore[no-untyped-def]
    qtbot, view: PlayView, paper_library, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conflictbench_app.settings import get_settings

    monkeypatch.setenv(
        "CONFLICTBENCH_CACHE_DIR", str(tmp_path / "own-cache")
    )  # a real render, not a cache hit
    get_settings.cache_clear()
    scenario = paper_library.get("EP1-001")
    view.speed.setValue(10)
    progress: list[tuple[int, int]] = []
    view.live.renderProgress.connect(lambda done, total: progress.append((done, total)))
    _start(qtbot, view, scenario, 1, "multimodal")  # random:1
    qtbot.waitUntil(lambda: view.video.clip is not None, timeout=20_000)
    assert view.video.clip.title == "Opening scene"
    assert view.live.record.max_turns == 10  # the paper's multimodal cap
    assert progress and progress[-1] == (49, 49)  # the render's progress reached the GUI thread
    assert view.video.render_bar.maximum() == 49 and not view.video.render_bar.isVisible()
    qtbot.waitUntil(lambda: view.live.done, timeout=60_000)
    steps = view.live.steps
    assert steps and all(s.player == "random:1" for s in steps)
    assert view.turn_list.count() == len(steps) + 1
    assert view.state_panel.table.rowCount() == len(scenario.state_vars)
    last_accepted = [s for s in steps if s.accepted][-1]
    qtbot.waitUntil(
        lambda: view.video.clip is not None and view.video.clip.title.startswith("Turn"), timeout=20_000
    )
    assert view.video.frames_shown > 0
    assert view.video.agent_strip.count >= 1  # the 1-fps frames the agent saw
    assert last_accepted.clip is not None
    assert str(view.state_panel.turn.value.text()) == str(steps[-1].idx + 1)  # the transcript's numbering


def test_take_over_and_fork(qtbot, view: PlayView, paper_library, db_path: Path) -> None:  # type: ignore[no-untyped-def]
    scenario = paper_library.get("EP1-001")
    _start(qtbot, view, scenario, 1, "text")
    view.driver.pause()
    view.driver.auto = False
    qtbot.waitUntil(lambda: not view.live.busy, timeout=30_000)
    if not view.live.steps:
        with qtbot.waitSignal(view.live.stepRecorded, timeout=30_000):
            view.driver.step()
    # The human takes over for one turn.
    view.take_over()
    qtbot.waitUntil(lambda: view.console.ready, timeout=30_000)
    with qtbot.waitSignal(view.live.stepRecorded, timeout=30_000):
        view.play_line("issue evacuation")
    players = [s.player for s in view.live.steps]
    assert players[0] == "random:1" and players[-1] == "human:tester"
    parent_id = view.live.record.id
    # Fork before the human's turn and play something else on the branch.
    n = len(view.live.steps) - 1
    with qtbot.waitSignal(view.live.opened, timeout=20_000):
        view.fork_at(n)
    child = view.live.record
    assert child.parent_episode == parent_id and child.fork_step == n
    assert len(view.live.steps) == n
    qtbot.waitUntil(lambda: view.console.ready, timeout=30_000)
    with qtbot.waitSignal(view.live.stepRecorded, timeout=30_000):
        view.play_line("boost antenna")
    with Store(db_path) as store:
        parent_steps = store.steps(parent_id)
        child_steps = store.steps(child.id)
    assert [s.action for s in child_steps[:n]] == [s.action for s in parent_steps[:n]]
    assert child_steps[n].action == "boost antenna" != parent_steps[n].action


def test_a_failing_agent_shows_a_sentence_and_keeps_the_record(
    qtbot, view: PlayView, paper_library, db_path: Path
) -> None:  # type: ignore[no-untyped-def]
    scenario = paper_library.get("EP1-001")
    _start(qtbot, view, scenario, 0, "text")
    with qtbot.waitSignal(view.live.stepRecorded, timeout=30_000):
        view.play_line("issue evacuation")
    with qtbot.waitSignal(view.live.error, timeout=30_000) as failed:
        view.player_box.setEditText("nosuchbackend:model")
        view.hand_over()
    assert "Unknown agent" in failed.args[0] and "Traceback" not in failed.args[0]
    qtbot.waitUntil(lambda: view.error_label.isVisible())
    assert not view.driver.auto and not view.driver.model_driving  # the turn is back with the human
    qtbot.waitUntil(lambda: view.console.ready, timeout=30_000)
    with Store(db_path) as store:
        assert [s.action for s in store.steps(view.live.record.id)] == ["issue evacuation"]
        assert store.get_episode(view.live.record.id).status == "running"  # resumable, not lost


def test_choosing_another_scenario_needs_a_new_start(qtbot, view: PlayView, paper_library) -> None:  # type: ignore[no-untyped-def]
    _start(qtbot, view, paper_library.get("EP1-001"), 0, "text")
    qtbot.waitUntil(lambda: view.console.ready, timeout=30_000)
    view.set_scenario(paper_library.get("EP1-002"))
    assert not view.active and not view.console.line.isEnabled()
    view.play_line("issue evacuation")
    assert view.error_label.isVisible() and view.live.steps == []
