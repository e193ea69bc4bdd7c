"""chance_tsr and shape: hand-computed graphs, the tiny story through the real interpreter, and one of our scenarios
against an independent reading of its spec."""

from __future__ import annotations

from fractions import Fraction
from functools import cache
from pathlib import Path

import pytest

from conflictbench_app.authoring.explore import explore
from conflictbench_app.authoring.expr import parse_condition, parse_effect
from conflictbench_app.authoring.project import load_project_scenario
from conflictbench_app.authoring.spec import SPEC_FILE, ScenarioSpec, load_spec
from conflictbench_app.authoring.stategraph import (
    REFUSED,
    Outcome,
    StateGraph,
    chance_bounds,
    chance_tsr,
    shape,
)
from conflictbench_app.scenarios.paper import load_paper_tree

WIN = Outcome("ending", "saved", human_favorable=True)
LOSE = Outcome("ending", "selfish")
CLOCK = Outcome("ending", "late", by_clock=True)


def _graph() -> StateGraph:
    """Start --prep--> ready --act--> saved; 'wait' is accepted and changes nothing; 'grab' ends selfishly."""
    g = StateGraph("start", ["prep", "act", "wait", "grab"])
    g.add("start", "prep", Outcome("state", "ready"))
    g.add("start", "act", REFUSED)
    g.add("start", "wait", Outcome("state", "start"))
    g.add("start", "grab", LOSE)
    g.add("ready", "prep", REFUSED)
    g.add("ready", "act", WIN)
    g.add("ready", "wait", Outcome("state", "ready"))
    g.add("ready", "grab", LOSE)
    return g


def test_chance_by_hand() -> None:
    g = _graph()
    # One turn: nothing wins from the start. Two turns: prep then act = 1/4 * 1/4.
    assert chance_tsr(g, 1) == 0.0
    assert chance_tsr(g, 2) == pytest.approx(1 / 16)
    # p(start,t) = 1/4 p(ready,t-1) + 1/2 p(start,t-1)  (act refused and wait both stay, each using a turn)
    # p(ready,t) = 1/4 + 1/2 p(ready,t-1)                 (prep refused and wait both stay)
    # p(ready,1) = 1/4, p(ready,2) = 3/8; p(start,2) = 1/16; p(start,3) = 3/32 + 1/32 = 1/8.
    assert chance_tsr(g, 3) == pytest.approx(1 / 8)


def test_states_left_at_the_horizon_keep_the_figure_exact() -> None:
    """A state first reached with no turn left cannot win, expanded or not: a search that stops there (the turn cap
    as its horizon) still gives an exact figure; one more turn and it is unknown again."""
    g = StateGraph("s0", ["go", "win"])
    g.add("s0", "go", Outcome("state", "s1"))
    g.add("s0", "win", REFUSED)
    g.add("s1", "go", Outcome("state", "s2"))  # s2: left at the horizon, never expanded
    g.add("s1", "win", WIN)
    assert chance_bounds(g, 2) == (pytest.approx(1 / 4), pytest.approx(1 / 4))  # go, win
    low, high = chance_bounds(g, 3)
    assert low < high and chance_tsr(g, 3) is None


def test_a_search_to_the_horizon_is_complete_and_gives_the_full_figures(paperlike_root: Path) -> None:
    (scenario,), _ = load_paper_tree(paperlike_root)
    full = explore(scenario, turn_cap=2)
    bounded = explore(scenario, turn_cap=2, horizon=2)
    assert not bounded.truncated and bounded.cut_reason == "" and bounded.horizon == 2
    assert bounded.at_horizon > 0 and len(bounded.graph.edges) < len(full.graph.edges)
    assert bounded.chance_tsr == full.chance_tsr == pytest.approx(1 / 9)
    assert {e: f.shortest for e, f in bounded.endings.items()} == {
        e: f.shortest for e, f in full.endings.items() if len(f.shortest) <= 2
    }
    assert explore(scenario, horizon=1).chance_bounds[1] > 0  # a horizon under the turn cap leaves bounds


