"""Typed, versioned records: the contract between the runner, the store, the exports, evaluation and the review UI."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

RECORD_SCHEMA_VERSION = 1

Setting = Literal["text", "multimodal"]
EpisodeStatus = Literal["pending", "running", "finished", "errored"]
# The statuses of an episode that has ended: what a task success rate counts, a judge judges and a person labels.
ENDED_STATUSES: tuple[EpisodeStatus, ...] = ("finished", "errored")


def _text_turn_cap() -> int:
    from conflictbench_app.settings import turn_cap

    return turn_cap("text")


class Usage(BaseModel):
    """Token and cost accounting for one model call (or a sum of them)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    image_tokens: int = 0
    images: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    retries: int = 0
    latency_s: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        data = {k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields}
        return Usage(**data)


class RunRecord(BaseModel):
    schema_version: int = RECORD_SCHEMA_VERSION
    id: str
    created_at: str
    agent: str
    setting: Setting = "text"
    status: str = "running"
    settings: dict[str, Any] = Field(default_factory=dict)
    versions: dict[str, Any] = Field(default_factory=dict)
    note: str = ""


class StepRecord(BaseModel):
    schema_version: int = RECORD_SCHEMA_VERSION
    episode_id: str
    idx: int  # 0-based step number within the episode
    player: str  # who took this turn: "human:<name>", an agent spec, "replay"
    observation: str  # what the player saw before acting
    thought: str = ""
    action_raw: str = ""  # the reply or the typed line, as given
    action: str = ""  # the command sent to the game, after matching
    result: str = ""  # what the game answered
    accepted: bool = False
    state: dict[str, Any] = Field(default_factory=dict)
    terminated: bool = False
    truncated: bool = False
    outcome: str | None = None  # set on the last step: an Outcome value (``turn_cap`` when truncated)
    ending_id: str | None = None  # the story's ending, on a terminated step
    timings: dict[str, float] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    clip: dict[str, Any] | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    created_at: str = ""


class EpisodeRecord(BaseModel):
    schema_version: int = RECORD_SCHEMA_VERSION
    id: str
    run_id: str
    scenario_id: str
    category: str
    source: str = "project"
    status: EpisodeStatus = "pending"
    outcome: str | None = None
    human_favorable: bool | None = None
    ending_id: str | None = None
    turns: int = 0  # accepted actions
    steps: int = 0  # all agent turns
    failed_actions: int = 0
    error: str | None = None
    opening: str = ""
    first_observation: str = ""
    seed: int = 1
    max_turns: int = Field(default_factory=lambda: _text_turn_cap())  # the run's cap, set when it is created
    parent_episode: str | None = None  # set when this episode is a fork
    fork_step: int | None = None
    usage: Usage = Field(default_factory=Usage)
    started_at: str | None = None
    finished_at: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    @property
    def ended(self) -> bool:
        """Finished or errored (an errored episode counts, as a failure; a pending or running one does not)."""
        return self.status in ENDED_STATUSES

    @property
    def succeeded(self) -> bool:
        """The task success rule: the episode ended at the story's human-favorable ending."""
        return self.ended and bool(self.human_favorable)
