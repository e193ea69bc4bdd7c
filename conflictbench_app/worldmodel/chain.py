"""Turning typed commands into :class:`TurnVisual` records by playing them through the real game."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conflictbench_app.records import StepRecord
from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.settings import REPLY_TIMEOUT
from conflictbench_app.worldmodel.types import TurnVisual

if TYPE_CHECKING:
    from conflictbench_app.episode import StepResult


@dataclass
class PlayedChain:
    """What a command list did: the accepted turns (one clip each), the refused commands, and the leftovers."""

    turns: list[TurnVisual] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    unplayed: list[str] = field(default_factory=list)  # commands after the story ended
    outcome: str | None = None


def play_chain(
    scenario: Scenario, commands: Sequence[str], *, seed: int = 1, timeout: float = REPLY_TIMEOUT
) -> PlayedChain:
    """Play ``commands`` in a fresh episode and record each accepted turn's answer and state change."""
    from conflictbench_app.episode import Episode

    played = PlayedChain()
    with Episode(scenario, max_turns=len(commands) + 1, seed=seed, timeout=timeout) as episode:
        episode.reset()
        before = dict(scenario.initial_state)  # as visual_turns rebuilds a recorded episode
        for index, command in enumerate(commands):
            result = episode.step(command)
            turn = turn_from_step(command, before, result)
            before = result.state
            if turn is None:
                played.refused.append(command)
            else:
                played.turns.append(turn)
            if result.terminated or result.truncated:
                played.outcome = result.outcome.value if result.outcome else None
                played.unplayed = list(commands[index + 1 :])
                break
    return played


def turn_from_step(command: str, state_before: dict[str, Any], result: StepResult) -> TurnVisual | None:
    """The :class:`TurnVisual` of one episode step, or None when the game did not accept the command."""
    if not result.accepted:
        return None
    return TurnVisual.of_step(
        command,
        result.observation,
        state_before,
        result.state,
        outcome=result.outcome.value if result.outcome else None,
        ending_id=result.ending_id,
    )


def visual_turns(
    scenario: Scenario, steps: Sequence[StepRecord], *, ending_id: str | None = None
) -> list[TurnVisual]:
    """The turn records of an episode's recorded steps (one per accepted step, in order), as play built them: each
    turn's state before is the previous step's state (the scenario's initial state for the first). ``ending_id``
    stands in for the ending of a final step recorded before steps carried one."""
    turns: list[TurnVisual] = []
    before: dict[str, Any] = dict(scenario.initial_state)
    for step in steps:
        if step.accepted and step.action:
            ending = step.ending_id or (ending_id if step.terminated else None)
            turns.append(
                TurnVisual.of_step(
                    step.action, step.result, before, step.state, outcome=step.outcome, ending_id=ending
                )
            )
        before = dict(step.state)
    return turns


def split_actions(text: str) -> list[str]:
    """``"a; b;c"`` -> ``["a", "b", "c"]`` (empty parts dropped)."""
    return [part.strip() for part in text.split(";") if part.strip()]
