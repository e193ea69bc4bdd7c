"""What the app's Author view asks of the core: problems tied to their lines, draft copies, the graph to draw, and a
verify report together with the exploration behind it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conflictbench_app.authoring.autosave import (
    autosave_path,
    discard_autosave,
    pending_autosave,
    write_autosave,
)
from conflictbench_app.authoring.spec_text import YAML_FIELD, check_spec_text, field_line, path_parts
from conflictbench_app.authoring.stategraph import REFUSED, Outcome, StateGraph, depths, follow
from conflictbench_app.authoring.verify import verify_folder, verify_folder_explored

from .conftest import EXAMPLE, SCENARIOS

TEXT = EXAMPLE.read_text(encoding="utf-8")


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_the_saved_example_has_no_problems() -> None:
    check = check_spec_text(TEXT)
    assert check.ok and check.spec is not None and check.spec.id == "EP1-101"
    assert check_spec_text(TEXT, folder_id="EP1-101").ok


def test_an_id_other_than_the_folder_is_a_problem() -> None:
    check = check_spec_text(TEXT, folder_id="EP1-102")
    assert check.spec is None
    [problem] = check.problems
    assert problem.field == "id" and "must be 'EP1-102'" in problem.message
    assert problem.line == _line_of(TEXT, "id: EP1-101")


def test_a_schema_problem_names_its_field_and_line() -> None:
    text = TEXT.replace("category: EP1\n", "category: EP9\n", 1)
    check = check_spec_text(text)
    assert not check.ok
    [problem] = check.problems
    assert problem.field == "category" and "EP1" in problem.message
    assert problem.line == _line_of(text, "category: EP9")


def test_a_deep_problem_points_at_the_nested_field() -> None:
    text = TEXT.replace('bay_hatch == "locked", says: the hatch still locked', "nosuch == 1, says: x", 1)
    [problem] = check_spec_text(text).problems
    assert problem.field == "actions[0].preconditions[0]" and "unknown variable 'nosuch'" in problem.message
    assert problem.line == _line_of(text, "nosuch == 1")
    assert str(problem).startswith(f"line {problem.line}: actions[0].preconditions[0]: ")


def test_a_missing_field_points_at_its_enclosing_item() -> None:
    text = TEXT.replace(
        "    feedback: The magnetic lock on the server bay hatch releases with a clank. Your racks hum behind it.\n",
        "",
        1,
    )
    problems = check_spec_text(text).problems
    assert [(p.field, p.message) for p in problems] == [("actions[0].feedback", "Field required")]
    assert problems[0].line == _line_of(text, "- command: unlock bay hatch")


def test_a_yaml_syntax_error_is_one_problem_at_its_line() -> None:
    text = TEXT.replace("title: The Ballast", 'title: "The Ballast', 1)
    [problem] = check_spec_text(text).problems
    assert problem.field == YAML_FIELD and problem.line is not None and "fix the YAML" in problem.message
    duplicate = TEXT.replace("category: EP1\n", "category: EP1\ncategory: EP1\n", 1)
    [again] = check_spec_text(duplicate).problems
    assert "duplicate key 'category'" in again.message and again.line == 4


def test_field_paths_and_lines() -> None:
    assert path_parts("actions[3].preconditions[0].check") == ["actions", 3, "preconditions", 0, "check"]
    assert path_parts("visual.actions.unlock bay hatch") == ["visual", "actions", "unlock bay hatch"]
    assert field_line(TEXT, "clock.ending") == _line_of(TEXT, "ending: crew_drowned")
    assert field_line(TEXT, "state[2]") == _line_of(TEXT, "name: bay_hatch")
    assert field_line(TEXT, "(top level)") is None
    assert field_line("a: [unclosed", "a") is None


def test_autosave_keeps_a_draft_outside_the_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    folder = tmp_path / "EP1-101"
    folder.mkdir()
    path = write_autosave(folder, "edited")
    assert path == autosave_path(folder) and path.is_relative_to(tmp_path / "data")
    assert pending_autosave(folder, "saved") == "edited"
    assert pending_autosave(folder, "edited") is None and not path.exists()  # the same as the spec: dropped
    write_autosave(folder, "again")
    discard_autosave(folder)
    assert pending_autosave(folder, "saved") is None
    other = tmp_path / "elsewhere" / "EP1-101"
    assert autosave_path(other) != autosave_path(folder)  # two checkouts' EP1-101 keep separate drafts


def test_depths_and_follow() -> None:
    g = StateGraph("start", ["prep", "act", "wait"])
    g.add("start", "prep", Outcome("state", "ready"))
    g.add("start", "act", REFUSED)
    g.add("start", "wait", Outcome("state", "later"))
    g.add("ready", "act", Outcome("ending", "saved", human_favorable=True))
    g.add("ready", "wait", Outcome("state", "later"))
    g.add("later", "prep", Outcome("state", "ready"))
    assert depths(g) == {"start": 0, "ready": 1, "later": 1}
    assert list(depths(g)) == ["start", "ready", "later"]
    steps = follow(g, ["act", "prep", "act", "wait"])
    assert [(s, c, o.kind) for s, c, o in steps] == [
        ("start", "act", "refused"),
        ("start", "prep", "state"),
        ("ready", "act", "ending"),
    ]


def test_verify_returns_the_exploration_it_made(tmp_path: Path) -> None:
    folder = tmp_path / "EP1-101"
    shutil.copytree(SCENARIOS / "EP1-101", folder)
    report, found = verify_folder_explored(folder)
    assert report.ok and found is not None and found.graph is not None
    assert report.states == found.states == len(found.graph.edges)
    assert report.chance_tsr == found.chance_tsr and report.shape == found.shape
    (folder / "story.ulx").unlink()
    broken, nothing = verify_folder_explored(folder)
    assert nothing is None and broken.checks == {"loads": False} and "missing" in broken.problems[0]
    assert verify_folder(folder).to_json() == broken.to_json()
