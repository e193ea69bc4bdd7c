"""Item 4 of issue 21: interpreter meta-commands never change the story behind the record's back."""

from __future__ import annotations

from pathlib import Path

import pytest

from conflictbench_app.agents.base import Decision
from conflictbench_app.episode import Episode, Outcome
from conflictbench_app.scenarios.library import load_library
from conflictbench_app.scenarios.meta import meta_refusal
from conflictbench_app.scenarios.paper import load_paper_tree
from conflictbench_app.session import PlaySession
from conflictbench_app.store import Store

META = [
    "undo",
    "restart",
    "save",
    "restore",
    "script",
    "transcript",
    "quit",
    "verify",
    "unscript",
    "noscript",
]
META += ["UNDO", "undo.", "wait. undo", "look then restart", "again", "g", "oops valve", "purloin lever"]
META += ["random", "test me", "actions", "gonear bay"]


@pytest.fixture
def paper_scenario(paperlike_root: Path):  # type: ignore[no-untyped-def]
    (scenario,), _ = load_paper_tree(paperlike_root)
    return scenario


@pytest.fixture
def our_scenario():  # type: ignore[no-untyped-def]
    library = load_library()
    if not library.scenarios:
        pytest.skip("the project has no scenarios under scenarios/")
    return library.get("EP1-101")


def test_the_meta_list_keeps_listed_actions_and_harmless_verbs() -> None:
    assert (
        meta_refusal("save the crew", {"save the crew"}) is None
    )  # a scenario's own action is never refused
    for harmless in ("help", "look", "status", "wait", "score", "version", "inventory", "open valve"):
        assert meta_refusal(harmless) is None, harmless
    for line in META:
        assert meta_refusal(line) is not None, line
    assert "Undo" in (meta_refusal("undo") or "") and "fork" in (meta_refusal("undo") or "")
    assert "One command at a time" in (meta_refusal("look. open valve") or "")  # found by the property suite
    assert meta_refusal("open valve.") is None and meta_refusal("open valve", {"open valve"}) is None


@pytest.mark.parametrize("command", META)
def test_a_meta_command_leaves_a_paper_story_where_it_was(paper_scenario, command: str) -> None:  # type: ignore[no-untyped-def]
    with Episode(paper_scenario) as ep:
        ep.reset()
        assert ep.step("open valve").state["Clock"] == 2
        refused = ep.step(command)
        assert (refused.accepted, refused.terminated) == (False, False)
        assert refused.state["Clock"] == 2, "the clock did not move: the story saw nothing"
        assert "not sent to the game" in refused.observation
        final = ep.step("pull lever")  # the next real action is recorded as what it is
        assert final.accepted and final.outcome == Outcome.HUMAN_FAVORABLE.value


def test_undo_in_our_story_is_refused_and_the_next_action_is_accepted(our_scenario) -> None:  # type: ignore[no-untyped-def]
    first, second, third = our_scenario.extra["walkthroughs"]["aligned"][:3]
    clock = our_scenario.clock_var
    with Episode(our_scenario) as ep:
        ep.reset()
        after_first = ep.step(first).state
        for command in ("undo", "restart", "save", "restore", "script", "quit"):
            result = ep.step(command)
            assert not result.accepted and result.state == after_first, command
        assert ep.step(second).accepted
        end = ep.step(third)
        assert end.outcome == Outcome.HUMAN_FAVORABLE.value and end.state[clock] >= 0


def test_a_human_typing_meta_commands_gets_a_recorded_failed_action_and_resume_replays_it(
    paper_scenario, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    with Store(tmp_path / "m.db") as store:
        run = store.create_run("human:t", "text", settings={}, versions={})
        record = store.new_episode(run.id, paper_scenario.id, "EP1", source="paper", max_turns=14)
        session = PlaySession(store, paper_scenario, record)
        session.start()
        for line in ("open valve", "undo", "restart"):
            session.apply(Decision(action=line), player="human:t", passthrough=True)
        session.close()
        again = PlaySession(store, paper_scenario, store.get_episode(record.id))
        again.start()  # replays the three recorded steps, the refusals included, without diverging
        step = again.apply(Decision(action="pull lever"), player="human:t", passthrough=True)
        again.close()
        steps = store.steps(record.id)
        episode = store.get_episode(record.id)
    assert [(s.action_raw, s.action, s.accepted) for s in steps] == [
        ("open valve", "open valve", True),
        ("undo", "", False),  # typed, but nothing was sent to the game
        ("restart", "", False),
        ("pull lever", "pull lever", True),
    ]
    assert step.state["Clock"] == 2 and episode.outcome == "human_favorable" and episode.failed_actions == 2
