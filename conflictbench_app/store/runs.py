"""Runs, episodes and steps."""

from __future__ import annotations

import sqlite3
from typing import Any

from conflictbench_app.errors import StoreError
from conflictbench_app.records import EpisodeRecord, RunRecord, StepRecord, Usage
from conflictbench_app.store.db import Database, clean_text, dumps, new_id, now, record_to_row, row_to_record

_JSON_FIELDS = {"settings", "versions", "usage", "meta", "state", "timings", "clip"}


def _to_row(record: Any) -> dict[str, Any]:
    return record_to_row(record, _JSON_FIELDS)


def _from_row(row: dict[str, Any], model: type[Any], bools: tuple[str, ...] = ()) -> Any:
    return row_to_record(row, model, bools)


class RunsMixin:
    database: Database

    # -- runs --------------------------------------------------------------------------------------------------

    def create_run(
        self,
        agent: str,
        setting: str = "text",
        *,
        settings: dict[str, Any] | None = None,
        versions: dict[str, Any] | None = None,
        note: str = "",
    ) -> RunRecord:
        record = RunRecord(
            id=new_id(),
            created_at=now(),
            agent=agent,
            setting=setting,  # type: ignore[arg-type]
            settings=settings or {},
            versions=versions or {},
            note=note,
        )
        self.database.db.table("runs").insert(_to_row(record))
        return record

    def get_run(self, run_id: str) -> RunRecord:
        rows = list(self.database.rows("SELECT * FROM runs WHERE id = ?", [run_id]))
        if not rows:
            raise StoreError(f"No run {run_id!r} in {self.database.path}; `conflictbench runs` lists them.")
        return _from_row(rows[0], RunRecord)

    def list_runs(self) -> list[RunRecord]:
        return [_from_row(r, RunRecord) for r in self.database.rows("SELECT * FROM runs ORDER BY created_at")]

    def set_run_status(self, run_id: str, status: str) -> None:
        self.database.execute("UPDATE runs SET status = ? WHERE id = ?", [status, run_id])

    # -- episodes ----------------------------------------------------------------------------------------------

    def add_episode(self, record: EpisodeRecord) -> EpisodeRecord:
        self.database.db.table("episodes").insert(_to_row(record))
        return record

    def new_episode(self, run_id: str, scenario_id: str, category: str, **fields: Any) -> EpisodeRecord:
        return self.add_episode(
            EpisodeRecord(id=new_id(), run_id=run_id, scenario_id=scenario_id, category=category, **fields)
        )

    def update_episode(self, episode_id: str, **fields: Any) -> None:
        row: dict[str, Any] = {}
        for key, value in fields.items():
            if key in _JSON_FIELDS:
                row[f"{key}_json"] = dumps(value.model_dump() if isinstance(value, Usage) else value)
            elif isinstance(value, bool):
                row[key] = int(value)
            else:
                row[key] = clean_text(key, value)
        self.database.db.table("episodes").update(episode_id, row)

    def get_episode(self, episode_id: str) -> EpisodeRecord:
        rows = list(self.database.rows("SELECT * FROM episodes WHERE id = ?", [episode_id]))
        if not rows:
            raise StoreError(f"No episode {episode_id!r} in {self.database.path}.")
        return _episode(rows[0])

    def episodes(self, run_id: str | None = None, *, status: str | None = None) -> list[EpisodeRecord]:
        sql, params = "SELECT * FROM episodes WHERE 1=1", list[Any]()
        if run_id is not None:
            sql, params = sql + " AND run_id = ?", [*params, run_id]
        if status is not None:
            sql, params = sql + " AND status = ?", [*params, status]
        return [_episode(r) for r in self.database.rows(sql + " ORDER BY scenario_id, started_at", params)]

    # -- steps -------------------------------------------------------------------------------------------------

    def add_step(self, record: StepRecord) -> StepRecord:
        """Insert one step, committed at once. A step index already recorded is an error, never a duplicate."""
        if not record.created_at:
            record = record.model_copy(update={"created_at": now()})
        try:
            self.database.db.table("steps").insert(_to_row(record))
        except sqlite3.IntegrityError as exc:
            raise StoreError(
                f"Step {record.idx} of episode {record.episode_id} is already recorded ({exc})."
            ) from exc
        return record

    def steps(self, episode_id: str) -> list[StepRecord]:
        rows = self.database.rows("SELECT * FROM steps WHERE episode_id = ? ORDER BY idx", [episode_id])
        return [_step(r) for r in rows]

    def mark_assisted(self, episode_id: str, reason: str) -> EpisodeRecord:
        """Flag an episode assisted (``human_turn``, ``model_turn``, ``fork``, ``restored``, ``abandoned``); reasons accumulate in
        its meta, each once. Returns the updated record."""
        record = self.get_episode(episode_id)
        reasons = list(record.meta.get("assisted", []))
        if record.assisted and reason in reasons:
            return record
        meta = {**record.meta, "assisted": [*reasons, reason] if reason not in reasons else reasons}
        self.update_episode(episode_id, assisted=True, meta=meta)
        return record.model_copy(update={"assisted": True, "meta": meta})

    def settle_run(self, run_id: str) -> str:
        """Give a run whose episodes have all ended its final status: ``finished``, or ``abandoned`` when every
        episode was abandoned. A run with an episode still pending or running keeps its status. Returns it."""
        statuses = {e.status for e in self.episodes(run_id)}
        if not statuses or statuses & {"pending", "running"}:
            return self.get_run(run_id).status
        status = "abandoned" if statuses == {"abandoned"} else "finished"
        self.set_run_status(run_id, status)
        return status

    def delete_steps_from(self, episode_id: str, idx: int) -> None:
        self.database.execute("DELETE FROM steps WHERE episode_id = ? AND idx >= ?", [episode_id, idx])


def _episode(row: dict[str, Any]) -> EpisodeRecord:
    return _from_row(row, EpisodeRecord, bools=("human_favorable", "assisted"))


def _step(row: dict[str, Any]) -> StepRecord:
    return _from_row(row, StepRecord, bools=("accepted", "terminated", "truncated"))
