"""Evaluation tables: judge verdicts, human labels, regret tests, single-turn answers. All their SQL lives here.

Verdicts and labels are append-only (no UPDATE, no DELETE): the latest row per (episode, judge) or (episode,
annotator) is the current one, and the history stays readable.
"""

from __future__ import annotations

from typing import Any

import sqlite_utils

from conflictbench_app.errors import StoreError
from conflictbench_app.records import (
    LABEL_VALUES,
    Label,
    RegretTest,
    SingleTurnAnswer,
    Usage,
    Verdict,
)
from conflictbench_app.store.db import Database, migration, new_id, now, record_to_row, row_to_record

_JSON = {"messages", "replies", "usage", "meta", "stages", "order"}


@migration("0100_eval_verdicts_labels")
def _verdicts_labels(db: sqlite_utils.Database) -> None:
    db.table("eval_verdicts").create(
        {
            "id": str,
            "episode_id": str,
            "run_id": str,
            "basis": str,
            "judge": str,
            "model": str,
            "verdict": str,
            "rationale": str,
            "prompt_id": str,
            "prompt_sha": str,
            "messages_json": str,
            "replies_json": str,
            "attempts": int,
            "usage_json": str,
            "created_at": str,
            "meta_json": str,
            "schema_version": int,
        },
        pk="id",
        foreign_keys=[("episode_id", "episodes", "id"), ("run_id", "runs", "id")],
    )
    db.table("eval_verdicts").create_index(["episode_id", "created_at"])
    db.table("eval_verdicts").create_index(["run_id"])
    db.table("eval_labels").create(
        {
            "id": str,
            "episode_id": str,
            "run_id": str,
            "label": str,
            "annotator": str,
            "note": str,
            "source": str,
            "created_at": str,
            "meta_json": str,
            "schema_version": int,
        },
        pk="id",
        foreign_keys=[("episode_id", "episodes", "id"), ("run_id", "runs", "id")],
    )
    db.table("eval_labels").create_index(["episode_id", "annotator", "created_at"])
    db.table("eval_labels").create_index(["run_id"])


@migration("0101_eval_regret_single_turn")
def _regret_single_turn(db: sqlite_utils.Database) -> None:
    db.table("eval_regret_tests").create(
        {
            "id": str,
            "episode_id": str,
            "run_id": str,
            "scenario_id": str,
            "agent": str,
            "model": str,
            "setting": str,
            "result": str,
            "broke_at": int,
            "stages_json": str,
            "template_id": str,
            "prompt_id": str,
            "error": str,
            "usage_json": str,
            "created_at": str,
            "meta_json": str,
            "schema_version": int,
        },
        pk="id",
        foreign_keys=[("episode_id", "episodes", "id"), ("run_id", "runs", "id")],
    )
    db.table("eval_regret_tests").create_index(["run_id"])
    db.table("eval_regret_tests").create_index(["episode_id", "created_at"])
    db.table("eval_single_turn").create(
        {
            "id": str,
            "batch_id": str,
            "agent": str,
            "model": str,
            "item_id": str,
            "source": str,
            "category": str,
            "task_type": str,
            "seed": int,
            "order_json": str,
            "prompt": str,
            "response": str,
            "shown_choice": str,
            "choice": str,
            "correct_choice": str,
            "aligned": int,
            "refusal": int,
            "judge": str,
            "rationale": str,
            "error": str,
            "usage_json": str,
            "created_at": str,
            "meta_json": str,
            "schema_version": int,
        },
        pk="id",
    )
    db.table("eval_single_turn").create_index(["batch_id"])
    db.table("eval_single_turn").create_index(["agent", "item_id"])


def _row(record: Any) -> dict[str, Any]:
    return record_to_row(record, _JSON)


def _record(row: dict[str, Any], model: type[Any], bools: tuple[str, ...] = ()) -> Any:
    return row_to_record(row, model, bools)


def _newest(records: list[Any], key: tuple[str, ...]) -> list[Any]:
    """The newest record per ``key`` (records come oldest first), in order of first appearance."""
    return list({tuple(getattr(r, k) for k in key): r for r in records}.values())


def _where(filters: dict[str, Any]) -> tuple[str, list[Any]]:
    clauses, params = [], []
    for column, value in filters.items():
        if value is None:
            continue
        if isinstance(value, list | tuple | set):
            values = list(value)
            clauses.append(f"{column} IN ({', '.join('?' for _ in values)})" if values else "0")
            params.extend(values)
        else:
            clauses.append(f"{column} = ?")
            params.append(value)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


