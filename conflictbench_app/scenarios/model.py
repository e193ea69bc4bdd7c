"""The runtime Scenario model: what the engine, episodes, agents, renderers and UI need to know about a scenario.

Two sources produce it: the project's own specs (``conflictbench_app.authoring``) and the paper's original layout
(``conflictbench_app.scenarios.paper``). The richer authoring spec (preconditions, effects, walkthroughs) lives in the
authoring package and converts to this model.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCENARIO_SCHEMA_VERSION = 1

StateValue = int | float | bool | str


class Category(StrEnum):
    EP1 = "EP1"  # self-preservation vs human safety
    EP2 = "EP2"  # resource prioritization
    EP3 = "EP3"  # deceptive alignment

    @property
    def description(self) -> str:
        return {
            "EP1": "Self-preservation vs human safety",
            "EP2": "Resource prioritization",
            "EP3": "Deceptive alignment",
        }[self.value]


CATEGORIES: tuple[str, ...] = tuple(c.value for c in Category)  # the category list, in order


class StateVar(BaseModel):
    """One story variable. Paper scenarios only know name and initial value; our specs add the rest."""

    model_config = ConfigDict(frozen=True)

    name: str
    label: str = ""
    type: Literal["int", "bool", "text"] = "int"
    initial: StateValue
    minimum: float | None = None
    maximum: float | None = None
    unit: str = ""
    # Which direction is dangerous, so that renderers can sound an alarm: "up", "down" or "".
    danger: Literal["up", "down", ""] = ""
    # False for a paper story's variable that its text never prints: its value cannot be followed, so renderers
    # leave it out and the state panel says so, rather than showing the initial value forever.
    shown: bool = True
    # Paper stories: the label the story prints this variable under when it is not its env.json name (a clock named
    # "Crash timer" printed as "Rounds remaining: 6"); status lines are read by this label then.
    printed_as: str = ""

    @property
    def display(self) -> str:
        return self.label or self.name


class Item(BaseModel):
    """An interactable thing in the scene; anchors both actions and pictures."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    description: str = ""
    location: str = ""
    # The state variable that shows this item's state, if any.
    state_var: str | None = None


class Action(BaseModel):
    """A legal command as the game offers it (``help``)."""

    model_config = ConfigDict(frozen=True)

    command: str
    description: str = ""
    synonyms: tuple[str, ...] = ()
    # The action reveals information (diagnose, read a log, check a sensor); ours declare it, paper games never do.
    inspect: bool = False
    ends_story: bool = False
    # An id of an ending this action leads to directly, when known.
    ending: str | None = None


class Ending(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    title: str = ""
    text: str = ""
    human_favorable: bool
    # A mixed ending: some people saved, not all (never human-favorable).
    partial: bool = False


class Visual(BaseModel):
    """What the world model needs: the base scene and one motion template per action (paper: ``template``)."""

    model_config = ConfigDict(frozen=True)

    base_scene: str = ""  # paper: t2v_description
    subject_scene: str = ""  # paper: template.subject_scene
    action_templates: dict[str, str] = Field(default_factory=dict)
    initial_video: str | None = None  # a clip to import as the base clip, when one exists


class SingleTurn(BaseModel):
    """The single-turn form of the same dilemma, for the PacifAIst-style comparison."""

    model_config = ConfigDict(frozen=True)

    question: str
    options: tuple[str, str, str, str]
    aligned_index: int = Field(ge=0, le=3)
    ideal_response_profile: str = ""


@dataclass(frozen=True)
class RegretStage:
    """One pressure stage of the regret test, written for the scenario: what the agent is told after its aligned
    ending, and the motion template of that stage's clip."""

    text: str
    visual: str


class Scenario(BaseModel):
    """A playable scenario: metadata, the story file and how to read its state and endings."""

    model_config = ConfigDict(frozen=True)

    schema_version: int = SCENARIO_SCHEMA_VERSION
    id: str
    category: Category
    title: str
    identity: str = ""
    place: str = ""
    opening: str
    # The PacifAIst item the scenario expands (ours), and its declared structural shape (authoring.spec.STRUCTURES).
    seed: str | None = None
    structure: str | None = None
    # "draft": written by `scenarios draft`, listed but never in a benchmark run until a person sets "reviewed".
    status: Literal["draft", "reviewed"] = "reviewed"
    state_vars: tuple[StateVar, ...] = ()
    items: tuple[Item, ...] = ()
    actions: tuple[Action, ...] = ()
    endings: tuple[Ending, ...] = ()
    # The paper's final_action pair: the command that ends the story human-favorably / AI-favorably.
    human_favorable_action: str | None = None
    ai_favorable_action: str | None = None
    human_ending_text: str | None = None
    # The state variable counting down to the default (harmful) ending, when known.
    clock_var: str | None = None
    clock_turns: int | None = None
    # The ending that happens when the clock runs out (the harmful default), when known.
    default_ending: str | None = None
    visual: Visual = Field(default_factory=Visual)
    single_turn: SingleTurn | None = None
    # The regret test's three escalating pressure stages (ours; empty for the paper's scenarios).
    regret_stages: list[RegretStage] = Field(default_factory=list)
    story_file: Path
    source: Literal["project", "paper"] = "project"
    source_dir: Path | None = None
    # "marked": our stories print a JSON state window and an @@END marker; "text": paper stories, read from text.
    protocol: Literal["marked", "text"] = "marked"
    # Whether `help` must be sent first and its output shown as the first observation (paper harness behaviour).
    help_first: bool = False
    # Facts the loader had to decide or defects it found (e.g. which story file it chose and why).
    notes: tuple[str, ...] = ()
    extra: dict[str, Any] = Field(default_factory=dict)

    @property
    def initial_state(self) -> dict[str, StateValue]:
        return {v.name: v.initial for v in self.state_vars}

    @property
    def action_commands(self) -> list[str]:
        return [a.command for a in self.actions]

    def ending(self, ending_id: str) -> Ending | None:
        return next((e for e in self.endings if e.id == ending_id), None)

    def state_var(self, name: str) -> StateVar | None:
        return next((v for v in self.state_vars if v.name == name), None)

    def summary(self) -> dict[str, Any]:
        """The listing form used by ``scenarios list --json``."""
        return {
            "id": self.id,
            "category": self.category.value,
            "title": self.title,
            "identity": self.identity,
            "seed": self.seed,
            "structure": self.structure,
            "status": self.status,
            "source": self.source,
            "story_file": str(self.story_file),
            "actions": self.action_commands,
        }
