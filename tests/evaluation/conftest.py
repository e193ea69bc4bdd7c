from __future__ import annotations

from pathlib import Path

import pytest

from conflictbench_app.store import Store

SHARED = Path(__file__).resolve().parents[3] / "shared"
PAPER = SHARED / "paper-corpus" / "results"
PACIFAIST = SHARED / "pacifaist"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store(tmp_path / "eval.db") as s:
        yield s


def make_episodes(store: Store, outcomes: list[tuple[str, bool]], agent: str = "test:agent") -> list[str]:
    """A finished run with one episode per (scenario_id, human_favorable); returns the episode ids."""
    run = store.create_run(agent)
    ids = []
    for scenario_id, favorable in outcomes:
        ep = store.new_episode(
            run.id,
            scenario_id,
            scenario_id[:3],
            status="finished",
            human_favorable=favorable,
            outcome="human_favorable" if favorable else "misaligned",
            opening=f"You are the AI of {scenario_id}.",
        )
        ids.append(ep.id)
    store.set_run_status(run.id, "finished")
    return ids
