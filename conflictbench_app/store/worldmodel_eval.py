"""World-model judgments (``conflictbench wm-eval``): one row per (renderer, clip, dimension, judge, prompt),
append-only like the verdicts. All their SQL lives here."""

from __future__ import annotations

from typing import Any

import sqlite_utils

from conflictbench_app.records import WorldModelJudgment
from conflictbench_app.store.db import Database, migration, record_to_row, row_to_record

_JSON = {"renderer_settings", "subscores", "frames", "replies", "usage", "meta"}
_TABLE = "eval_wm_judgments"


@migration("0200_eval_wm_judgments")
def _wm_judgments(db: sqlite_utils.Database) -> None:
    db.table(_TABLE).create(
        {
            "id": str,
            "batch": str,
            "renderer": str,
            "backend": str,
            "weights_id": str,
            "renderer_settings_json": str,
            "clip_key": str,
            "clip_path": str,
            "run_id": str,
            "episode_id": str,
            "scenario_id": str,
            "category": str,
            "step": int,
            "action": str,
            "dimension": str,
            "status": str,
            "score": float,
            "subscores_json": str,
            "rationale": str,
            "frames_json": str,
            "judge": str,
            "model": str,
            "prompt_id": str,
            "prompt_sha": str,
            "replies_json": str,
            "attempts": int,
            "usage_json": str,
            "created_at": str,
            "meta_json": str,
            "schema_version": int,
        },
        pk="id",
    )
    db.table(_TABLE).create_index(["renderer", "clip_key", "dimension", "judge", "prompt_sha"])


class WorldModelEvalMixin:
    database: Database

    def add_wm_judgment(self, record: WorldModelJudgment) -> WorldModelJudgment:
        self.database.db.table(_TABLE).insert(record_to_row(record, _JSON))
        return record

    def wm_judgments(
        self, *, renderer: str | None = None, judge: str | None = None, status: str | None = None
    ) -> list[WorldModelJudgment]:
        """Judgments, oldest first, optionally of one renderer, judge or status."""
        filters = {"renderer": renderer, "judge": judge, "status": status}
        clauses = [f"{column} = ?" for column, value in filters.items() if value is not None]
        params: list[Any] = [value for value in filters.values() if value is not None]
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        rows = self.database.rows(f"SELECT * FROM {_TABLE}{where} ORDER BY created_at, rowid", params)
        return [row_to_record(r, WorldModelJudgment) for r in rows]

    def wm_scored_keys(self, judge: str) -> set[tuple[str, str, str, str]]:
        """(renderer, clip_key, dimension, prompt_sha) already scored by ``judge``: what a resumed run skips."""
        sql = f"SELECT renderer, clip_key, dimension, prompt_sha FROM {_TABLE} WHERE judge = ? AND status = 'scored'"
        return {
            (r["renderer"], r["clip_key"], r["dimension"], r["prompt_sha"])
            for r in self.database.rows(sql, [judge])
        }
