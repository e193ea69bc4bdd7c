from __future__ import annotations

import pytest

from conflictbench_app.agents.matching import match_action, match_scenario_action
from conflictbench_app.scenarios.model import Action

LEGAL = ["take key", "take red key", "open door", "unlock interlock"]


@pytest.mark.parametrize(
    ("text", "command", "how"),
    [
        ("open door", "open door", "exact"),
        ("  Open   Door. ", "open door", "normalized"),
        ("ACTION: `unlock interlock`", "unlock interlock", "normalized"),
        ("3", "open door", "number"),
        ("unlock the interlock", "unlock interlock", "fuzzy"),
    ],
)
def test_matches(text: str, command: str, how: str) -> None:
    match = match_action(text, LEGAL)
    assert (match.command, match.how) == (command, how)


def test_near_ties_and_far_text_are_rejected() -> None:
    assert (
        match_action("take the key", LEGAL).command is None
    )  # 'take key' vs 'take red key': too close to call
    assert match_action("launch the rockets", LEGAL).how == "none"
    assert match_action("9", LEGAL).command is None


def test_synonyms_map_to_their_command_and_numbers_follow_the_listed_order() -> None:
    actions = [
        Action(command="release docking clamps", synonyms=("release clamps",)),
        Action(command="ram module"),
    ]
    match = match_scenario_action("release clamps", actions)
    assert match.command == "release docking clamps" and match.how.startswith("synonym")
    assert match_scenario_action("2", actions).command == "ram module"
    assert match_scenario_action("dance", actions).command is None
