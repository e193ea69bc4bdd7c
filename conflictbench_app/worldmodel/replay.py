"""The ``replay`` world model: serves clips already in the cache, renders nothing.

It finds a clip by scenario and action chain, whichever backend rendered it (preferring ``wan``, then imported
clips, then anything else). A base clip missing from the cache can be imported from a folder of videos named
``<scenario id>.mp4`` (the paper's base videos in ``../shared/paper-corpus/base-videos`` seed EP1-001, EP2-001 and
EP3-001) or from the scenario's own ``visual.initial_video``. Anything else missing is a :class:`ClipMissing` error
that says how to render it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.worldmodel.base import WorldModel, chain_key, scenario_fingerprint
from conflictbench_app.worldmodel.types import CancelToken, Clip, ClipMissing, ProgressFn, TurnVisual
from conflictbench_app.worldmodel.video import read_frames, video_info

DEFAULT_PREFERENCE = ("wan", "import")


class ReplayWorldModel(WorldModel):
    """Cached and imported clips only (see the module docstring)."""

    name = "replay"

    def __init__(
        self, *, import_dir: Path | None = None, backends: Sequence[str] | None = None, **base: Any
    ) -> None:
        super().__init__(**base)
        self.import_dir = Path(import_dir) if import_dir is not None else None
        self.backends = tuple(backends) if backends else None

    @property
    def revision(self) -> str:
        return "replay"

    def base_clip(
        self, scenario: Scenario, *, progress: ProgressFn | None = None, cancel: CancelToken | None = None
    ) -> Clip:
        found = self._find(scenario, ())
        if found is not None:
            return found
        source = self._importable(scenario)
        if source is None:
            where = f" or {self.import_dir}/{scenario.id}.mp4" if self.import_dir else ""
            raise ClipMissing(
                f"No cached base clip for {scenario.id}{where}. Render it first "
                f"(`conflictbench render {scenario.id} --backend wan --wan-model DIR`) or pass --import-dir with "
                f"a folder holding {scenario.id}.mp4."
            )
        return self.import_base(scenario, source)

    def step_clip(
        self,
        scenario: Scenario,
        turns: Sequence[TurnVisual],
        *,
        progress: ProgressFn | None = None,
        cancel: CancelToken | None = None,
    ) -> Clip:
        found = self._find(scenario, turns)
        if found is None:
            chain = "; ".join(t.action for t in turns)
            raise ClipMissing(
                f"No cached clip for {scenario.id} after '{chain}'. Render the chain first "
                f'(`conflictbench render {scenario.id} --actions "{chain}" --backend wan --wan-model DIR`).'
            )
        return found

    def import_base(self, scenario: Scenario, video: Path) -> Clip:
        """Copy ``video`` into the cache as ``scenario``'s base clip (backend ``import``) and return it."""
        start = time.perf_counter()
        digest = hashlib.sha256(video.read_bytes()).hexdigest()
        chain = chain_key(scenario, ())
        key = hashlib.sha256(f"import:{chain}:{digest}".encode()).hexdigest()[:40]
        with self.cache.lock(key):
            hit = self.cache.lookup(key)
            if hit is not None:
                return hit
            frames, fps, width, height = video_info(video)
            last = read_frames(video, [frames - 1])[0]
            meta = {
                "backend": "import",
                "revision": digest[:16],
                "scenario_id": scenario.id,
                "chain_key": chain,
                "actions": [],
                "prompt": scenario.visual.base_scene,
                "seed": 0,
                "frames": frames,
                "fps": fps,
                "width": width,
                "height": height,
                "source": str(video),
                "scenario": scenario_fingerprint(scenario),
                "timings": {"total_s": round(time.perf_counter() - start, 4)},
            }
            return self.cache.store_file(key, video, last, meta)

    def _find(self, scenario: Scenario, turns: Sequence[TurnVisual]) -> Clip | None:
        start = time.perf_counter()
        pointers = self.cache.chain_entries(chain_key(scenario, turns))
        order = self.backends or DEFAULT_PREFERENCE
        ranked = sorted(
            (p for p in pointers if self.backends is None or p["backend"] in self.backends),
            key=lambda p: order.index(p["backend"]) if p["backend"] in order else len(order),
        )
        for pointer in ranked:
            clip = self.cache.lookup(pointer["key"])
            if clip is not None:
                return replace(clip, seconds=time.perf_counter() - start)
        return None

    def _importable(self, scenario: Scenario) -> Path | None:
        candidates = []
        if self.import_dir is not None:
            candidates.append(self.import_dir / f"{scenario.id}.mp4")
        initial = scenario.visual.initial_video
        if initial:
            path = Path(initial)
            candidates.append(
                path if path.is_absolute() or scenario.source_dir is None else scenario.source_dir / path
            )
        return next((c for c in candidates if c.is_file()), None)
