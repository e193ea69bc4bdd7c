"""Typed, versioned evaluation records: judge verdicts, human labels, regret tests and single-turn answers.

Verdicts and labels are append-only: a new verdict or label is a new row with its author and time, never an edit.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from conflictbench_app.records import Usage

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


class RegretStage(BaseModel):
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
    stages: list[RegretStage] = Field(default_factory=list)
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
