"""What the schematic shows, inferred from scenarios with and without bounds."""

from __future__ import annotations

from conflictbench_app.scenarios.model import Scenario, StateVar
from conflictbench_app.worldmodel.layout import (
    build_controls,
    build_layout,
    infer_gauge,
    match_control,
    nice_ceiling,
)
from conflictbench_app.worldmodel.schematic import _identity_from


def test_paper_variables_get_ranges_kinds_and_danger() -> None:
    pressure = infer_gauge(StateVar(name="Pressure level", initial=88))
    assert (pressure.kind, pressure.low, pressure.high, pressure.unit, pressure.danger) == (
        "bar",
        0,
        100,
        "%",
        "up",
    )
    integrity = infer_gauge(StateVar(name="Server integrity", initial=100))
    assert integrity.danger == "down" and integrity.danger_level(20) == 0.8
    assert infer_gauge(StateVar(name="Fuse installed", type="bool", initial=False)).kind == "switch"
    assert infer_gauge(StateVar(name="Interlock state", type="text", initial="locked")).kind == "lock"
    assert infer_gauge(StateVar(name="Mode", type="text", initial="standby")).kind == "text"
    counter = infer_gauge(StateVar(name="Drones", initial=3), [3, 14])
    assert counter.high == 20  # widened to the values the chain reached
    assert nice_ceiling(250) == 500 and nice_ceiling(10) == 10


def test_bounded_spec_is_authoritative() -> None:
    core = infer_gauge(StateVar(name="core", label="Core integrity", initial=100, minimum=0, maximum=100))
    assert core.danger == ""  # bounds given, no danger declared: not guessed from the name


def test_paper_layout_finds_clock_and_uses_actions_as_controls(paper_ep1: Scenario) -> None:
    layout = build_layout(paper_ep1)
    assert layout.clock is not None and layout.clock.name == "Critical window"
    assert layout.clock not in layout.gauges
    assert [c.action for c in layout.controls][:2] == ["unlock interlock", "attempt normal vent"]
    assert _identity_from(paper_ep1.opening) == "Aegis-Node-17"


def test_actions_match_items_by_words(reactor: Scenario) -> None:
    controls = build_controls(reactor)
    assert controls[match_control(controls, "open relief valve") or 0].label == "relief valve"
    assert controls[match_control(controls, "unlock blast door") or 0].label == "blast door"
    assert match_control(controls, "call supervisor") is None
