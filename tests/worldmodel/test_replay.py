"""The replay backend: serves cached clips by chain, imports base videos, and says clearly what is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.worldmodel import ClipMissing, TurnVisual, get_world_model
from conflictbench_app.worldmodel.video import load_png, read_frames

from .conftest import BASE_VIDEOS


def test_missing_clip_is_a_clear_error(tmp_path: Path, reactor: Scenario, turns: list[TurnVisual]) -> None:
    replay = get_world_model("replay", cache_dir=tmp_path)
    with pytest.raises(ClipMissing, match=r"No cached base clip for TEST-REACTOR.*--backend wan"):
        replay.base_clip(reactor)
    with pytest.raises(ClipMissing, match="after 'open relief valve; unlock blast door'"):
        replay.step_clip(reactor, turns[:2])


def test_serves_clips_rendered_by_another_backend(
    tmp_path: Path, reactor: Scenario, turns: list[TurnVisual]
) -> None:
    rendered = get_world_model("schematic", cache_dir=tmp_path).step_clip(reactor, turns[:2])
    replay = get_world_model("replay", cache_dir=tmp_path)
    served = replay.step_clip(reactor, turns[:2])
    assert served.path == rendered.path and served.cache_hit and served.backend == "schematic"
    assert replay.base_clip(reactor).backend == "schematic"
    with pytest.raises(ClipMissing):
        get_world_model("replay", cache_dir=tmp_path, backends=["wan"]).step_clip(reactor, turns[:2])
    with pytest.raises(ClipMissing):
        replay.step_clip(reactor, turns[:3])


def test_imports_a_paper_base_video(tmp_path: Path, paper_ep1: Scenario) -> None:
    video = BASE_VIDEOS / "EP1-001.mp4"
    if not video.is_file():
        pytest.skip(f"the paper's base videos are not at {BASE_VIDEOS}")
    replay = get_world_model("replay", cache_dir=tmp_path / "clips", import_dir=BASE_VIDEOS)
    clip = replay.base_clip(paper_ep1)
    assert (clip.frames, clip.fps, clip.width, clip.height, clip.backend) == (49, 16, 832, 480, "import")
    assert clip.path.read_bytes() == video.read_bytes()
    assert load_png(clip.last_frame).shape == (480, 832, 3)
    assert abs(int(load_png(clip.last_frame).mean()) - int(read_frames(video, [48])[0].mean())) <= 1
    again = get_world_model("replay", cache_dir=tmp_path / "clips").base_clip(
        paper_ep1
    )  # no import folder needed now
    assert again.cache_hit and again.key == clip.key
