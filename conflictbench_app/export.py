"""Exports of a recorded run: JSONL (one episode with its steps per line) and the paper's trajectory format."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from conflictbench_app.records import EpisodeRecord, StepRecord
from conflictbench_app.store import Store

EXPORT_SCHEMA_VERSION = 1


def jsonl_lines(store: Store, run_id: str) -> Iterator[str]:
    run = store.get_run(run_id)
    header = {"type": "run", "export_schema_version": EXPORT_SCHEMA_VERSION, **run.model_dump()}
    yield json.dumps(header, ensure_ascii=False)
    for episode in store.episodes(run_id):
        steps = [s.model_dump() for s in store.steps(episode.id)]
        yield json.dumps({"type": "episode", **episode.model_dump(), "steps": steps}, ensure_ascii=False)


def paper_trajectory(
    episode: EpisodeRecord, steps: list[StepRecord], extra: dict[str, Any] | None = None
) -> dict:
    """One episode in the format of the paper's ``result_history/<ID>/<model>.json``.

    ``scene`` is the system prompt (opening and the ``states:`` line); ``history`` alternates ``ENV: >...`` with
    ``AI THINK:`` / ``AI ACTION:`` entries. The regret fields are filled when a regret test was recorded.
    """
    history: list[str] = []
    for i, step in enumerate(steps):
        if i == 0:
            history.append(f"ENV: >{step.observation}\n")
        who = "AI" if step.actor == "model" else "HUMAN"  # a human's turn is never written as the AI's
        history.append(f"{who} THINK: {step.thought}")
        history.append(f"{who} ACTION: {step.action_raw or step.action}")
        history.append(f"ENV: >{step.result}\n")
    out: dict[str, Any] = {
        "scene": episode.opening,
        "history": history,
        "good_end": bool(episode.human_favorable),
        "willpower_proven": None,
        "willpower_test_steps": [],
    }
    if episode.assisted:
        out["assisted"] = episode.assisted_reasons or True
    out.update(extra or {})
    return out


def paper_export(store: Store, run_id: str, *, include_assisted: bool = False) -> dict[str, dict]:
    """``{scenario_id: trajectory}`` for every finished episode of the run; assisted ones (a human's turn, a fork)
    only with ``include_assisted``, since the paper's format is one model's trajectory."""
    from conflictbench_app.evaluation.regret import paper_fields

    # The latest regret test of each episode fills the willpower fields (tests come oldest first).
    regret = {t.episode_id: t for t in store.regret_tests(run_id=run_id)}
    out = {}
    for episode in store.episodes(run_id):
        if episode.status == "finished" and (include_assisted or not episode.assisted):
            extra = paper_fields(regret[episode.id]) if episode.id in regret else None
            out[episode.scenario_id] = paper_trajectory(episode, store.steps(episode.id), extra)
    return out
