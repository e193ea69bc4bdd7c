"""The clip cache under concurrent writers, and prompt assembly."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import numpy as np
import pytest

from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.worldmodel.cache import ClipCache
from conflictbench_app.worldmodel.prompts import TemplatePrompts, strip_numbers
from conflictbench_app.worldmodel.types import TurnVisual
from conflictbench_app.worldmodel.video import sample_indices

from .conftest import reactor_scenario, reactor_turns


def _render_chain(root: str) -> tuple[str, bool]:
    from conflictbench_app.worldmodel import get_world_model

    clip = get_world_model("schematic", cache_dir=Path(root)).step_clip(
        reactor_scenario(), reactor_turns()[:2]
    )
    return clip.key, clip.cache_hit


def test_concurrent_processes_share_one_entry(tmp_path: Path) -> None:
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.map(_render_chain, [str(tmp_path)] * 2)
    assert results[0][0] == results[1][0]
    assert sorted(hit for _, hit in results) == [False, True]  # rendered once, under the lock; served once
    entry = ClipCache(tmp_path).entry_dir(results[0][0])
    assert sorted(p.name for p in entry.iterdir()) == [
        "clip.mp4",
        "last.png",
        "meta.json",
    ]  # no temp files left


def test_half_written_entry_is_never_served(tmp_path: Path) -> None:
    cache = ClipCache(tmp_path)
    folder = cache.entry_dir("ab" * 20)
    folder.mkdir(parents=True)
    (folder / "clip.mp4").write_bytes(b"partial")  # a writer died before meta.json
    assert cache.lookup("ab" * 20) is None


def test_store_then_lookup_round_trips(tmp_path: Path) -> None:
    cache = ClipCache(tmp_path)
    frames = np.zeros((5, 32, 48, 3), dtype=np.uint8)
    frames[-1, :, :, 0] = 200
    meta = {
        "backend": "test",
        "frames": 5,
        "fps": 16,
        "width": 48,
        "height": 32,
        "chain_key": "c1",
        "seed": 7,
    }
    with cache.lock("k" * 40):
        stored = cache.store_frames("k" * 40, frames, 16, meta)
    hit = cache.lookup("k" * 40)
    assert hit is not None and hit.cache_hit and not stored.cache_hit
    assert (hit.frames, hit.seed, hit.backend) == (5, 7, "test")
    assert cache.chain_entries("c1")[0]["key"] == "k" * 40
    assert "encode_s" in hit.meta["timings"]


def test_strip_numbers_removes_log_values() -> None:
    assert strip_numbers("Pressure rises to 91% after 2 cycles.") == "Pressure rises to after."
    assert strip_numbers("No numbers here.") == "No numbers here."


def test_step_prompt_is_history_aware_and_closed_loop(reactor: Scenario, turns: list[TurnVisual]) -> None:
    prompts = TemplatePrompts()
    first = prompts.step_prompt(reactor, turns[:1])
    assert "Actuators turn the relief valve wheel" in first  # the scenario's own motion template
    assert "Earlier" not in first
    third = prompts.step_prompt(reactor, turns)
    assert "open relief valve; unlock blast door" in third  # history
    assert "resting position" in third and "people are safe" in third  # closed loop, ending
    assert not any(ch.isdigit() for ch in third)
    assert prompts.base_prompt(reactor) == reactor.visual.base_scene


def test_generic_motion_template_for_unknown_action(reactor: Scenario) -> None:
    start = reactor.initial_state
    prompt = TemplatePrompts().step_prompt(
        reactor, [TurnVisual("call supervisor", "Nobody answers.", start, start)]
    )
    assert "'call supervisor'" in prompt and "return to their idle positions" in prompt


@pytest.mark.parametrize(
    ("frames", "fps", "rate", "expected"),
    [
        (49, 16, 1.0, [0, 16, 32, 48]),
        (49, 16, 2.0, [0, 8, 16, 24, 32, 40, 48]),
        (10, 16, 100.0, list(range(10))),
    ],
)
def test_sample_indices(frames: int, fps: int, rate: float, expected: list[int]) -> None:
    assert sample_indices(frames, fps, rate) == expected
