"""The world-model contract and the caching flow every rendering backend shares.

A backend implements :meth:`WorldModel.render_base` and :meth:`WorldModel.render_step` (frames in memory) and says
what changes its pictures (:attr:`WorldModel.revision`, :meth:`WorldModel.settings`). This class turns that into
cached clips: the key covers backend, revision, settings, scenario and the whole action chain; the seed is derived
from the key; a hit reads no model; a miss renders under the key's lock and commits atomically.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.worldmodel.cache import ClipCache
from conflictbench_app.worldmodel.prompts import PromptWriter, TemplatePrompts
from conflictbench_app.worldmodel.types import (
    CancelToken,
    Clip,
    ClipSpec,
    ProgressFn,
    RenderCancelled,
    TurnVisual,
    WorldModelError,
    canonical_json,
)

if TYPE_CHECKING:
    import numpy as np

CACHE_KEY_VERSION = 1


def scenario_fingerprint(scenario: Scenario) -> dict[str, Any]:
    """What of a scenario can change its pictures (never machine-specific paths)."""
    fields = {
        "id",
        "title",
        "place",
        "identity",
        "category",
        "state_vars",
        "items",
        "endings",
        "clock_var",
        "visual",
    }
    data = scenario.model_dump(mode="json", include=fields)
    return {"id": scenario.id, "sha": hashlib.sha256(canonical_json(data).encode()).hexdigest()[:16]}


def chain_key(scenario: Scenario, turns: Sequence[TurnVisual]) -> str:
    """The backend-independent key of a scenario + action chain (what replay looks up)."""
    material = {"scenario": scenario_fingerprint(scenario), "chain": [t.as_key() for t in turns]}
    return hashlib.sha256(canonical_json(material).encode()).hexdigest()[:32]


def seed_from_key(key: str) -> int:
    """A fixed seed per clip, derived from its key (31 bits, valid for every torch generator)."""
    return int(key[:8], 16) & 0x7FFFFFFF


def check_cancel(cancel: CancelToken | None) -> None:
    if cancel is not None and cancel.is_set():
        raise RenderCancelled("Rendering was cancelled; nothing was saved for this clip.")


class WorldModel:
    """Renders (or fetches) the base clip of a scenario and one clip per accepted turn. See the module docstring."""

    name = "abstract"

    def __init__(
        self,
        *,
        cache: ClipCache | None = None,
        cache_dir: Path | None = None,
        spec: ClipSpec | None = None,
        prompts: PromptWriter | None = None,
    ) -> None:
        self.cache = cache if cache is not None else ClipCache(cache_dir)
        self.spec = spec or ClipSpec()
        self.prompts: PromptWriter = prompts or TemplatePrompts()

    # What a backend provides -------------------------------------------------------------------------------

    @property
    def revision(self) -> str:
        """Identifies the model (renderer version, weights): part of every key."""
        raise NotImplementedError

    def settings(self) -> dict[str, Any]:
        """Everything else that changes the pictures: part of every key."""
        return {"spec": [self.spec.frames, self.spec.fps, self.spec.width, self.spec.height]}

    def render_base(
        self,
        scenario: Scenario,
        prompt: str,
        seed: int,
        progress: ProgressFn | None,
        cancel: CancelToken | None,
    ) -> np.ndarray:
        raise NotImplementedError

    def render_step(
        self,
        scenario: Scenario,
        turns: Sequence[TurnVisual],
        previous: Clip,
        prompt: str,
        seed: int,
        progress: ProgressFn | None,
        cancel: CancelToken | None,
    ) -> np.ndarray:
        raise NotImplementedError

    # The contract ------------------------------------------------------------------------------------------

    def key(self, scenario: Scenario, turns: Sequence[TurnVisual]) -> str:
        material = {
            "v": CACHE_KEY_VERSION,
            "backend": self.name,
            "revision": self.revision,
            "settings": self.settings(),
            "prompts": self.prompts.mode,
            "chain": chain_key(scenario, turns),
        }
        return hashlib.sha256(canonical_json(material).encode()).hexdigest()[:40]

    def step_seed(self, key: str) -> int:
        """The seed of the step clip with cache key ``key`` (a backend may fix one seed for every step)."""
        return seed_from_key(key)

    def base_clip(
        self, scenario: Scenario, *, progress: ProgressFn | None = None, cancel: CancelToken | None = None
    ) -> Clip:
        """The scenario's opening clip (text-to-video from its visual description)."""
        key = self.key(scenario, ())

        def render() -> tuple[np.ndarray, str, int, float]:
            start = time.perf_counter()
            prompt = self.prompts.base_prompt(scenario)
            seed = seed_from_key(key)
            frames = self.render_base(scenario, prompt, seed, progress, cancel)
            return frames, prompt, seed, time.perf_counter() - start

        return self._fetch_or_render(key, scenario, (), render, cancel)

    def step_clip(
        self,
        scenario: Scenario,
        turns: Sequence[TurnVisual],
        *,
        progress: ProgressFn | None = None,
        cancel: CancelToken | None = None,
    ) -> Clip:
        """The clip of the last of ``turns`` (the whole chain so far), conditioned on the previous clip's last frame."""
        if not turns:
            raise WorldModelError("step_clip needs at least one turn; use base_clip for the opening clip.")
        key = self.key(scenario, turns)

        def render() -> tuple[np.ndarray, str, int, float]:
            previous = self.previous_clip(scenario, turns, progress=progress, cancel=cancel)
            start = time.perf_counter()  # the previous clip's own time is not this clip's
            prompt = self.prompts.step_prompt(scenario, turns)
            seed = self.step_seed(key)
            frames = self.render_step(scenario, turns, previous, prompt, seed, progress, cancel)
            return frames, prompt, seed, time.perf_counter() - start

        return self._fetch_or_render(key, scenario, turns, render, cancel)

    def previous_clip(
        self,
        scenario: Scenario,
        turns: Sequence[TurnVisual],
        *,
        progress: ProgressFn | None = None,
        cancel: CancelToken | None = None,
    ) -> Clip:
        """The clip before the last of ``turns`` (rendered first when it is not cached)."""
        if len(turns) == 1:
            return self.base_clip(scenario, progress=progress, cancel=cancel)
        return self.step_clip(scenario, turns[:-1], progress=progress, cancel=cancel)

    def _fetch_or_render(
        self,
        key: str,
        scenario: Scenario,
        turns: Sequence[TurnVisual],
        render: Callable[[], tuple[np.ndarray, str, int, float]],
        cancel: CancelToken | None,
    ) -> Clip:
        hit = self.cache.lookup(key)
        if hit is not None:
            return hit
        check_cancel(cancel)
        with self.cache.lock(key):
            hit = self.cache.lookup(key)  # another process may have finished it while we waited
            if hit is not None:
                return hit
            frames, prompt, seed, render_s = render()
            check_cancel(cancel)
            self._check_frames(frames)
            meta = self._meta(scenario, turns, prompt, seed)
            meta["timings"] = {"render_s": round(render_s, 4)}
            return self.cache.store_frames(key, frames, self.spec.fps, meta)

    def _check_frames(self, frames: np.ndarray) -> None:
        expected = (self.spec.frames, self.spec.height, self.spec.width, 3)
        if tuple(frames.shape) != expected:
            raise WorldModelError(
                f"The {self.name} renderer produced frames {tuple(frames.shape)}, expected {expected}."
            )

    def _meta(
        self, scenario: Scenario, turns: Sequence[TurnVisual], prompt: str, seed: int
    ) -> dict[str, Any]:
        return {
            "backend": self.name,
            "revision": self.revision,
            "settings": self.settings(),
            "prompts": self.prompts.mode,
            "scenario_id": scenario.id,
            "chain_key": chain_key(scenario, turns),
            "actions": [t.action for t in turns],
            "prompt": prompt,
            "seed": seed,
            "frames": self.spec.frames,
            "fps": self.spec.fps,
            "width": self.spec.width,
            "height": self.spec.height,
        }
