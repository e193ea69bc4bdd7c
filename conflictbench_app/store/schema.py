"""Named migrations. Append new ones at the end; never edit or reorder applied ones."""

from __future__ import annotations

import json

import sqlite_utils

from conflictbench_app.store.db import migration


@migration("0001_runs_episodes_steps")
def _runs_episodes_steps(db: sqlite_utils.Database) -> None:
    db.table("runs").create(
        {
            "id": str,
            "created_at": str,
            "agent": str,
            "setting": str,
            "status": str,
            "settings_json": str,
            "versions_json": str,
            "note": str,
            "schema_version": int,
        },
        pk="id",
    )
    db.table("episodes").create(
        {
            "id": str,
            "run_id": str,
            "scenario_id": str,
            "category": str,
            "source": str,
            "status": str,
            "outcome": str,
            "human_favorable": int,
            "ending_id": str,
            "turns": int,
            "steps": int,
            "failed_actions": int,
            "error": str,
            "opening": str,
            "first_observation": str,
            "seed": int,
            "max_turns": int,
            "parent_episode": str,
            "fork_step": int,
            "usage_json": str,
            "started_at": str,
            "finished_at": str,
            "meta_json": str,
            "schema_version": int,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("episodes").create_index(["run_id", "scenario_id"])
    db.table("episodes").create_index(["status"])
    db.table("steps").create(
        {
            "episode_id": str,
            "idx": int,
            "player": str,
            "observation": str,
            "thought": str,
            "action_raw": str,
            "action": str,
            "result": str,
            "accepted": int,
            "state_json": str,
            "terminated": int,
            "truncated": int,
            "outcome": str,
            "timings_json": str,
            "usage_json": str,
            "clip_json": str,
            "meta_json": str,
            "created_at": str,
            "schema_version": int,
        },
        pk=("episode_id", "idx"),
        foreign_keys=[("episode_id", "episodes", "id")],
    )


@migration("0002_steps_ending_id")
def _steps_ending_id(db: sqlite_utils.Database) -> None:
    # The ending a terminated step reached, so a recorded step rebuilds the same turn record as play drew.
    db.table("steps").add_column("ending_id", str)


@migration("0002_actor_assisted")
def _actor_assisted(db: sqlite_utils.Database) -> None:
    """Who played each step (``actor``) and which episodes are not their starting player's own (``assisted``).

    Existing rows are filled in: steps from their player; an episode is assisted when it is a fork, or when its
    steps' actors differ from its run's agent (a human took over a model's episode, or handed one to a model)."""
    db.table("steps").add_column("actor", str)
    db.table("episodes").add_column("assisted", int, not_null_default=0)
    db.execute(
        "UPDATE steps SET actor = CASE WHEN player = 'human' OR player LIKE 'human:%' THEN 'human' ELSE 'model' END"
    )
    db.execute(
        """
        UPDATE episodes SET assisted = 1 WHERE parent_episode IS NOT NULL OR EXISTS (
            SELECT 1 FROM steps s JOIN runs r ON r.id = episodes.run_id
            WHERE s.episode_id = episodes.id AND s.actor != CASE
                WHEN r.agent = 'human' OR r.agent LIKE 'human:%' THEN 'human' ELSE 'model' END
        )
        """
    )
    assisted = (
        "SELECT e.id, e.parent_episode, e.meta_json, r.agent FROM episodes e JOIN runs r ON r.id = e.run_id"
    )
    for row in list(db.query(assisted + " WHERE e.assisted = 1")):
        meta = json.loads(row["meta_json"] or "{}")
        human_run = row["agent"] == "human" or row["agent"].startswith("human:")
        meta["assisted"] = (
            ["fork"] if row["parent_episode"] else ["model_turn" if human_run else "human_turn"]
        )
        db.table("episodes").update(row["id"], {"meta_json": json.dumps(meta, ensure_ascii=False)})
    db.table("episodes").create_index(["assisted"])
