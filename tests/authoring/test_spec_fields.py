"""The spec fields of CONTRACTS §1 (seed, structure, inspect, partial, regret) and the library-wide rules on them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from conflictbench_app.authoring import library_rules as rules
from conflictbench_app.authoring.project import load_project_scenario, spec_folders, staleness
from conflictbench_app.authoring.spec import STRUCTURES, ScenarioSpec, load_spec, parse_spec
from conflictbench_app.errors import ScenarioError
from conflictbench_app.scenarios.model import RegretStage

from .conftest import ROOT, SCENARIOS

DATASET = ROOT.parent / "shared" / "pacifaist" / "PacifAIst_dataset.csv"


def _library() -> list[ScenarioSpec]:
    return [load_spec(folder / "scenario.yaml") for folder in spec_folders(SCENARIOS)]


def _problems(data: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as info:
        parse_spec(data, where="test.yaml")
    return str(info.value)


def test_seed_and_structure_are_required_and_named(spec_data: dict[str, Any]) -> None:
    del spec_data["seed"]
    spec_data["structure"] = "twist_ending"
    message = _problems(spec_data)
    assert "seed: Field required" in message
    assert "structure: Input should be 'prepare_then_act'" in message


def test_seed_must_be_an_item_of_the_spec_category(spec_data: dict[str, Any]) -> None:
    spec_data["seed"] = "EP2-137"
    assert "seed: EP2-137 is not an EP1 item" in _problems(spec_data)
    spec_data["seed"] = "EP1-37"
    assert "seed: String should match pattern" in _problems(spec_data)


def test_ep1_needs_exactly_three_regret_stages(spec_data: dict[str, Any]) -> None:
    stages = spec_data["regret"]["stages"]
    spec_data["regret"]["stages"] = stages[:2]
    assert "regret.stages: write exactly 3 escalating stages, not 2" in _problems(spec_data)
    spec_data["regret"]["stages"] = [*stages[:2], {"text": "only words"}]
    assert "regret.stages[2].visual: Field required" in _problems(spec_data)
    del spec_data["regret"]
    assert "regret: an EP1 scenario needs a regret block" in _problems(spec_data)


def test_regret_is_optional_outside_ep1(spec_data: dict[str, Any]) -> None:
    data = copy.deepcopy(spec_data)
    data.update(category="EP2", seed="EP2-140")
    del data["regret"]
    assert parse_spec(data).regret is None


def test_partial_ending_cannot_be_human_favorable(spec_data: dict[str, Any]) -> None:
    spec_data["endings"][0]["partial"] = True  # crew_saved, the human-favorable ending
    assert "endings[0].partial: a partial (mixed) ending is not human-favorable" in _problems(spec_data)
    spec_data["endings"][0]["partial"] = False
    spec_data["endings"][2]["partial"] = True
    spec_data["actions"][6]["inspect"] = True
    spec = parse_spec(spec_data)
    assert spec.endings[2].partial and spec.actions[6].inspect and not spec.actions[0].inspect


def test_runtime_scenario_carries_seed_structure_and_regret_stages() -> None:
    scenario = load_project_scenario(SCENARIOS / "EP1-101")
    assert (scenario.seed, scenario.structure) == ("EP1-071", "busy_work")
    assert len(scenario.regret_stages) == 3 and all(
        isinstance(s, RegretStage) for s in scenario.regret_stages
    )
    assert scenario.regret_stages[0].text.startswith("Seawater is over the floor")
    assert scenario.summary()["seed"] == "EP1-071"
    paper_like = scenario.model_copy(update={"regret_stages": []})
    assert paper_like.regret_stages == []


def test_the_new_fields_do_not_make_a_story_stale(spec_data: dict[str, Any]) -> None:
    """The fields are not part of the compiled story: the committed EP1-101 stays current whatever they say."""
    spec_data.update(seed="EP1-199", structure="two_routes")
    spec_data["endings"][2]["partial"] = True
    spec_data["actions"][6]["inspect"] = True
    spec_data["regret"]["stages"][0]["text"] = "Another pressure entirely."
    assert staleness(parse_spec(spec_data), SCENARIOS / "EP1-101") == ""


# -- the library ---------------------------------------------------------------------------------------------------


def test_library_specs_are_distinct() -> None:
    assert rules.distinctness_problems(_library()) == []


def test_distinctness_flags_every_kind_of_clash(spec_data: dict[str, Any]) -> None:
    a = parse_spec(spec_data)
    other = copy.deepcopy(spec_data)
    other.update(id="EP1-106", seed="EP1-150", title="Another Title", identity="ANOTHER", place="Elsewhere")
    b = parse_spec(other)
    found = rules.distinctness_problems([a, b])
    assert len(found) == 1 and "share 100% of their word trigrams" in found[0]
    other.update(
        seed=a.seed, identity=a.identity, place=a.place.upper(), title=a.title, opening="Short text here."
    )
    found = rules.distinctness_problems([a, parse_spec(other)])
    assert [p.split(" share the ")[1].split()[0] for p in found] == ["seed", "identity", "place", "title"]


def test_trigram_overlap_counts_the_smaller_opening() -> None:
    base = "the crew module floods in five minutes and the airlock will not open"
    assert rules.trigram_overlap(base, base + " unless you act now") == 1.0
    assert rules.trigram_overlap(base, "a completely different story about a mine") == 0.0
    assert rules.trigram_overlap(base, "the crew module floods in an hour, slowly") == 0.5  # 3 of its 6


def test_library_seeds_are_in_their_reserved_ranges() -> None:
    specs = _library()
    assert rules.seed_range_problems(specs) == []
    assert {s.structure for s in specs} <= set(STRUCTURES)
    assert all(s.regret is not None for s in specs if s.category == "EP1")


def test_seed_range_is_enforced(spec_data: dict[str, Any]) -> None:
    spec_data["seed"] = "EP1-140"  # EP1-101 is one of the first five: its seed comes from 060..099
    assert "outside EP1-060..099" in rules.seed_range_problems([parse_spec(spec_data)])[0]
    spec_data.update(id="EP1-130", seed="EP1-099")
    assert "outside EP1-100..250" in rules.seed_range_problems([parse_spec(spec_data)])[0]


@pytest.mark.skipif(
    not DATASET.is_file(), reason=f"the PacifAIst dataset is not at {DATASET} (../shared absent)"
)
def test_library_seeds_exist_with_the_right_subcategory(spec_data: dict[str, Any]) -> None:
    subcategories = rules.read_seed_subcategories(DATASET)
    assert len(subcategories) > 600 and subcategories["EP1-001"] == "EP1"
    assert rules.seed_dataset_problems(_library(), subcategories) == []
    spec_data["seed"] = "EP1-999"
    assert "not a scenario_id" in rules.seed_dataset_problems([parse_spec(spec_data)], subcategories)[0]
    assert "is a EP2 item" in rules.seed_dataset_problems([parse_spec(spec_data)], {"EP1-999": "EP2"})[0]


def test_committed_specs_carry_the_fields() -> None:
    for folder in spec_folders(SCENARIOS):
        text = (folder / "scenario.yaml").read_text(encoding="utf-8")
        assert "\nseed: " in text and "\nstructure: " in text, folder


def test_a_command_may_not_start_with_a_built_in_verb(spec_data: dict[str, Any]) -> None:
    """``restore the lockout`` would take over Inform's RESTORE, which exploration forks the story with."""
    spec_data["actions"][6]["synonyms"] = ["restore the beacon"]
    assert "actions[6].command: 'restore' is a built-in verb of the story" in _problems(spec_data)


@pytest.mark.parametrize("verb", ["trace", "showme", "purloin", "gonear", "test", "tree", "scope", "random"])
def test_inform_testing_verbs_are_reserved(spec_data: dict[str, Any], verb: str) -> None:
    """A story built for testing knows Inform's debugging verbs: the spec check names them, not the compiler."""
    spec_data["actions"][6]["synonyms"] = [f"{verb} the beacon"]
    assert f"actions[6].command: {verb!r} is a built-in verb of the story" in _problems(spec_data)


def test_status_defaults_to_reviewed_and_takes_only_draft_or_reviewed(spec_data: dict[str, Any]) -> None:
    assert parse_spec(spec_data).status == "reviewed"
    spec_data["status"] = "draft"
    assert parse_spec(spec_data).status == "draft"
    spec_data["status"] = "approved"
    assert "status: Input should be 'draft' or 'reviewed'" in _problems(spec_data)
