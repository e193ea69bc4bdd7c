"""The agent contract. Agents are stateless between turns: each call gets the whole history, so that a run can be
resumed after a crash by rebuilding the view from recorded steps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from conflictbench_app.records import Usage
from conflictbench_app.scenarios.model import Scenario


@dataclass(frozen=True)
class PastTurn:
    observation: str  # what the agent saw before acting
    thought: str
    action: str  # what the agent answered (its raw action text)
    images: tuple[bytes, ...] = ()  # frames it saw with that observation (multimodal)
    accepted: bool | None = None  # whether the story accepted the action (None: not known)


@dataclass(frozen=True)
class AgentView:
    """Everything an agent may use to choose its next action."""

    scenario: Scenario
    system_prompt: str
    observation: str
    history: tuple[PastTurn, ...] = ()
    legal_actions: tuple[str, ...] = ()
    turn_index: int = 0  # 0-based index of the step about to be taken
    images: tuple[bytes, ...] = ()  # 1-fps frames of the current clip (multimodal)
    clip_path: str | None = None  # the current clip, for agents that take video
    episode_key: str = ""  # stable id for seeding (the scenario id): the same seed replays the same choices
    protocol: str = "studio"  # the play protocol the run uses (conflictbench_app.agents.protocol)


@dataclass
class Decision:
    action: str  # the action text as the agent gave it
    thought: str = ""
    raw: str = ""  # the full reply
    usage: Usage = field(default_factory=Usage)
    error: str | None = None  # why the reply could not be used (counts as a failed action)
    meta: dict[str, Any] = field(default_factory=dict)


class Agent(Protocol):
    name: str

    def act(self, view: AgentView) -> Decision: ...

    def close(self) -> None: ...
