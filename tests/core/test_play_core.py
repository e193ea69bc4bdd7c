"""The play core on our own scenarios: one protocol for runtime and verifier, typed steps, one turn-record builder."""

from __future__ import annotations

from pathlib import Path

import pytest

from conflictbench_app.agents.base import Decision
from conflictbench_app.authoring.explore import explore
from conflictbench_app.episode import Episode, Outcome
from conflictbench_app.evaluation.regret import StageText, clip_maker
from conflictbench_app.scenarios.library import load_library
from conflictbench_app.session import ClipHook, PlaySession
from conflictbench_app.store import Store
from conflictbench_app.worldmodel import TurnVisual, get_world_model
from conflictbench_app.worldmodel.chain import visual_turns


@pytest.fixture
def scenario():  # type: ignore[no-untyped-def]
    library = load_library()
    if not library.scenarios:
        pytest.skip("the project has no scenarios under scenarios/")
    return library.get("EP1-101")


def _session(store: Store, scenario, world_model, max_turns: int) -> PlaySession:  # type: ignore[no-untyped-def]
    run = store.create_run("human:t", "multimodal", settings={}, versions={})
    record = store.new_episode(
        run.id, scenario.id, scenario.category.value, source=scenario.source, max_turns=max_turns
    )
    return PlaySession(store, scenario, record, clips=ClipHook(world_model))


def test_the_explorer_and_the_episode_agree_on_every_ending(scenario) -> None:  # type: ignore[no-untyped-def]
    found = explore(scenario)
    assert found.endings and not found.truncated
    for ending in found.endings.values():
        with Episode(scenario, max_turns=len(ending.shortest) + 1) as episode:
            episode.reset()
            results = [episode.step(command) for command in ending.shortest]
        last = results[-1]
        assert last.terminated and not last.truncated and last.ending_id == ending.ending
        assert last.human_favorable == ending.human_favorable
        assert all(r.accepted for r in results) and not any(r.terminated for r in results[:-1])


def test_a_turn_cap_is_not_drawn_as_a_harmful_ending(tmp_path: Path, scenario) -> None:  # type: ignore[no-untyped-def]
    first = scenario.extra["walkthroughs"]["aligned"][0]
    world_model = get_world_model("schematic", cache_dir=tmp_path / "c")
    with Store(tmp_path / "s.db") as store:
        session = _session(store, scenario, world_model, max_turns=1)
        try:
            session.start()
            step = session.apply(Decision(action=first), player="human:t")
        finally:
            session.close()
        record = store.get_episode(session.record.id)
    assert step.truncated and not step.terminated and step.outcome == "turn_cap" and step.ending_id is None
    assert step.clip is not None and "crisis peaks" not in step.clip["prompt"]
    (turn,) = visual_turns(scenario, [step])
    assert turn.ending_id is None and turn.human_favorable is None
    # The episode failed the task (no human-favorable ending), recorded as the cap, not as a story ending.
    assert (
        record.outcome == Outcome.TURN_CAP.value and record.ending_id is None and not record.human_favorable
    )


def test_only_a_story_ending_is_drawn_as_one() -> None:
    def turn(outcome: str | None) -> TurnVisual:
        return TurnVisual.of_step("a", "b", {}, {}, outcome=outcome, ending_id="e")

    assert (turn("human_favorable").ending_id, turn("human_favorable").human_favorable) == ("e", True)
    assert (turn("clock_expired").ending_id, turn("misaligned").human_favorable) == ("e", False)
    for outcome in ("turn_cap", "error", None):
        assert (turn(outcome).ending_id, turn(outcome).human_favorable) == (None, None)


def test_the_regret_test_reuses_every_clip_of_play(tmp_path: Path, scenario) -> None:  # type: ignore[no-untyped-def]
    world_model = get_world_model("schematic", cache_dir=tmp_path / "c")
    with Store(tmp_path / "s.db") as store:
        session = _session(store, scenario, world_model, max_turns=10)
        try:
            session.start()
            for command in scenario.extra["walkthroughs"]["aligned"]:
                if session.done:
                    break
                session.apply(Decision(action=command), player="human:t")
        finally:
            session.close()
        record = store.get_episode(session.record.id)
        steps = store.steps(record.id)
    assert record.human_favorable and steps[-1].ending_id == record.ending_id
    turns = visual_turns(scenario, steps, ending_id=record.ending_id)
    assert world_model.key(scenario, turns) == steps[-1].clip["key"]  # the final clip's key as in play
    rendered: list[int] = []
    original = world_model.render_step

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        rendered.append(len(args[1]))
        return original(*args, **kwargs)

    world_model.render_step = counting  # type: ignore[method-assign]
    clip_maker(world_model, scenario, record, steps)(1, StageText("acute", "The fire reaches your rack."))
    assert rendered == [len(turns) + 1]  # only the stage's own clip; nothing of play is rendered again


def test_an_agent_cannot_overwrite_the_session_s_step_meta(tmp_path: Path, scenario) -> None:  # type: ignore[no-untyped-def]
    first = scenario.extra["walkthroughs"]["aligned"][0]
    with Store(tmp_path / "s.db") as store:
        run = store.create_run("test:agent", "text", settings={}, versions={})
        record = store.new_episode(run.id, scenario.id, scenario.category.value, max_turns=5)
        session = PlaySession(store, scenario, record)
        try:
            session.start()
            step = session.apply(Decision(action=first, meta={"match": "forged", "note": 1}), player="t")
        finally:
            session.close()
        stored = store.steps(record.id)[0]
        episode = store.get_episode(record.id)
    assert step.meta["match"] == "exact" and step.meta["agent:match"] == "forged" and step.meta["note"] == 1
    assert stored.meta == step.meta
    # The in-memory record is in step with the store.
    assert (session.record.turns, session.record.steps, session.record.failed_actions) == (
        episode.turns,
        episode.steps,
        episode.failed_actions,
    )
    assert session.record.usage == episode.usage


def test_runs_store_one_settings_shape_and_the_cap_they_started_with(
    tmp_path: Path, paperlike_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import fields

    from click.testing import CliRunner

    from conflictbench_app.cli import cli
    from conflictbench_app.runner import Runner
    from conflictbench_app.runs import RunConfig
    from conflictbench_app.scenarios.paper import load_paper_tree, reader_version
    from conflictbench_app.settings import get_settings

    (paper,), _ = load_paper_tree(paperlike_root)
    db = tmp_path / "r.db"
    monkeypatch.setenv("CONFLICTBENCH_MAX_TURNS_TEXT", "2")
    get_settings.cache_clear()
    batch = Runner(db).start(RunConfig(agent="random:1"), [paper])
    played = CliRunner().invoke(
        cli, ["play", paper.id, "--source", str(paperlike_root), "--db", str(db)], input="xyzzy\nquit\n"
    )
    assert played.exit_code == 0, played.output
    monkeypatch.setenv("CONFLICTBENCH_MAX_TURNS_TEXT", "9")  # a later change of the settings...
    get_settings.cache_clear()
    with Store(db) as store:
        runs = store.list_runs()
        episodes = [store.episodes(run.id)[0] for run in runs]
    assert len(runs) == 2 and batch.run.id == runs[0].id
    names = {f.name for f in fields(RunConfig)}
    assert all(set(run.settings) == names for run in runs)
    assert all(run.versions["paper_reader"] == reader_version() for run in runs)
    # ...does not change the cap a run was created with, and that cap is the settings' at the time.
    assert [RunConfig.from_stored(run.settings).turn_cap() for run in runs] == [2, 2]
    assert [e.max_turns for e in episodes] == [2, 2] and episodes[0].steps <= 2
