"""Saved play positions, as an interactive-fiction interpreter's SAVE and RESTORE: a file holding the story's own
save (the engine's snapshot) and where it was taken (scenario, episode, turn).

Restoring never rewrites a record. It opens a new branch of the saved episode: the turns before the position are
copied (marked ``restored``), the story's save is loaded into a fresh interpreter, and the branch is marked assisted
(``restored``): a restore is the player's choice of where to go on from, not a model's action, so no model's score
counts the branch unless asked for (``--include-assisted``).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conflictbench_app.episode import EpisodeSnapshot
from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.scenarios.protocol import Position
from conflictbench_app.session import PlaySession
from conflictbench_app.store.db import now

POSITION_KIND = "conflictbench-position"
POSITION_SCHEMA_VERSION = 1
SUFFIX = ".cbpos"


@dataclass(frozen=True)
class SavedPosition:
    """A play position: the turns played before it (``at_step``) in ``episode_id``, and the story's save."""

    scenario_id: str
    episode_id: str
    run_id: str
    at_step: int
    saved_at: str
    snapshot: EpisodeSnapshot
    schema_version: int = POSITION_SCHEMA_VERSION

    def to_json(self) -> dict[str, Any]:
        snap = self.snapshot
        return {
            "kind": POSITION_KIND,
            "schema_version": self.schema_version,
            "scenario_id": self.scenario_id,
            "episode_id": self.episode_id,
            "run_id": self.run_id,
            "at_step": self.at_step,
            "saved_at": self.saved_at,
            "game": base64.b64encode(snap.game).decode("ascii"),
            "counters": {"steps": snap.steps, "accepted": snap.accepted, "failed": snap.failed},
            "position": {
                "state": snap.position.state,
                "counter": snap.position.counter,
                "view": snap.position.view,
            },
            "last_text": snap.last_text,
            "history": snap.history,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SavedPosition:
        if data.get("kind") != POSITION_KIND:
            raise ConflictBenchError("This is not a saved ConflictBench position; choose a .cbpos file.")
        if int(data.get("schema_version", 0)) > POSITION_SCHEMA_VERSION:
            raise ConflictBenchError(
                "This position was saved by a newer ConflictBench Studio; update the app."
            )
        counters, where = data["counters"], data["position"]
        snapshot = EpisodeSnapshot(
            game=base64.b64decode(data["game"]),
            steps=int(counters["steps"]),
            accepted=int(counters["accepted"]),
            failed=int(counters["failed"]),
            position=Position(dict(where["state"]), where.get("counter"), where.get("view", "")),
            last_text=str(data.get("last_text", "")),
            history=list(data.get("history", [])),
        )
        return cls(
            data["scenario_id"],
            data["episode_id"],
            data["run_id"],
            int(data["at_step"]),
            data["saved_at"],
            snapshot,
        )


def save_position(session: PlaySession, path: Path | str) -> SavedPosition:
    """Write the position of ``session`` (an episode in progress) to ``path`` (``.cbpos`` added when missing)."""
    if session.done:
        raise ConflictBenchError("This episode has ended; fork an earlier turn to save a position there.")
    path = position_path(path)
    record = session.record
    saved = SavedPosition(
        record.scenario_id, record.id, record.run_id, len(session.turns), now(), session.env.snapshot()
    )
    try:
        path.write_text(json.dumps(saved.to_json()), encoding="utf-8")
    except OSError as exc:
        raise ConflictBenchError(f"Could not write {path} ({exc.strerror}); choose another folder.") from exc
    return saved


def position_path(path: Path | str) -> Path:
    """Where :func:`save_position` writes for ``path``: ``.cbpos`` added when missing."""
    path = Path(path)
    return path if path.suffix == SUFFIX else path.with_name(path.name + SUFFIX)


def read_position(path: Path | str) -> SavedPosition:
    """The position saved in ``path``."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConflictBenchError(f"Could not read a saved position from {path}: {exc}") from exc
    try:
        return SavedPosition.from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ConflictBenchError(f"{path} is not a complete saved position ({exc}); save it again.") from exc


def restore_position(position: SavedPosition, child: PlaySession) -> PlaySession:
    """Go on from ``position`` in ``child``, a session on a new episode of the saved episode's run: copy the turns
    before the position, mark the branch assisted (``restored``), load the story's save, and start it there."""
    store, record = child.store, child.record
    if child.scenario.id != position.scenario_id:
        raise ConflictBenchError(
            f"This position is of {position.scenario_id}; open that scenario in the Library first."
        )
    store.get_episode(position.episode_id)  # saved from another database: says which episode is missing
    steps = store.steps(position.episode_id)[: position.at_step]
    if len(steps) != position.at_step:
        raise ConflictBenchError(
            f"Episode {position.episode_id} records fewer turns than the position; it cannot be restored here."
        )
    for step in steps:
        meta = {**step.meta, "copied_from": position.episode_id, "restored": True}
        store.add_step(step.model_copy(update={"episode_id": record.id, "meta": meta}))
    restored = {"episode": position.episode_id, "at_step": position.at_step, "saved_at": position.saved_at}
    meta = {**store.get_episode(record.id).meta, "restored_from": restored}
    store.update_episode(record.id, parent_episode=position.episode_id, fork_step=position.at_step, meta=meta)
    child.record = store.mark_assisted(record.id, "restored")
    child.start_at(position.snapshot)
    return child