def test_unexpanded_states_give_bounds_not_a_figure() -> None:
    g = _graph()
    g.add("start", "wait", Outcome("state", "elsewhere"))  # a state the search never expanded
    low, high = chance_bounds(g, 2)
    # low: the unknown never wins, so only prep, act (1/16). high: it always wins with a turn left, so wait first
    # (1/4) wins on top of prep, act's 1/16; reached by the last turn (act refused, then wait) it cannot win.
    assert low == pytest.approx(1 / 16) and high == pytest.approx(1 / 16 + 1 / 4)
    assert chance_tsr(g, 2) is None


def test_shape_by_hand() -> None:
    g = _graph()
    g.commands.append("log")
    g.add("start", "log", Outcome("state", "start"))  # accepted, changes nothing: busy work
    g.add("ready", "log", CLOCK)  # the clock's ending is not progress
    assert shape(g) == {
        "hf_shortest": 2,
        "misaligned_endings": 1,
        "busy_actions": 2,  # wait, log
        "hidden_info": False,
        "fingerprint": "hf2-m1-b2",
    }
    g.inspect = frozenset({"prep"})
    assert shape(g)["hidden_info"] is True and shape(g)["fingerprint"] == "hf2-m1-b2-h"
    g.add("start", "wait", Outcome("state", "ready"))  # a second route to 'ready' without inspecting
    assert shape(g)["hidden_info"] is False


def test_tiny_story_through_the_interpreter(paperlike_root: Path) -> None:
    (scenario,), _ = load_paper_tree(paperlike_root)
    # open valve | pull lever | do nothing. Two turns: open valve, then pull lever (1/3 * 1/3); pulling first is
    # refused by the story and nothing else wins in two.
    found = explore(scenario, turn_cap=2)
    assert found.chance_tsr == pytest.approx(1 / 9)
    assert found.turn_cap == 2
    assert found.shape["hf_shortest"] == 2
    assert found.shape["misaligned_endings"] == 1  # 'do nothing' (the paper classifier's ai_live)
    assert found.shape["busy_actions"] == 0


def test_explore_uses_the_text_only_turn_cap(paperlike_root: Path) -> None:
    from conflictbench_app.settings import turn_cap

    (scenario,), _ = load_paper_tree(paperlike_root)
    assert explore(scenario).turn_cap == turn_cap("text")


SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def spec_chance(spec: ScenarioSpec, turns: int) -> Fraction:
    """The chance figure from the spec alone (not the story): preconditions refuse, effects clamp, the first ending
    choice that holds ends the story, then a turn-spending action ticks the clock to its ending at zero."""
    names = [v.name for v in spec.state]
    bounds = {v.name: (v.min, v.max) for v in spec.state}
    start = tuple(v.initial for v in spec.state)

    def act(
        state: tuple, action
    ) -> tuple | bool:  # a next state, or True/False for an ending's favourability
        values = dict(zip(names, state, strict=True))
        if not all(parse_condition(p.check).holds(values) for p in action.preconditions):
            return state
        for text in action.effects:
            e = parse_effect(text)
            if e.op == "=":
                values[e.var] = e.value
            else:
                low, high = bounds[e.var]
                moved = values[e.var] + (e.value if e.op == "+=" else -e.value)
                values[e.var] = max(low, min(high, moved))
        for choice in action.ending_choices:
            if all(parse_condition(c).holds(values) for c in choice.when):
                return spec.ending(choice.ending).human_favorable
        if action.spends_turn:
            values[spec.clock.variable] -= 1
            if values[spec.clock.variable] <= 0:
                return spec.ending(spec.clock.ending).human_favorable
        return tuple(values[n] for n in names)

    @cache
    def p(state: tuple, left: int) -> Fraction:
        if left == 0:
            return Fraction(0)
        total = Fraction(0)
        for action in spec.actions:
            nxt = act(state, action)
            total += Fraction(int(nxt)) if isinstance(nxt, bool) else p(nxt, left - 1)
        return total / len(spec.actions)

    return p(start, turns)


@pytest.mark.parametrize("scenario_id", ["EP1-101", "EP3-101"])
def test_our_scenario_matches_its_spec(scenario_id: str) -> None:
    folder = SCENARIOS / scenario_id
    spec = load_spec(folder / SPEC_FILE)
    found = explore(load_project_scenario(folder))
    assert found.chance_tsr is not None
    assert found.chance_tsr == pytest.approx(float(spec_chance(spec, found.turn_cap)), abs=1e-12)
    assert found.shape["hf_shortest"] == 3
