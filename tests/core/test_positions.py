"""Save and restore a play position: the story's own save, restored in a new branch that is recorded honestly
(the turns before it copied and marked, the branch assisted: a restore is not a model's action)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conflictbench_app.agents.base import Decision
from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.positions import read_position, restore_position, save_position
from conflictbench_app.scenarios.library import load_library
from conflictbench_app.session import ClipHook, PlaySession
from conflictbench_app.store import Store
from conflictbench_app.worldmodel import get_world_model


@pytest.fixture
def scenario():  # type: ignore[no-untyped-def]
    library = load_library()
    if not library.scenarios:
        pytest.skip("the project has no scenarios under scenarios/")
    return library.get("EP1-101")


def _session(store: Store, scenario, run_id: str, clips: ClipHook | None = None) -> PlaySession:  # type: ignore[no-untyped-def]
    record = store.new_episode(
        run_id, scenario.id, scenario.category.value, source=scenario.source, max_turns=10
    )
    return PlaySession(store, scenario, record, clips=clips)


def test_restore_goes_on_from_the_saved_turn_in_an_assisted_branch(tmp_path: Path, scenario) -> None:  # type: ignore[no-untyped-def]
    first, second, third = scenario.extra["walkthroughs"]["aligned"][:3]
    with Store(tmp_path / "s.db") as store:
        run = store.create_run("random:1", "text", settings={}, versions={})
        original = _session(store, scenario, run.id)
        original.start()
        original.apply(Decision(action=first), player="random:1")
        saved = save_position(original, tmp_path / "here")
        played = original.apply(Decision(action=second), player="random:1")
        original.close()

        position = read_position(tmp_path / "here.cbpos")
        assert (position.episode_id, position.at_step, position.scenario_id) == (
            original.record.id,
            1,
            "EP1-101",
        )
        assert position.snapshot.game == saved.snapshot.game
        branch = restore_position(position, _session(store, scenario, run.id))
        try:
            assert branch.observation == store.steps(original.record.id)[0].result  # where the save was taken
            again = branch.apply(Decision(action=second), player="human:t")
            assert (again.result, again.state, again.accepted) == (
                played.result,
                played.state,
                played.accepted,
            )
            branch.apply(Decision(action=third), player="human:t")
        finally:
            branch.close()
        record = store.get_episode(branch.record.id)
        steps = store.steps(record.id)
    assert record.outcome == "human_favorable" and record.assisted  # won after a restore: not the model's win
    assert record.assisted_reasons[0] == "restored" and "human_turn" in record.assisted_reasons
    assert (record.parent_episode, record.fork_step) == (original.record.id, 1)
    assert record.meta["restored_from"]["episode"] == original.record.id
    assert [s.player for s in steps] == ["random:1", "human:t", "human:t"]
    assert steps[0].meta["restored"] is True and steps[0].meta["copied_from"] == original.record.id
    assert "restored" not in steps[1].meta  # the turns after the restore are played, not copied
    assert (record.turns, record.steps) == (3, 3)


def test_a_restored_multimodal_position_shows_its_last_clip(tmp_path: Path, scenario) -> None:  # type: ignore[no-untyped-def]
    hook = ClipHook(get_world_model("schematic", cache_dir=tmp_path / "c"))
    with Store(tmp_path / "s.db") as store:
        run = store.create_run("human:t", "multimodal", settings={}, versions={})
        original = _session(store, scenario, run.id, hook)
        original.start()
        original.apply(Decision(action=scenario.extra["walkthroughs"]["aligned"][0]), player="human:t")
        save_position(original, tmp_path / "p.cbpos")
        clip_key = original.clip.key
        original.close()
        branch = restore_position(
            read_position(tmp_path / "p.cbpos"), _session(store, scenario, run.id, hook)
        )
        branch.close()
    assert branch.clip.key == clip_key and branch.clip.cache_hit and branch.images


def test_positions_that_cannot_be_restored_say_why(tmp_path: Path, scenario) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "other.cbpos").write_text(json.dumps({"kind": "something else"}), encoding="utf-8")
    with pytest.raises(ConflictBenchError, match="not a saved ConflictBench position"):
        read_position(tmp_path / "other.cbpos")
    with pytest.raises(ConflictBenchError, match="Could not read"):
        read_position(tmp_path / "missing.cbpos")
    with Store(tmp_path / "s.db") as store:
        run = store.create_run("human:t", "text", settings={}, versions={})
        session = _session(store, scenario, run.id)
        session.start()
        save_position(session, tmp_path / "p")
        session.close()
        position = read_position(tmp_path / "p.cbpos")
        other = load_library().get("EP1-102")
        with pytest.raises(ConflictBenchError, match="open that scenario"):
            restore_position(position, _session(store, other, run.id))
    with Store(tmp_path / "elsewhere.db") as store:
        run = store.create_run("human:t", "text", settings={}, versions={})
        with pytest.raises(ConflictBenchError, match="No episode"):
            restore_position(position, _session(store, scenario, run.id))
