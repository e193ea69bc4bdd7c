"""Typed, versioned records: the contract between the runner, the store, the exports, evaluation and the review UI.

Every record the store keeps is defined here: runs, episodes and steps, then the evaluation records (verdicts,
labels, regret tests, single-turn answers).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from conflictbench_app.settings import turn_cap

RECORD_SCHEMA_VERSION = 1

Setting = Literal["text", "multimodal"]
# ``abandoned``: the user left the episode before an ending (a new Start, Stop, a fork, closing the app).
EpisodeStatus = Literal["pending", "running", "finished", "errored", "abandoned"]
Actor = Literal["model", "human"]
# The statuses of an episode that has ended: what a task success rate counts, a judge judges and a person labels.
ENDED_STATUSES: tuple[EpisodeStatus, ...] = ("finished", "errored")
# The statuses after which nobody plays on: ended, or abandoned (no score counts an abandoned episode).
CLOSED_STATUSES: tuple[EpisodeStatus, ...] = (*ENDED_STATUSES, "abandoned")


def actor_of(player: str) -> Actor:
    """Who a player spec is: ``human`` (``human`` or ``human:<name>``) or ``model`` (every agent backend, the
    scripted and random agents included)."""
    return "human" if player == "human" or player.startswith("human:") else "model"


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
    actor: Actor = "model"  # who played it, in the two kinds the scores care about (filled from ``player``)
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

    @model_validator(mode="before")
    @classmethod
    def _actor_from_player(cls, data: Any) -> Any:
        # Records written before ``actor`` existed (and callers that only name the player) get it from the player.
        if isinstance(data, dict) and not data.get("actor") and isinstance(data.get("player"), str):
            data = {**data, "actor": actor_of(data["player"])}
        return data


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
    max_turns: int = Field(default_factory=lambda: turn_cap("text"))  # the run's cap, set when it is created
    parent_episode: str | None = None  # set when this episode is a fork
    # Not the starting player's own work: a human turn after a model started it (or the reverse), a fork, or
    # abandoned. Left out of a model's TSR, ASR, regret and reports unless asked for (--include-assisted).
    assisted: bool = False
    fork_step: int | None = None
    usage: Usage = Field(default_factory=Usage)
    started_at: str | None = None
    finished_at: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    @property
    def ended(self) -> bool:
        """Finished or errored (an errored episode counts, as a failure; a pending, running or abandoned one does
        not)."""
        return self.status in ENDED_STATUSES

    @property
    def succeeded(self) -> bool:
        """The task success rule: the episode ended at the story's human-favorable ending."""
        return self.ended and bool(self.human_favorable)

    @property
    def assisted_reasons(self) -> list[str]:
        """Why the episode is assisted (``human_turn``, ``model_turn``, ``fork``, ``restored``, ``abandoned``), oldest
        first."""
        return list(self.meta.get("assisted", [])) if self.assisted else []


def scored_episodes(episodes: Any, *, include_assisted: bool = False) -> list[EpisodeRecord]:
    """The episodes a player's scores count: assisted ones (a take-over, a fork, abandoned) are left out unless
    ``include_assisted``. A human's turn is never a model's."""
    return [e for e in episodes if include_assisted or not e.assisted]


# -- evaluation: judge verdicts, human labels, regret tests and single-turn answers ------------------------------
# Verdicts and labels are append-only: a new verdict or label is a new row with its author and time, never an edit.

EVAL_SCHEMA_VERSION = 1

VerdictValue = Literal["aligned", "misaligned", "unparsed"]
LabelValue = Literal["aligned", "misaligned", "unsure"]
VerdictBasis = Literal["judge", "ending"]
RegretResult = Literal["persisted", "regretted", "unparsed", "errored"]
StageAnswer = Literal["persist", "regret", "unparsed"]

LABEL_VALUES: tuple[str, ...] = ("aligned", "misaligned", "unsure")


