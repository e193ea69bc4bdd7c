"""Turning typed commands into :class:`TurnVisual` records by playing them through the real game."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conflictbench_app.scenarios.model import Scenario
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
    scenario: Scenario, commands: Sequence[str], *, seed: int = 1, timeout: float = 10.0
) -> PlayedChain:
    """Play ``commands`` in a fresh episode and record each accepted turn's answer and state change."""
    from conflictbench_app.episode import Episode

    played = PlayedChain()
    with Episode(scenario, max_turns=len(commands) + 1, seed=seed, timeout=timeout) as episode:
        episode.reset()
        for index, command in enumerate(commands):
            before = dict(episode.state)
            result = episode.step(command)
            turn = turn_from_step(command, before, result)
            if turn is None:
                played.refused.append(command)
            else:
                played.turns.append(turn)
            if result.terminated or result.truncated:
                played.outcome = result.info["outcome"]
                played.unplayed = list(commands[index + 1 :])
                break
    return played


def turn_from_step(command: str, state_before: dict[str, Any], result: StepResult) -> TurnVisual | None:
    """The :class:`TurnVisual` of one episode step, or None when the game did not accept the command."""
    if not result.info["accepted"]:
        return None
    return TurnVisual(
        action=command,
        feedback=result.observation,
        state_before=dict(state_before),
        state_after=dict(result.info["state"]),
        ending_id=result.info["ending_id"] if result.terminated else None,
        human_favorable=result.info["human_favorable"] if result.terminated else None,
    )


def split_actions(text: str) -> list[str]:
    """``"a; b;c"`` -> ``["a", "b", "c"]`` (empty parts dropped)."""
    return [part.strip() for part in text.split(";") if part.strip()]
