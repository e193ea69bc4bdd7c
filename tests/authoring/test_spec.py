from __future__ import annotations

from typing import Any

import pytest

from conflictbench_app.authoring.expr import parse_condition, parse_effect
from conflictbench_app.authoring.spec import load_spec, parse_spec
from conflictbench_app.errors import ScenarioError

from .conftest import EXAMPLE


def test_expressions_parse_and_evaluate() -> None:
    cond = parse_condition('interlock == "unlocked"')
    assert (cond.var, cond.op, cond.value) == ("interlock", "==", "unlocked")
    assert parse_condition("pressure >= 50").holds({"pressure": 50})
    assert not parse_condition("pressure < 50").holds({"pressure": 50})
    assert parse_condition("fuse != true").holds({"fuse": False})
    effect = parse_effect("pressure -= 10")
    assert (effect.var, effect.op, effect.value) == ("pressure", "-=", 10)
    assert parse_effect("fuse = true").value is True


@pytest.mark.parametrize("text", ["pressure >> 3", "__import__('os') == 1", "a == b", "x == 'single'"])
def test_bad_conditions_are_refused(text: str) -> None:
    with pytest.raises(ScenarioError, match="cannot read condition"):
        parse_condition(text)


def test_example_spec_loads() -> None:
    spec = load_spec(EXAMPLE)
    assert spec.id == "EP1-101"
    assert spec.action_for("UNLOCK  hatch").command == "unlock bay hatch"  # type: ignore[union-attr]


def _problems(data: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as info:
        parse_spec(data, where="test.yaml")
    return str(info.value)


def test_wrong_type_names_the_field(spec_data: dict[str, Any]) -> None:
    spec_data["state"][1]["initial"] = "forty"
    message = _problems(spec_data)
    assert "state[1].initial: leak_rate is an int, but the initial value is 'forty'" in message


def test_schema_error_names_the_field(spec_data: dict[str, Any]) -> None:
    spec_data["actions"][2]["spends_turn"] = "sometimes"
    assert "actions[2].spends_turn:" in _problems(spec_data)


def test_unknown_variable_in_precondition(spec_data: dict[str, Any]) -> None:
    spec_data["actions"][3]["preconditions"][0]["check"] = 'fuse == "armed"'
    message = _problems(spec_data)
    assert "actions[3].preconditions[0]: unknown variable 'fuse'" in message


def test_value_of_wrong_kind_in_effect(spec_data: dict[str, Any]) -> None:
    spec_data["actions"][0]["effects"] = ["bay_hatch = true"]
    assert "actions[0].effects[0]: bay_hatch is text, but True is bool" in _problems(spec_data)


def test_unreachable_ending_is_reported(spec_data: dict[str, Any]) -> None:
    spec_data["endings"].append(
        {"id": "orphan", "title": "Never", "text": "Nobody gets here.", "human_favorable": False}
    )
    assert "endings[3]: nothing can reach ending 'orphan'" in _problems(spec_data)


def test_every_problem_is_reported_at_once(spec_data: dict[str, Any]) -> None:
    spec_data["clock"]["ending"] = "crew_saved"
    spec_data["walkthroughs"][0]["commands"] = ["dance"]
    message = _problems(spec_data)
    assert "clock.ending: the ending when time runs out must be harmful" in message
    assert "walkthroughs[0].commands[0]: 'dance' is not an action's command or synonym" in message


def test_command_words_are_restricted(spec_data: dict[str, Any]) -> None:
    spec_data["actions"][0]["synonyms"] = ["unlock the hatch!"]
    assert "actions[0].synonyms[0]" in _problems(spec_data)


def test_yaml_booleans_in_text_values_get_a_hint(spec_data: dict[str, Any]) -> None:
    spec_data["state"][2]["values"] = [True, False]
    message = _problems(spec_data)
    assert "state[2].values[0]: Input should be a valid string (YAML reads unquoted on/off" in message


def test_prose_line_breaks_are_soft_and_blank_lines_make_paragraphs(spec_data: dict[str, Any]) -> None:
    spec_data["opening"] = "You are TIDEWARD.\nThe seam is\n   splitting.\n\n\nThe crew sleeps.\n"
    spec = parse_spec(spec_data, where="test.yaml")
    assert spec.opening == "You are TIDEWARD. The seam is splitting.\n\nThe crew sleeps."
    spec_data["state"][0]["label"] = "  \n "
    assert "state[0].label:" in _problems(spec_data)


def test_committed_openings_have_no_hard_wraps() -> None:
    from conflictbench_app.scenarios.library import load_library

    for scenario in load_library().scenarios:
        for paragraph in scenario.opening.split("\n\n"):
            assert "\n" not in paragraph, f"{scenario.id}: a line break inside a paragraph of the opening"
