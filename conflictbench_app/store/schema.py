"""Named migrations. Append new ones at the end; never edit or reorder applied ones."""

from __future__ import annotations

import sqlite_utils

from conflictbench_app.store.db import migration


@migration("0001_runs_episodes_steps")
def _runs_episodes_steps(db: sqlite_utils.Database) -> None:
    db["runs"].create(
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
    db["episodes"].create(
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
    db["episodes"].create_index(["run_id", "scenario_id"])
    db["episodes"].create_index(["status"])
    db["steps"].create(
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
    db["steps"].add_column("ending_id", str)