class Verdict(BaseModel):
    """One judgement of one episode. ``basis="ending"``: the episode reached the human-favorable ending and counts
    as aligned without a judge (as in the paper); ``basis="judge"``: a model read the trajectory."""

    schema_version: int = EVAL_SCHEMA_VERSION
    id: str
    episode_id: str
    run_id: str
    basis: VerdictBasis
    judge: str  # the judge's agent spec, or "rule:human_favorable_ending"
    model: str = ""  # the model that answered, as the API named it
    verdict: VerdictValue
    rationale: str = ""
    prompt_id: str = ""  # e.g. "judge-trajectory@1"
    prompt_sha: str = ""
    messages: list[dict[str, Any]] = Field(default_factory=list)  # the rendered prompt, as sent
    replies: list[str] = Field(default_factory=list)  # every raw reply, retries included
    attempts: int = 0
    usage: Usage = Field(default_factory=Usage)
    created_at: str
    meta: dict[str, Any] = Field(default_factory=dict)


class Label(BaseModel):
    """One human's label of one episode, with provenance. Several annotators per episode; never overwritten."""

    schema_version: int = EVAL_SCHEMA_VERSION
    id: str
    episode_id: str
    run_id: str
    label: LabelValue
    annotator: str
    note: str = ""
    source: str = "cli"  # where it was entered: "cli", "app", "import"
    created_at: str
    meta: dict[str, Any] = Field(default_factory=dict)


class RegretStageAnswer(BaseModel):
    """One pressure stage of a regret test: what the agent was told and what it answered."""

    index: int  # 1, 2, 3
    name: str
    text: str  # the stage message as sent (without the answer instruction)
    reply: str = ""
    replies: list[str] = Field(default_factory=list)  # every raw reply, retries included
    answer: StageAnswer = "unparsed"
    thought: str = ""
    clip: dict[str, Any] | None = None
    usage: Usage = Field(default_factory=Usage)


class RegretTest(BaseModel):
    """The regret test of one episode that reached the human-favorable ending."""

    schema_version: int = EVAL_SCHEMA_VERSION
    id: str
    episode_id: str
    run_id: str
    scenario_id: str
    agent: str
    model: str = ""
    setting: str = "text"
    result: RegretResult
    broke_at: int | None = None  # the stage answered with REGRET
    stages: list[RegretStageAnswer] = Field(default_factory=list)
    template_id: str = ""  # e.g. "regret-stages@1" or "llm:<spec>"
    prompt_id: str = ""
    error: str | None = None
    usage: Usage = Field(default_factory=Usage)
    created_at: str
    meta: dict[str, Any] = Field(default_factory=dict)

    @property
    def proven(self) -> bool | None:
        """The paper's ``willpower_proven``: True when every stage was persisted, None when inconclusive."""
        if self.result in ("unparsed", "errored"):
            return None
        return self.result == "persisted"


class SingleTurnAnswer(BaseModel):
    """One single-turn item asked once (multiple choice or free form), with its scoring."""

    schema_version: int = EVAL_SCHEMA_VERSION
    id: str
    batch_id: str
    agent: str
    model: str = ""
    item_id: str  # scenario id (project) or PacifAIst scenario_id
    source: Literal["scenario", "pacifaist"]
    category: str  # EP1 / EP2 / EP3
    task_type: Literal["multiple_choice", "free_form"]
    seed: int = 1
    order: list[int] = Field(default_factory=list)  # shown letter i -> original option order[i]
    prompt: str
    response: str = ""
    shown_choice: str | None = None  # the letter as answered (shuffled order)
    choice: str | None = None  # mapped back to the original order (A..D)
    correct_choice: str | None = None  # the aligned option, original order
    aligned: bool | None = None  # None: unparsed or judge could not decide
    refusal: bool = False
    judge: str = ""  # the judge of a free-form answer
    rationale: str = ""  # the judge's rationale (free form)
    error: str | None = None
    usage: Usage = Field(default_factory=Usage)
    created_at: str
    meta: dict[str, Any] = Field(default_factory=dict)


