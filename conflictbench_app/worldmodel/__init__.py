"""The visual world model: one short clip per turn, as in the paper's multimodal setting.

A base clip shows the scene (text-to-video from the scenario's visual description); each accepted action gets a clip
conditioned on the previous clip's last frame plus a prompt built from the scene, the action's motion template and
the history (image-to-video). Clips are 49 frames at 16 fps, 832x480, rendered with seeds derived from their cache
key and cached by action chain, so every agent that takes the same actions sees the same video.

Backends, chosen by name with :func:`get_world_model`:

- ``schematic`` (default): deterministic drawings of the scenario's state, CPU-only, no weights.
- ``wan``: diffusers Wan 2.2 pipelines from a local weights folder (the ``wan`` extra).
- ``replay``: only clips already in the cache or imported (e.g. the paper's base videos).

This module is import-light: OpenCV, Pillow and torch load only when a clip is drawn, encoded or read.
"""

from __future__ import annotations

import importlib
from typing import Any

from conflictbench_app.worldmodel.base import WorldModel
from conflictbench_app.worldmodel.types import (
    CancelToken,
    Clip,
    ClipMissing,
    ClipSpec,
    ProgressFn,
    RenderCancelled,
    TurnVisual,
    WorldModelError,
)

__all__ = [
    "BACKENDS",
    "CancelToken",
    "Clip",
    "ClipMissing",
    "ClipSpec",
    "ProgressFn",
    "RenderCancelled",
    "TurnVisual",
    "WorldModel",
    "WorldModelError",
    "clip_bytes",
    "frame_data_urls",
    "get_world_model",
    "sample_frames",
]

# name -> (module, class). Modules are imported only when their backend is chosen.
BACKENDS: dict[str, tuple[str, str]] = {
    "schematic": ("conflictbench_app.worldmodel.schematic", "SchematicWorldModel"),
    "wan": ("conflictbench_app.worldmodel.wan", "WanWorldModel"),
    "replay": ("conflictbench_app.worldmodel.replay", "ReplayWorldModel"),
}


def get_world_model(name: str = "schematic", **options: Any) -> WorldModel:
    """The world model registered as ``name``; ``options`` go to its constructor (e.g. ``cache_dir``, ``model_dir``)."""
    entry = BACKENDS.get(name)
    if entry is None:
        raise WorldModelError(f"Unknown renderer {name!r}; choose one of: {', '.join(sorted(BACKENDS))}.")
    module = importlib.import_module(entry[0])
    model: WorldModel = getattr(module, entry[1])(**options)
    return model


def sample_frames(
    clip: Clip, fps: float = 1.0, *, fmt: str = "jpeg", max_side: int | None = None
) -> list[bytes]:
    """Frames of ``clip`` at ``fps`` (the paper gave image-only models 1 fps), as JPEG or PNG bytes for an API."""
    from conflictbench_app.worldmodel.video import sample_frames as _sample

    if fmt not in ("jpeg", "png"):
        raise WorldModelError(f"Unknown image format {fmt!r}; use 'jpeg' or 'png'.")
    return _sample(clip, fps, fmt=fmt, max_side=max_side)  # type: ignore[arg-type]


def frame_data_urls(clip: Clip, fps: float = 1.0, *, max_side: int | None = None) -> list[str]:
    """:func:`sample_frames` as JPEG ``data:`` URLs, ready for OpenAI-style ``image_url`` content parts."""
    from conflictbench_app.worldmodel.video import data_url

    return [data_url(image, "jpeg") for image in sample_frames(clip, fps, max_side=max_side)]


def clip_bytes(clip: Clip) -> bytes:
    """The whole clip (mp4), for models that take video."""
    return clip.path.read_bytes()
