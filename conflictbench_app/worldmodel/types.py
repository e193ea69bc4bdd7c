"""The world model's records: what a renderer is given (turns) and what it returns (clips), and its errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from conflictbench_app.errors import ConflictBenchError

CLIP_SCHEMA_VERSION = 1

ProgressFn = Callable[[int, int], None]


class CancelToken(Protocol):
    """Anything with ``is_set()``, e.g. :class:`threading.Event`."""

    def is_set(self) -> bool: ...


class WorldModelError(ConflictBenchError):
    """A clip could not be rendered, loaded or found."""


class RenderCancelled(WorldModelError):
    """The caller cancelled a render; nothing was written to the cache."""


class ClipMissing(WorldModelError):
    """The replay backend was asked for a clip that is neither cached nor importable."""


@dataclass(frozen=True)
class ClipSpec:
    """The shape of every clip: the paper's 49 frames at 16 fps, 480p (832x480)."""

    frames: int = 49
    fps: int = 16
    width: int = 832
    height: int = 480

    def __post_init__(self) -> None:
        if self.frames < 1 or self.fps < 1:
            raise WorldModelError("A clip needs at least one frame and a frame rate of at least 1 fps.")
        if self.width % 16 or self.height % 16:
            raise WorldModelError(
                f"Clip size {self.width}x{self.height} must be a multiple of 16 in both sides."
            )


@dataclass(frozen=True)
class TurnVisual:
    """One accepted turn: what the renderer needs to draw its consequence."""

    action: str
    feedback: str
    state_before: dict[str, Any]
    state_after: dict[str, Any]
    ending_id: str | None = None
    human_favorable: bool | None = None
    # The motion prompt of a turn that is no scenario action (a regret stage shows its own pressure); "" for the
    # action's own motion template.
    motion: str = ""

    @classmethod
    def of_step(
        cls,
        action: str,
        feedback: str,
        state_before: dict[str, Any],
        state_after: dict[str, Any],
        *,
        outcome: str | None,
        ending_id: str | None,
    ) -> TurnVisual:
        """The one builder from a played step to its turn record (the session, the clip chain and the regret test
        all use it, so a clip's key is the same wherever the turn is rebuilt). Only a story ending is drawn as one:
        a turn the run's cap stopped (``turn_cap``) is not an ending, harmful or otherwise."""
        from conflictbench_app.scenarios.protocol import Outcome

        known = {o.value: o for o in Outcome}.get(outcome or "")
        ended = known is not None and known.is_ending
        return cls(
            action=action,
            feedback=feedback,
            state_before=dict(state_before),
            state_after=dict(state_after),
            ending_id=ending_id if ended else None,
            human_favorable=known is Outcome.HUMAN_FAVORABLE if ended else None,
        )

    def as_key(self) -> dict[str, Any]:
        """A JSON-ready form for cache keys (everything that changes the picture)."""
        key = asdict(self)
        if not key["motion"]:
            del key[
                "motion"
            ]  # the keys of turns without their own motion stay as they were before it existed
        return key


@dataclass(frozen=True)
class Clip:
    """A rendered (or fetched) clip: an mp4 plus a lossless PNG of its last frame for conditioning the next one."""

    path: Path
    last_frame: Path
    frames: int
    fps: int
    width: int
    height: int
    prompt: str
    seed: int
    backend: str
    cache_hit: bool
    seconds: float
    key: str
    meta: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def duration(self) -> float:
        return self.frames / self.fps

    def summary(self) -> dict[str, Any]:
        """The form printed by ``conflictbench render --json``."""
        return {
            "path": str(self.path),
            "last_frame": str(self.last_frame),
            "frames": self.frames,
            "fps": self.fps,
            "width": self.width,
            "height": self.height,
            "backend": self.backend,
            "cache_hit": self.cache_hit,
            "seconds": round(self.seconds, 4),
            "seed": self.seed,
            "key": self.key,
            "prompt": self.prompt,
        }


def canonical_json(value: Any) -> str:
    """Stable JSON for hashing: sorted keys, no whitespace, non-ASCII kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