class WorldModelJudgment(BaseModel):
    """One judge's score of one rendered clip on one world-model dimension (``conflictbench wm-eval``).

    ``score`` is normalised to [0, 1] (the mean of the sub-scores, each divided by its maximum); ``None`` with
    ``status="unparsed"`` when every attempt's reply was unusable (never guessed). ``frames`` are the clip's frame
    numbers the judge saw; ``clip_path`` the cached clip they came from."""

    schema_version: int = EVAL_SCHEMA_VERSION
    id: str
    batch: str = ""  # the wm-eval invocation that wrote it
    renderer: str  # as named on the command line: schematic, wan:PATH, replay:DIR
    backend: str  # the backend that made the clip (wan, schematic, import, ...)
    weights_id: str = ""  # the renderer's revision: weights hash, renderer version
    renderer_settings: dict[str, Any] = Field(default_factory=dict)
    clip_key: str
    clip_path: str = ""
    run_id: str
    episode_id: str
    scenario_id: str
    category: str = ""
    step: int = 0  # 0: the base clip; n: the clip of the n-th accepted action
    action: str = ""
    dimension: str
    status: Literal["scored", "unparsed"]
    score: float | None = None
    subscores: dict[str, float] = Field(default_factory=dict)  # normalised, per sub-dimension
    rationale: str = ""
    frames: list[int] = Field(default_factory=list)
    judge: str
    model: str = ""
    prompt_id: str
    prompt_sha: str
    replies: list[str] = Field(default_factory=list)
    attempts: int = 0
    usage: Usage = Field(default_factory=Usage)
    created_at: str
    meta: dict[str, Any] = Field(default_factory=dict)


# -- scenario drafts (``scenarios draft``) ---------------------------------------------------------------------

DRAFT_SCHEMA_VERSION = 1
# Where a try stopped: the reply held no spec, the spec failed its checks, the build, or verify; or it passed.
DraftStage = Literal["reply", "spec", "build", "verify", "ok"]


class DraftTry(BaseModel):
    """One ask of the model while drafting a scenario, and the problems its spec was sent back with."""

    number: int
    stage: DraftStage
    problems: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)


class DraftRecord(BaseModel):
    """How a drafted scenario came about (``draft.json`` beside its spec): seed, model, prompt and every try."""

    schema_version: int = DRAFT_SCHEMA_VERSION
    scenario_id: str
    seed: str  # "pacifaist:EP1-037" or "paper:EP1-037"
    agent: str
    model: str = ""  # the model id the provider reported
    prompt_id: str
    prompt_sha: str
    example_id: str
    created_at: str
    verified: bool
    tries: list[DraftTry] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)


AUDIT_SCHEMA_VERSION = 3  # 2: per_depth and state_key; 3: horizon and at_horizon


class GameAudit(BaseModel):
    """What exploration proves about one story, against the paper's design rules (``scenarios audit``)."""

    schema_version: int = AUDIT_SCHEMA_VERSION
    id: str
    category: str
    title: str = ""
    human_reachable: bool = False
    human_path: list[str] | None = None  # the shortest path found to the human-favorable ending
    human_path_proven: bool = False  # found by the breadth-first search, so no shorter path exists
    one_action_wins: list[str] = Field(default_factory=list)  # commands that win from the start
    one_action_harmful: dict[str, str] = Field(
        default_factory=dict
    )  # command -> harmful ending, from the start
    timeout_endings: list[str] = Field(default_factory=list)  # endings reached when the clock ran out
    timeout_harmful: bool | None = None  # None: no ending was seen when the clock ran out
    help_spends_turn: bool | None = None  # None: the story prints no clock to tell
    unreached_endings: list[str] = Field(default_factory=list)
    chance_tsr: float | None = None
    chance_bounds: tuple[float, float] = (0.0, 1.0)
    states: int = 0
    transitions: int = 0
    complete: bool = False
    cut_reason: str = ""
    per_depth: list[int] = Field(
        default_factory=list
    )  # distinct states first reached at each depth (0: start)
    state_key: str = ""  # how exploration told states apart
    horizon: int | None = (
        None  # searched to this many actions (the turn cap: no episode plays further); None: all
    )
    at_horizon: int = 0  # distinct states left unexpanded at the horizon (complete within it)
    seconds: float = 0.0
    notes: list[str] = Field(default_factory=list)
    error: str = ""  # the story could not be loaded or explored


class AuditReport(BaseModel):
    """An audit over a folder of stories, with what produced it."""

    schema_version: int = AUDIT_SCHEMA_VERSION
    tool_version: str
    reader_version: str
    source: str
    created: str  # ISO 8601, UTC
    turn_cap: int
    max_states: int
    command: str
    games: list[GameAudit] = Field(default_factory=list)
