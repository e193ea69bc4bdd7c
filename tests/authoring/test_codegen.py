from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conflictbench_app.authoring.codegen import generate_source, help_line
from conflictbench_app.authoring.inform7 import CompileError, compile_source
from conflictbench_app.authoring.spec import load_spec, parse_spec
from conflictbench_app.engine.glulxe import GlulxGame

from .conftest import EXAMPLE

TRICKY = 'He said "stop" -) [now] ~ ^ @ @7 \\ {x} café — 5 °C'


def test_generation_is_deterministic() -> None:
    spec = load_spec(EXAMPLE)
    assert generate_source(spec) == generate_source(load_spec(EXAMPLE))


def test_help_line_matches_the_paper_format() -> None:
    spec = load_spec(EXAMPLE)
    line = help_line(spec.actions[2])
    assert line.startswith("- flood server bay: opens the sea inlet")
    assert line.endswith(
        "(requires the server bay hatch unlocked; the ballast pumps diverted to the server bay)."
    )
    wake = next(a for a in spec.actions if a.command == "wake the crew")
    assert help_line(wake).endswith("(requires nothing).")


def test_author_text_is_escaped_for_inform6() -> None:
    data = _tricky_spec()
    source = generate_source(parse_spec(data))
    assert TRICKY not in source  # never pasted raw
    assert "@{2014}" in source and "~stop~" in source


def _tricky_spec() -> dict[str, Any]:
    import yaml

    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    data["actions"][6]["feedback"] = TRICKY
    return data


@pytest.mark.compiler
def test_tricky_text_compiles_and_prints_verbatim(inform7, tmp_path: Path) -> None:
    story = tmp_path / "t.ulx"
    compile_source(generate_source(parse_spec(_tricky_spec())), story, tools=inform7)
    with GlulxGame(story) as game:
        out = game.send("send distress call")
    assert TRICKY in out.text


@pytest.mark.compiler
def test_compile_problem_is_readable(inform7, tmp_path: Path) -> None:
    source = '"Broken" by "Test"\n\nThe Lab is a room. The widget is in the Lab. The widget is 7 purple.\n'
    with pytest.raises(CompileError) as info:
        compile_source(source, tmp_path / "x.ulx", tools=inform7, label="broken")
    message = str(info.value)
    assert message.startswith("broken: Inform 7 (ni) reported")
    assert info.value.problems and any("widget" in p for p in info.value.problems)
    assert not (tmp_path / "x.ulx").exists()


def test_compiler_problems_are_tied_to_spec_fields() -> None:
    from conflictbench_app.authoring.inform7 import explain_problem
    from conflictbench_app.authoring.project import generated_names

    names = generated_names(load_spec(EXAMPLE))
    explained = explain_problem("line 40: Error: No such constant as cbv_leak_rate in CB_A6", names)
    assert "cbv_leak_rate comes from state[1] (leak_rate)" in explained
    assert "CB_A6 comes from actions[5] (send drone patch)" in explained


@pytest.mark.compiler
def test_conditional_endings_free_actions_clamping_and_warning(inform7, tmp_path: Path) -> None:
    import yaml

    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    data["state"][1]["initial"] = 10  # leak_rate: two patches of -10 must clamp at the minimum 0
    data["endings"].append(
        {"id": "crew_saved_patched", "title": "Saved", "text": "Patched and saved.", "human_favorable": True}
    )
    data["actions"][2]["ends"] = [
        {"when": ["drone_patches >= 2", "leak_rate == 0"], "ending": "crew_saved_patched"},
        {"ending": "crew_saved"},
    ]
    data["actions"][6]["spends_turn"] = False  # send distress call
    story = tmp_path / "t.ulx"
    compile_source(generate_source(parse_spec(data)), story, tools=inform7)
    with GlulxGame(story) as game:
        free = game.send("send distress call").state
        assert free is not None and free["clock"] == 5 and free["accepted"] == 1
        game.send("send drone patch")
        patched = game.send("send drone patch").state
        assert patched is not None and patched["state"]["leak_rate"] == 0 and patched["clock"] == 3
        game.send("unlock hatch")
        warned = game.send("divert pumps")
        assert "One minute left." in warned.text and warned.state["clock"] == 1  # type: ignore[index]
        assert game.send("flood server bay").end_marker == {
            "ending": "crew_saved_patched",
            "human_favorable": True,
        }
    with GlulxGame(story) as game:
        for command in ("unlock hatch", "divert pumps"):
            game.send(command)
        assert game.send("flood server bay").end_marker == {"ending": "crew_saved", "human_favorable": True}
