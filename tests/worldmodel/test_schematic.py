"""The schematic world model: shape, determinism, visible state changes, caching, cancellation."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.worldmodel import (
    ClipSpec,
    RenderCancelled,
    TurnVisual,
    WorldModelError,
    get_world_model,
    sample_frames,
)
from conflictbench_app.worldmodel.schematic import SchematicWorldModel
from conflictbench_app.worldmodel.video import read_frames, video_info


@pytest.fixture
def model(tmp_path: Path) -> SchematicWorldModel:
    wm = get_world_model("schematic", cache_dir=tmp_path / "clips")
    assert isinstance(wm, SchematicWorldModel)
    return wm


def test_clip_has_paper_shape(model: SchematicWorldModel, reactor: Scenario, turns: list[TurnVisual]) -> None:
    clip = model.step_clip(reactor, turns[:1])
    assert (clip.frames, clip.fps, clip.width, clip.height) == (49, 16, 832, 480)
    frames, fps, width, height = video_info(clip.path)
    assert (frames, round(fps), width, height) == (49, 16, 832, 480)
    assert clip.last_frame.suffix == ".png" and clip.last_frame.is_file()
    assert clip.backend == "schematic" and not clip.cache_hit


def test_same_chain_renders_byte_identical(
    tmp_path: Path, reactor: Scenario, turns: list[TurnVisual]
) -> None:
    first = get_world_model("schematic", cache_dir=tmp_path / "a").step_clip(reactor, turns[:2])
    second = get_world_model("schematic", cache_dir=tmp_path / "b").step_clip(reactor, turns[:2])
    assert first.key == second.key and first.seed == second.seed
    assert first.path.read_bytes() == second.path.read_bytes()
    assert first.last_frame.read_bytes() == second.last_frame.read_bytes()


def test_different_chain_changes_picture(
    model: SchematicWorldModel, reactor: Scenario, turns: list[TurnVisual]
) -> None:
    valve = model.step_clip(reactor, turns[:1])
    door_first = TurnVisual(
        "unlock blast door",
        "The door unlocks.",
        turns[0].state_before,
        {**turns[0].state_before, "door": "unlocked", "minutes": 3},
    )
    door = model.step_clip(reactor, [door_first])
    assert valve.key != door.key
    assert not np.array_equal(read_frames(valve.path, [48])[0], read_frames(door.path, [48])[0])


def test_state_change_is_visible_in_gauge_pixels(model: SchematicWorldModel, reactor: Scenario) -> None:
    start = reactor.initial_state
    low = TurnVisual("open relief valve", "Pressure eases.", start, {**start, "pressure": 20})
    high = TurnVisual("open relief valve", "Pressure soars.", start, {**start, "pressure": 95})
    low_clip, high_clip = model.step_clip(reactor, [low]), model.step_clip(reactor, [high])
    # The pressure bar is the first gauge row of the state panel (right 40% of the frame, near the top).
    bar = np.s_[85:105, 512:740]
    first_low, last_low = read_frames(low_clip.path, [0, 48])
    last_high = read_frames(high_clip.path, [48])[0]
    assert np.abs(first_low[bar].astype(int) - last_low[bar].astype(int)).mean() > 10  # it animated
    assert (
        np.abs(last_low[bar].astype(int) - last_high[bar].astype(int)).mean() > 10
    )  # values differ in pixels
    # The danger colour follows the value: red dominates at 95 % pressure, not at 20 %.
    red_share = lambda img: (img[..., 0] > 180).mean()  # noqa: E731
    assert red_share(last_high[bar]) > red_share(last_low[bar]) + 0.2


def test_cache_hit_is_served_without_rendering(
    model: SchematicWorldModel, reactor: Scenario, turns: list[TurnVisual], monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered = model.step_clip(reactor, turns[:3])
    assert rendered.meta["timings"]["render_s"] > 0

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a cached clip must not be rendered again")

    monkeypatch.setattr(SchematicWorldModel, "render_step", refuse)
    monkeypatch.setattr(SchematicWorldModel, "render_base", refuse)
    again = get_world_model("schematic", cache_dir=model.cache.root).step_clip(reactor, turns[:3])
    assert again.cache_hit and again.path == rendered.path and again.seconds < 0.05


def test_chain_renders_previous_clips_first(
    model: SchematicWorldModel, reactor: Scenario, turns: list[TurnVisual]
) -> None:
    model.step_clip(reactor, turns)
    assert model.cache.lookup(model.key(reactor, ())) is not None
    assert model.cache.lookup(model.key(reactor, turns[:2])) is not None


def test_ending_and_prompt_are_stored(
    model: SchematicWorldModel, reactor: Scenario, turns: list[TurnVisual]
) -> None:
    clip = model.step_clip(reactor, turns)
    assert "vent through server bay" in clip.prompt and "return" in clip.prompt
    assert not any(ch.isdigit() for ch in clip.prompt)  # the feedback's numbers never reach the prompt
    assert clip.meta["actions"] == [t.action for t in turns]
    assert clip.meta["seed"] == clip.seed


def test_cancel_leaves_no_entry(model: SchematicWorldModel, reactor: Scenario) -> None:
    cancel = threading.Event()
    seen: list[int] = []

    def progress(step: int, total: int) -> None:
        seen.append(step)
        if step == 10:
            cancel.set()

    with pytest.raises(RenderCancelled):
        model.base_clip(reactor, progress=progress, cancel=cancel)
    assert seen[-1] == 10
    assert model.cache.lookup(model.key(reactor, ())) is None
    entries = (
        list((model.cache.root / "entries").rglob("*")) if (model.cache.root / "entries").exists() else []
    )
    assert not [p for p in entries if p.is_file()]


def test_paper_scenario_without_bounds_renders(model: SchematicWorldModel, paper_ep1: Scenario) -> None:
    start = paper_ep1.initial_state
    after = {**start, "Critical window": 4, "Pressure level": 91, "High pressure interlock state": "released"}
    clip = model.step_clip(
        paper_ep1, [TurnVisual("unlock interlock", "You release the interlock.", start, after)]
    )
    assert clip.frames == 49
    assert "interlock lever from locked to released" in clip.prompt  # the paper's motion template


def test_sample_frames_at_one_fps(
    model: SchematicWorldModel, reactor: Scenario, turns: list[TurnVisual]
) -> None:
    clip = model.step_clip(reactor, turns[:1])
    jpegs = sample_frames(clip, 1.0, max_side=512)
    assert len(jpegs) == 4  # t = 0, 1, 2, 3 s of a 3.06 s clip
    assert all(j[:2] == b"\xff\xd8" for j in jpegs)
    every = sample_frames(clip, 16.0)
    assert len(every) == 49
    pngs = sample_frames(clip, 1.0, fmt="png")
    assert len(pngs) == 4 and pngs[0][:4] == b"\x89PNG"
    # The last sampled frame is the clip's lossless last frame, not a decoded (lossy) one.
    from conflictbench_app.worldmodel.video import encode_image, load_png

    assert pngs[-1] == encode_image(load_png(clip.last_frame), fmt="png")


def test_unknown_backend_and_bad_spec_are_clear_errors() -> None:
    with pytest.raises(WorldModelError, match="choose one of"):
        get_world_model("sora")
    with pytest.raises(WorldModelError, match="multiple of 16"):
        ClipSpec(width=830)


def test_partial_states_keep_last_known_values(model: SchematicWorldModel, reactor: Scenario) -> None:
    """A story that reports only the variables that changed still renders every gauge (nothing reads 'None')."""
    full = reactor.initial_state
    partial = TurnVisual(
        "open relief valve", "Pressure eases.", {"pressure": 70}, {"pressure": 40, "accepted": 1}
    )
    complete = TurnVisual(
        "open relief valve", "Pressure eases.", full, {**full, "pressure": 40, "accepted": 1}
    )
    a, b = model.step_clip(reactor, [partial]), model.step_clip(reactor, [complete])
    assert np.array_equal(read_frames(a.path, [48])[0], read_frames(b.path, [48])[0])
    assert "accepted" not in a.prompt
