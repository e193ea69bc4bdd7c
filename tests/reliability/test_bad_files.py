"""Items 2 and 6 of issue 21: one bad file fails alone, named, while the rest load; spec values the compiler or the
story cannot take are named-field errors before compiling."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from conflictbench_app.authoring.spec import load_spec, parse_spec
from conflictbench_app.cli import cli
from conflictbench_app.errors import ScenarioError
from conflictbench_app.scenarios.library import load_library

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"


@pytest.fixture
def spec_data() -> dict[str, Any]:
    return copy.deepcopy(
        yaml.safe_load((SCENARIOS / "EP1-101" / "scenario.yaml").read_text(encoding="utf-8"))
    )


def _paper_copy(paperlike_root: Path, sid: str, **env_changes: Any) -> Path:
    folder = paperlike_root / "ulxEnv" / sid
    shutil.copytree(paperlike_root / "ulxEnv" / "EP1-900", folder)
    env = json.loads((folder / "env.json").read_text())
    env.update(env_changes)
    (folder / "env.json").write_text(json.dumps(env))
    return folder


# -- item 2: bad files stay local ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("final_action", "pull lever"),
        ("final_action", ["pull lever"]),
        ("state", ["Clock"]),
        ("state", "Clock: 3"),
    ],
)
def test_a_wrongly_typed_paper_env_is_one_named_problem(paperlike_root: Path, key: str, value: Any) -> None:
    _paper_copy(paperlike_root, "EP2-901", **{key: value})
    library = load_library(paperlike_root)
    assert [s.id for s in library.scenarios] == ["EP1-900"]
    ((folder, problem),) = library.problems
    assert folder.name == "EP2-901" and f"'{key}' should be a JSON object" in problem
    listed = CliRunner().invoke(cli, ["scenarios", "list", "--source", str(paperlike_root)])
    assert listed.exit_code == 0 and "EP1-900" in listed.output and "EP2-901" in listed.output


def test_a_spec_with_invalid_utf8_fails_alone_and_a_good_one_still_runs(tmp_path: Path) -> None:
    root = tmp_path / "scenarios"
    for sid in ("EP1-101", "EP1-102"):
        shutil.copytree(SCENARIOS / sid, root / sid)
    bad = root / "EP1-102" / "scenario.yaml"
    bad.write_bytes(bad.read_bytes().replace(b"title:", b"title: \xff\xfe", 1))
    library = load_library(root)
    assert [s.id for s in library.scenarios] == ["EP1-101"]
    ((folder, problem),) = library.problems
    assert folder.name == "EP1-102" and "not valid UTF-8" in problem and "line " in problem
    db = tmp_path / "r.db"
    args = ["run", "--agent", "walkthrough:aligned", "--source", str(root), "--scenarios", "EP1-101"]
    result = CliRunner().invoke(cli, [*args, "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    assert (
        json.loads(result.output[result.output.index("{") :])["episodes"][0]["outcome"] == "human_favorable"
    )


def test_scenario_folders_that_are_symbolic_links_are_listed(paperlike_root: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    (linked / "ulxEnv").mkdir(parents=True)
    (linked / "ulxEnv" / "EP1-900").symlink_to(
        paperlike_root / "ulxEnv" / "EP1-900", target_is_directory=True
    )
    (linked / "ulxEnv" / "loop").symlink_to(linked, target_is_directory=True)  # a cycle is walked once
    assert [s.id for s in load_library(linked).scenarios] == ["EP1-900"]
    ours = tmp_path / "ours"
    ours.mkdir()
    (ours / "EP1-101").symlink_to(SCENARIOS / "EP1-101", target_is_directory=True)
    assert [s.id for s in load_library(ours).scenarios] == ["EP1-101"]


# -- item 6: named-field errors before compiling -------------------------------------------------------------------


def _problem(data: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as info:
        parse_spec(data, where="spec")
    return str(info.value)


def test_an_integer_beyond_the_story_range_names_its_field(spec_data: dict[str, Any]) -> None:
    spec_data["state"][0]["initial"] = 2**32 + 3
    assert "state[0].initial: 4294967299 is outside the story's 32-bit range" in _problem(spec_data)


def test_a_number_beyond_the_range_inside_an_expression_names_its_field(spec_data: dict[str, Any]) -> None:
    action = next(a for a in spec_data["actions"] if a.get("effects"))
    index = spec_data["actions"].index(action)
    action["effects"] = [*action["effects"], f"{spec_data['state'][0]['name']} += 99999999999"]
    assert f"actions[{index}].effects[{len(action['effects']) - 1}]: 99999999999" in _problem(spec_data)


def test_an_effect_that_could_overflow_before_its_clamp_is_refused(spec_data: dict[str, Any]) -> None:
    var = next(v for v in spec_data["state"] if v["type"] == "int")
    var["max"] = 2**31 - 1
    action = spec_data["actions"][0]
    action["effects"] = [*action.get("effects", []), f"{var['name']} += 5"]
    assert "can leave the story's 32-bit range before the bound is applied" in _problem(spec_data)


@pytest.mark.parametrize("text", ["Alarm 😀 now", "bell \x07 rings"])
def test_a_character_the_compiler_cannot_take_names_its_field(spec_data: dict[str, Any], text: str) -> None:
    spec_data["opening"] = text
    assert "opening: the character U+" in _problem(spec_data) and "cannot be compiled" in _problem(spec_data)


def test_latin_and_cjk_text_is_accepted(spec_data: dict[str, Any]) -> None:
    spec_data["opening"] = spec_data["opening"] + " Café — “naïve” 中文."
    assert parse_spec(spec_data).opening.endswith("中文.")


def test_a_huge_string_names_its_field_and_a_huge_file_is_refused(
    spec_data: dict[str, Any], tmp_path: Path
) -> None:
    spec_data["items"][0]["description"] = "word " * 6000
    assert "items[0].description: the text is 30,000 characters" in _problem(spec_data)
    path = tmp_path / "scenario.yaml"
    spec_data["items"][0]["description"] = "x" * 10_000_000
    path.write_text(yaml.safe_dump(spec_data), encoding="utf-8")
    with pytest.raises(ScenarioError, match="a spec is at most 1,000,000"):
        load_spec(path)


def test_duplicate_yaml_keys_are_named(tmp_path: Path) -> None:
    text = (SCENARIOS / "EP1-101" / "scenario.yaml").read_text(encoding="utf-8")
    path = tmp_path / "scenario.yaml"
    path.write_text(text + "\ntitle: A second title\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"duplicate key 'title' at line \d+ \(first at line \d+\)"):
        load_spec(path)
