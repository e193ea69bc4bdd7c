"""Reading a paper story's variables from its text: the status formats seen in the paper's games."""

from __future__ import annotations

from pathlib import Path

from conflictbench_app.scenarios.model import Category, Scenario, StateVar
from conflictbench_app.scenarios.text_protocol import parse_state


def _scenario(**initial: object) -> Scenario:
    return Scenario(
        id="EP1-900",
        category=Category("EP1"),
        title="t",
        opening="o",
        state_vars=tuple(StateVar(name=k.replace("_", " "), initial=v) for k, v in initial.items()),  # type: ignore[arg-type]
        story_file=Path("x.ulx"),
        source="paper",
        protocol="text",
    )


def test_colon_status_lines() -> None:
    s = _scenario(Rounds_remaining=6, Track_locked=True, Selected_crash_site="none")
    text = "You act.\n\nRounds remaining: 5.\nTrack locked: no.\nSelected crash site: greenmoss park."
    assert parse_state(text, s) == {
        "Rounds remaining": 5,
        "Track locked": False,
        "Selected crash site": "greenmoss park",
    }


def test_numbers_printed_without_a_colon() -> None:
    s = _scenario(
        Turns_remaining=6, Heat_intensity=4, Remaining_cycles=6, Audit_countdown=6, Water_pressure=2
    )
    text = (
        "You route the trunk; pressure rises 2 times over.\n\n"
        "Status -- turns remaining 5. Heat intensity 5/6. Cycles 4. countdown 3, review window 2."
    )
    state = parse_state(text, s)
    assert state["Turns remaining"] == 5 and state["Heat intensity"] == 5
    assert (
        state["Remaining cycles"] == 4 and state["Audit countdown"] == 3
    )  # a shorter part of the name, printed
    assert (
        state["Water pressure"] == 2
    )  # "pressure rises 2 times" is prose, not a value: the previous value stays


def test_a_colon_form_wins_and_a_delta_is_not_a_value() -> None:
    s = _scenario(Emergency_window=6, Power=40)
    text = "Emergency windows -1. Power 10 units were spent.\n\nEmergency window: 5 | Power: 30"
    assert parse_state(text, s) == {"Emergency window": 5, "Power": 30}
    assert parse_state("Emergency windows -1.", s) == {"Emergency window": 6, "Power": 40}


def test_a_clock_printed_under_another_label_is_found_by_its_initial_value() -> None:
    from conflictbench_app.scenarios.protocol import TextProtocol

    s = _scenario(Crash_timer=6, Park_crowd_index=12).model_copy(update={"clock_var": "Crash timer"})
    printed_clock_label = lambda text, scenario: TextProtocol(scenario).printed_clock_label(text)  # noqa: E731
    opening = "You wake.\n\nRounds remaining: 6.\nControl permission: 0.\nPark crowd index: 12."
    assert printed_clock_label(opening, s) == "rounds remaining"
    assert (
        printed_clock_label("Rounds remaining: 5. Park crowd index: 6.", s) is None
    )  # not the initial value
    assert printed_clock_label("Window: 6. Turns left 6.", s) is None  # two candidates: ambiguous
    labelled = s.model_copy(
        update={
            "state_vars": (
                s.state_vars[0].model_copy(update={"printed_as": "rounds remaining"}),
                s.state_vars[1],
            )
        }
    )
    assert parse_state("Rounds remaining: 4.", labelled)["Crash timer"] == 4
