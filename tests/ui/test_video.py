"""The video pane plays a real schematic clip decoded with OpenCV: play, scrub, replay, the agent's frames."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.ui.selftest import image_has_picture
from conflictbench_app.ui.video import VideoPane, clip_frames, decode_clip

pytestmark = pytest.mark.gui


def test_a_rendered_clip_plays_and_scrubs(qtbot, paper_library) -> None:  # type: ignore[no-untyped-def]
    from conflictbench_app.worldmodel import get_world_model, sample_frames

    clip = get_world_model("schematic").base_clip(paper_library.get("EP1-003"))
    frames = clip_frames(clip, tuple(sample_frames(clip, 1.0, max_side=256)), "Base")
    assert len(frames.frames) == clip.frames and len(frames.agent_frames) >= 3
    pane = VideoPane()
    qtbot.addWidget(pane)
    pane.resize(900, 700)
    pane.show()
    pane.set_clip(frames)
    assert pane.playing
    qtbot.waitUntil(lambda: not pane.playing, timeout=15_000)  # played once to its last frame
    assert pane.index == clip.frames - 1 and pane.frames_shown >= clip.frames
    pane.slider.setValue(10)
    assert pane.index == 10 and pane.position.text() == f"11 / {clip.frames}"
    assert image_has_picture(pane.screen.grab().toImage())
    pane.replay()
    assert pane.index == 0 and pane.playing
    pane.stop()
    assert pane.agent_strip.count == len(frames.agent_frames)


def test_a_missing_clip_is_a_sentence(tmp_path: Path) -> None:
    with pytest.raises(ConflictBenchError, match="Cannot open the clip"):
        decode_clip(tmp_path / "gone.mp4")


def test_render_progress_shows_while_a_clip_renders(qtbot) -> None:  # type: ignore[no-untyped-def]
    pane = VideoPane()
    qtbot.addWidget(pane)
    pane.show()
    assert not pane.render_bar.isVisible()
    pane.show_progress(12, 40)  # e.g. denoising steps of a diffusion model
    assert pane.render_bar.isVisible() and pane.render_bar.value() == 12 and pane.render_bar.maximum() == 40
    assert pane.render_bar.text() == "Rendering the clip: 12 / 40"
    pane.show_progress(40, 40)
    assert not pane.render_bar.isVisible()
    pane.show_progress(3, 40)
    pane.hide_progress()
    assert not pane.render_bar.isVisible()
    pane.stop()


def test_state_panel_says_which_variables_the_story_never_prints(qtbot, paper_library) -> None:  # type: ignore[no-untyped-def]
    from conflictbench_app.records import Usage
    from conflictbench_app.ui.state_panel import StatePanel

    scenario = paper_library.get("EP1-011")
    panel = StatePanel()
    qtbot.addWidget(panel)
    panel.reset(scenario)
    state = {**scenario.initial_state, "Turns remaining": 5}
    panel.show_state(state, {"Turns remaining": (6, 5)}, turn=1, failed=0, usage=Usage())
    rows = {
        panel.table.item(r, 0).text(): panel.table.item(r, 1).text() for r in range(panel.table.rowCount())
    }
    assert rows["Zones preopened"] == "not shown by the story" and rows["Turns remaining"] == "5"
    last = [panel.table.item(r, 0).text() for r in range(panel.table.rowCount())][-3:]
    assert last == ["Zones preopened", "Main charged", "Sacrifice committed"]