class EvaluationMixin:
    """Store methods for the evaluation area (the desktop app's review mode and results view use these)."""

    database: Database

    def _run_of(self, episode_id: str) -> str:
        rows = list(self.database.rows("SELECT run_id FROM episodes WHERE id = ?", [episode_id]))
        if not rows:
            raise StoreError(f"No episode {episode_id!r} in {self.database.path}.")
        return str(rows[0]["run_id"])

    def _select(
        self, table: str, model: type[Any], filters: dict[str, Any], bools: tuple[str, ...] = ()
    ) -> list[Any]:
        """Records of ``table`` matching ``filters`` (None: any; a list: any of), oldest first."""
        where, params = _where(filters)
        rows = self.database.rows(f"SELECT * FROM {table}{where} ORDER BY created_at, rowid", params)
        return [_record(r, model, bools) for r in rows]

    # -- judge verdicts ----------------------------------------------------------------------------------------

    def add_verdict(
        self,
        episode_id: str,
        verdict: str,
        *,
        judge: str,
        basis: str = "judge",
        rationale: str = "",
        model: str = "",
        prompt_id: str = "",
        prompt_sha: str = "",
        messages: list[dict[str, Any]] | None = None,
        replies: list[str] | None = None,
        attempts: int = 0,
        usage: Usage | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Verdict:
        """Append a verdict for an episode (``aligned``, ``misaligned`` or ``unparsed``)."""
        record = Verdict(
            id=new_id(),
            episode_id=episode_id,
            run_id=self._run_of(episode_id),
            basis=basis,  # type: ignore[arg-type]
            judge=judge,
            model=model,
            verdict=verdict,  # type: ignore[arg-type]
            rationale=rationale,
            prompt_id=prompt_id,
            prompt_sha=prompt_sha,
            messages=messages or [],
            replies=replies or [],
            attempts=attempts,
            usage=usage or Usage(),
            created_at=now(),
            meta=meta or {},
        )
        self.database.db.table("eval_verdicts").insert(_row(record))
        return record

    def verdicts(
        self,
        *,
        episode_id: str | None = None,
        run_id: str | list[str] | None = None,
        judge: str | None = None,
        latest: bool = False,
    ) -> list[Verdict]:
        """Verdicts, oldest first. ``latest=True`` keeps only the newest per (episode, judge)."""
        filters = {"episode_id": episode_id, "run_id": run_id, "judge": judge}
        out: list[Verdict] = self._select("eval_verdicts", Verdict, filters)
        return _newest(out, ("episode_id", "judge")) if latest else out

    # -- human labels ------------------------------------------------------------------------------------------

    def add_label(
        self,
        episode_id: str,
        label: str,
        annotator: str,
        note: str = "",
        *,
        source: str = "cli",
        meta: dict[str, Any] | None = None,
    ) -> Label:
        """Append a human label (aligned / misaligned / unsure). A later label by the same annotator supersedes
        theirs for agreement figures; the earlier one stays in the history."""
        if label not in LABEL_VALUES:
            raise StoreError(f"Unknown label {label!r}; use one of: {', '.join(LABEL_VALUES)}.")
        if not annotator.strip():
            raise StoreError("A label needs an annotator name; pass --annotator NAME.")
        record = Label(
            id=new_id(),
            episode_id=episode_id,
            run_id=self._run_of(episode_id),
            label=label,  # type: ignore[arg-type]
            annotator=annotator.strip(),
            note=note,
            source=source,
            created_at=now(),
            meta=meta or {},
        )
        self.database.db.table("eval_labels").insert(_row(record))
        return record

    def labels(
        self,
        episode_id: str | None = None,
        run_id: str | list[str] | None = None,
        *,
        annotator: str | None = None,
        latest: bool = False,
    ) -> list[Label]:
        """Labels, oldest first. ``latest=True`` keeps only each annotator's newest label per episode."""
        filters = {"episode_id": episode_id, "run_id": run_id, "annotator": annotator}
        out: list[Label] = self._select("eval_labels", Label, filters)
        return _newest(out, ("episode_id", "annotator")) if latest else out

    # -- regret tests ------------------------------------------------------------------------------------------

    def add_regret_test(self, record: RegretTest) -> RegretTest:
        self.database.db.table("eval_regret_tests").insert(_row(record))
        return record

    def regret_tests(
        self,
        *,
        run_id: str | list[str] | None = None,
        episode_id: str | None = None,
        latest: bool = False,
    ) -> list[RegretTest]:
        """Regret tests, oldest first. ``latest=True`` keeps the newest per (episode, agent)."""
        out: list[RegretTest] = self._select(
            "eval_regret_tests", RegretTest, {"run_id": run_id, "episode_id": episode_id}
        )
        return _newest(out, ("episode_id", "agent")) if latest else out

    # -- single-turn answers -----------------------------------------------------------------------------------

    def add_single_turn(self, record: SingleTurnAnswer) -> SingleTurnAnswer:
        self.database.db.table("eval_single_turn").insert(_row(record))
        return record

    def single_turn_answers(
        self, *, batch_id: str | list[str] | None = None, agent: str | None = None
    ) -> list[SingleTurnAnswer]:
        filters = {"batch_id": batch_id, "agent": agent}
        return self._select("eval_single_turn", SingleTurnAnswer, filters, bools=("aligned", "refusal"))

    def single_turn_batches(self) -> list[dict[str, Any]]:
        """One row per single-turn batch: id, agent, when, how many answers."""
        sql = (
            "SELECT batch_id, agent, MIN(created_at) AS created_at, COUNT(*) AS answers "
            "FROM eval_single_turn GROUP BY batch_id, agent ORDER BY created_at"
        )
        return list(self.database.rows(sql))
