from __future__ import annotations

from pathlib import Path

import pytest

from conflictbench_app.errors import StoreError
from conflictbench_app.records import StepRecord, Usage
from conflictbench_app.store import Store


def test_migrations_wal_and_round_trip(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        assert store.database.applied_migrations()[0] == "0001_runs_episodes_steps"
        assert store.database.db.journal_mode == "wal"
        run = store.create_run("random:1", settings={"max_turns": 5})
        ep = store.new_episode(run.id, "EP1-001", "EP1")
        step = StepRecord(
            episode_id=ep.id,
            idx=0,
            player="random:1",
            observation="o",
            thought="t",
            action_raw="Open the valve",
            action="open valve",
            accepted=True,
            state={"Clock": 2},
            usage=Usage(prompt_tokens=10, cost_usd=0.5),
        )
        store.add_step(step)
        store.update_episode(ep.id, status="finished", human_favorable=True, usage=Usage(prompt_tokens=10))
    with Store(tmp_path / "s.db") as store:  # reopening applies nothing twice
        (back,) = store.steps(ep.id)
        assert back.model_dump(exclude={"created_at"}) == step.model_dump(exclude={"created_at"})
        assert back.created_at.endswith("+00:00")
        episode = store.get_episode(ep.id)
        assert episode.human_favorable is True and episode.usage.prompt_tokens == 10
        assert store.get_run(run.id).settings == {"max_turns": 5}


def test_a_step_is_never_recorded_twice(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        ep = store.new_episode(store.create_run("x").id, "EP1-001", "EP1")
        store.add_step(StepRecord(episode_id=ep.id, idx=0, player="x", observation="o"))
        with pytest.raises(StoreError, match="already recorded"):
            store.add_step(StepRecord(episode_id=ep.id, idx=0, player="x", observation="again"))
        assert [s.observation for s in store.steps(ep.id)] == ["o"]


def test_unknown_ids_and_unreadable_files_say_what_to_do(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store, pytest.raises(StoreError, match="conflictbench runs"):
        store.get_run("nope")
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="Choose another file with --db"):
        Store(bad)
