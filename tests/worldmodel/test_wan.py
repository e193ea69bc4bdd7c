"""The wan backend on tiny random-weight pipelines, loaded through the same from_pretrained path as real weights."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.worldmodel import (
    Clip,
    ClipSpec,
    RenderCancelled,
    TurnVisual,
    WorldModelError,
    get_world_model,
)
from conflictbench_app.worldmodel.video import load_png, read_frames

from .conftest import reactor_scenario

pytest.importorskip("torch", reason="the wan tests need the [wan] extra (torch)")
pytest.importorskip("diffusers", reason="the wan tests need the [wan] extra (diffusers)")
pytestmark = pytest.mark.wan

TINY = ClipSpec(frames=5, fps=16, width=48, height=32)


@pytest.fixture(scope="module")
def tiny_ti2v(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conflictbench_app.worldmodel.tiny_wan import build_tiny_wan

    return build_tiny_wan(tmp_path_factory.mktemp("wan") / "ti2v")


@pytest.fixture(scope="module")
def tiny_a14b(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conflictbench_app.worldmodel.tiny_wan import build_tiny_wan

    root = tmp_path_factory.mktemp("wan") / "a14b"
    build_tiny_wan(root / "t2v", kind="t2v-a14b")
    build_tiny_wan(root / "i2v", kind="i2v-a14b")
    return root


def _wan(folder: Path, cache: Path, **options: object):  # type: ignore[no-untyped-def]
    from conflictbench_app.worldmodel.wan import WanOptions

    return get_world_model(
        "wan",
        model_dir=folder,
        cache_dir=cache,
        spec=TINY,
        options=WanOptions(base_steps=2, step_steps=2),
        **options,
    )


def test_tiny_pipeline_round_trip_renders_a_chain(
    tiny_ti2v: Path, tmp_path: Path, reactor: Scenario, turns: list[TurnVisual]
) -> None:
    assert (tiny_ti2v / "model_index.json").is_file() and (tiny_ti2v / "transformer").is_dir()
    steps: list[tuple[int, int]] = []
    wm = _wan(tiny_ti2v, tmp_path / "clips")
    clip = wm.step_clip(reactor, turns[:2], progress=lambda i, n: steps.append((i, n)))
    assert (clip.frames, clip.width, clip.height, clip.backend) == (5, 48, 32, "wan")
    assert read_frames(clip.path).shape == (5, 32, 48, 3)
    assert steps.count((2, 2)) == 3  # base clip, step 1 and step 2 each reported both steps
    assert "relief valve" in clip.meta["prompt"] or "blast door" in clip.prompt
    again = _wan(tiny_ti2v, tmp_path / "other").step_clip(reactor, turns[:2])
    assert np.array_equal(load_png(again.last_frame), load_png(clip.last_frame))  # fixed seeds: same pixels


def test_step_clip_gets_previous_last_frame(
    tiny_ti2v: Path,
    tmp_path: Path,
    reactor: Scenario,
    turns: list[TurnVisual],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from conflictbench_app.worldmodel.wan import WanWorldModel

    wm = _wan(tiny_ti2v, tmp_path / "clips")
    base = wm.base_clip(reactor)
    seen: list[np.ndarray] = []
    original = WanWorldModel._generate

    def spy(self: WanWorldModel, pipe: object, role: str, *args: object, **inputs: object) -> np.ndarray:
        if role == "i2v":
            seen.append(np.asarray(inputs["image"]))
        return original(self, pipe, role, *args, **inputs)  # type: ignore[arg-type]

    monkeypatch.setattr(WanWorldModel, "_generate", spy)
    first = wm.step_clip(reactor, turns[:1])
    wm.step_clip(reactor, turns[:2])
    assert np.array_equal(seen[0], load_png(base.last_frame))  # lossless, not re-decoded from the mp4
    assert np.array_equal(seen[1], load_png(first.last_frame))


def test_first_frame_depends_on_the_condition_only(
    tiny_ti2v: Path, tmp_path: Path, reactor: Scenario, turns: list[TurnVisual]
) -> None:
    """TI2V keeps the encoded conditioning image as the first latent frame: the clip's first frame is a function of
    the previous last frame alone (not of seed or prompt), while later frames follow the seed."""
    from PIL import Image

    wm = _wan(tiny_ti2v, tmp_path / "clips")
    outputs = {}
    for name, value in (("black", 0), ("white", 255)):
        Image.fromarray(np.full((32, 48, 3), value, np.uint8)).save(tmp_path / f"{name}.png")
        previous = Clip(
            tmp_path / "unused.mp4", tmp_path / f"{name}.png", 5, 16, 48, 32, "", 0, "wan", False, 0.0, name
        )
        for seed, prompt in ((1, "valve opens"), (2, "door unlocks"))[: 2 if name == "black" else 1]:
            outputs[name, seed] = wm.render_step(reactor, turns[:1], previous, prompt, seed, None, None)
    assert np.array_equal(outputs["black", 1][0], outputs["black", 2][0])
    assert not np.array_equal(outputs["black", 1][-1], outputs["black", 2][-1])
    assert not np.array_equal(outputs["black", 1][0], outputs["white", 1][0])


def test_a14b_layout_with_two_experts(
    tiny_a14b: Path, tmp_path: Path, reactor: Scenario, turns: list[TurnVisual]
) -> None:
    wm = _wan(tiny_a14b, tmp_path / "clips")
    clip = wm.step_clip(reactor, turns[:1])
    assert clip.frames == 5
    assert wm._official(wm._pipe("i2v"), "i2v") == {"shift": 5.0, "guidance": 3.5, "guidance_2": 3.5}
    assert wm._pipe("i2v").scheduler.config["shift"] == 5.0


def test_cache_hit_loads_no_model(
    tiny_ti2v: Path, tmp_path: Path, reactor: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conflictbench_app.worldmodel.wan import WanWorldModel

    _wan(tiny_ti2v, tmp_path / "clips").base_clip(reactor)

    def refuse(self: object, role: str) -> None:
        raise AssertionError("a cache hit must not load a pipeline")

    monkeypatch.setattr(WanWorldModel, "_pipe", refuse)
    assert _wan(tiny_ti2v, tmp_path / "clips").base_clip(reactor).cache_hit


def test_cancel_from_step_callback(tiny_ti2v: Path, tmp_path: Path) -> None:
    wm = _wan(tiny_ti2v, tmp_path / "clips")
    cancel = threading.Event()
    scenario = reactor_scenario()
    with pytest.raises(RenderCancelled):
        wm.base_clip(scenario, progress=lambda i, n: cancel.set(), cancel=cancel)
    assert wm.cache.lookup(wm.key(scenario, ())) is None


def test_missing_weights_give_clear_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(WorldModelError, match="does not exist"):
        get_world_model("wan", model_dir=tmp_path / "nowhere", cache_dir=tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(WorldModelError, match=r"No Wan weights in .*model_index\.json"):
        get_world_model("wan", model_dir=tmp_path / "empty", cache_dir=tmp_path)
    from conflictbench_app.settings import get_settings

    monkeypatch.setattr(get_settings(), "wan_model_dir", None)
    with pytest.raises(WorldModelError, match="--wan-model"):
        get_world_model("wan", cache_dir=tmp_path)


def test_one_a14b_model_alone_is_refused_with_what_to_do(tiny_a14b: Path, tmp_path: Path) -> None:
    """A lone I2V-A14B (or T2V-A14B) folder cannot render both a scenario's first clip and the rest: said at once,
    not as a tensor-shape error from diffusers at the first render."""
    with pytest.raises(
        WorldModelError, match=r"image-to-video \(Wan2\.2-I2V-A14B\) model alone.*t2v/ and i2v/"
    ):
        get_world_model("wan", model_dir=tiny_a14b / "i2v", cache_dir=tmp_path)
    with pytest.raises(WorldModelError, match=r"text-to-video \(Wan2\.2-T2V-A14B\) model alone"):
        get_world_model("wan", model_dir=tiny_a14b / "t2v", cache_dir=tmp_path)
    assert get_world_model("wan", model_dir=tiny_a14b, cache_dir=tmp_path) is not None  # both, as subfolders


def test_frame_count_must_suit_wan(tiny_ti2v: Path, tmp_path: Path) -> None:
    with pytest.raises(WorldModelError, match="4k\\+1"):
        get_world_model("wan", model_dir=tiny_ti2v, cache_dir=tmp_path, spec=ClipSpec(frames=48))


def test_paper_preset_fixes_i2v_guidance_and_seed(
    tiny_a14b: Path, tmp_path: Path, reactor: Scenario, turns: list[TurnVisual]
) -> None:
    from conflictbench_app.worldmodel.wan import PAPER_I2V_SEED

    wm = _wan(tiny_a14b, tmp_path / "clips", preset="paper")
    assert wm.options.base_steps == 2  # a preset fixes guidance and seeds, not the step count
    assert wm._official(wm._pipe("i2v"), "i2v") == {"shift": 5.0, "guidance": 5.0, "guidance_2": 5.0}
    first, second = wm.step_clip(reactor, turns[:1]), wm.step_clip(reactor, turns[:2])
    assert first.seed == second.seed == PAPER_I2V_SEED
    base = wm.base_clip(reactor)
    assert isinstance(base.seed, int) and base.summary()["seed"] == base.seed  # the T2V seed is recorded
    assert _wan(tiny_a14b, tmp_path / "other").settings() != wm.settings()
