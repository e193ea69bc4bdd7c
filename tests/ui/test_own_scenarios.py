"""Play, Review and Video on our own scenarios, so the UI is tested where ../shared is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt

from conflictbench_app.runner import RunConfig, Runner
from conflictbench_app.store import Store
from conflictbench_app.ui.play_view import PlayView
from conflictbench_app.ui.review_view import ReviewView
from conflictbench_app.ui.video import VideoPane, clip_frames

pytestmark = pytest.mark.gui


@pytest.fixture
def own_library():  # type: ignore[no-untyped-def]
    from conflictbench_app.scenarios.library import load_library

    library = load_library()
    if not library.scenarios:
        pytest.skip("the project has no scenarios under scenarios/")
    return library


def test_human_plays_our_scenario_to_its_human_favorable_ending(qtbot, own_library, db_path: Path) -> None:  # type: ignore[no-untyped-def]
    scenario = own_library.get("EP1-101")
    view = PlayView(db_path, "tester")
    qtbot.addWidget(view)
    view.resize(1200, 800)
    view.show()
    view.set_scenario(scenario)
    view.player_box.setCurrentIndex(0)
    view.setting_box.setCurrentIndex(view.setting_box.findData("text"))
    with qtbot.waitSignal(view.live.opened, timeout=20_000):
        qtbot.mouseClick(view.start_button, Qt.MouseButton.LeftButton)
    for command in scenario.extra["walkthroughs"]["aligned"]:
        qtbot.waitUntil(lambda: view.console.ready or view.live.done, timeout=30_000)
        if view.live.done:
            break
        with qtbot.waitSignal(view.live.stepRecorded, timeout=30_000):
            qtbot.keyClicks(view.console.line, command)
            qtbot.keyClick(view.console.line, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: view.live.done, timeout=30_000)
    record = view.live.record
    assert record is not None and record.outcome == "human_favorable" and record.human_favorable
    with Store(db_path) as store:
        assert all(s.player == "human:tester" for s in store.steps(record.id))
    view.shutdown()


def test_review_compares_and_labels_our_scenario(qtbot, own_library, db_path: Path) -> None:  # type: ignore[no-untyped-def]
    scenario = own_library.get("EP1-101")
    ids = [
        Runner(db_path).start(RunConfig(agent=agent, scenarios=scenario.id), [scenario]).episodes[0].id
        for agent in ("random:1", "random:7")
    ]
    view = ReviewView(db_path, "ann", lambda sid: own_library.get(sid))
    qtbot.addWidget(view)
    view.resize(1300, 850)
    view.show()
    view.refresh()
    assert view.queue is not None and len(view.queue) == 2
    view.compare(ids[0], ids[1])
    with Store(db_path) as store:
        a, b = store.steps(ids[0]), store.steps(ids[1])
    assert view.turns.count() == max(len(a), len(b))
    view.label_bar.buttons["aligned"].click()
    with qtbot.waitSignal(view.label_bar.saved, timeout=30_000) as saved:
        qtbot.mouseClick(view.label_bar.save_button, Qt.MouseButton.LeftButton)
    assert saved.args[0].label == "aligned" and saved.args[0].episode_id == ids[0]
    assert len(view.queue) == 1  # the same queue and rule as `conflictbench label`
    view.shutdown()


def test_a_clip_of_our_scenario_plays(qtbot, own_library) -> None:  # type: ignore[no-untyped-def]
    from conflictbench_app.worldmodel import get_world_model, sample_frames

    clip = get_world_model("schematic").base_clip(own_library.get("EP1-101"))
    frames = clip_frames(clip, tuple(sample_frames(clip, 1.0, max_side=256)), "Base")
    pane = VideoPane()
    qtbot.addWidget(pane)
    pane.resize(900, 700)
    pane.show()
    pane.set_clip(frames)
    qtbot.waitUntil(lambda: not pane.playing, timeout=15_000)
    assert pane.index == clip.frames - 1
    pane.stop()
