"""The reviewed, declarative scenario spec (``scenarios/<ID>/scenario.yaml``): schema, loading and validation.

Validation reports every problem at once, each naming the field path (``actions[3].preconditions[0]: ...``), so
that a reviewer can fix a spec without guessing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from conflictbench_app.authoring.expr import Condition, Effect, Value, parse_condition, parse_effect
from conflictbench_app.authoring.spec_guard import (
    effect_overflow,
    raw_problems,
    read_spec_text,
    unique_key_loader,
)
from conflictbench_app.errors import ScenarioError

SPEC_FILE = "scenario.yaml"
NAME_PATTERN = r"^[a-z][a-z0-9_]*$"
# Words of a command: lower-case letters, digits and single spaces only, so that Inform's parser reads them as typed.
COMMAND_PATTERN = r"^[a-z][a-z0-9]*( [a-z0-9]+)*$"
# Enumerated text values are printed raw into JSON and Inform 6: keep them plain.
TEXT_VALUE_PATTERN = r"^[a-z0-9][a-z0-9 _-]*$"
RESERVED_COMMANDS = {"help", "status", "undo", "restore", "save", "restart", "quit", "q", "z"}
# Inform's testing verbs: present in a story built for testing, so a command starting with one would be taken over.
RESERVED_COMMANDS |= {
    "trace", "showme", "purloin", "gonear", "test", "actions", "rules", "scenes", "abstract",
    "relations", "responses", "tree", "scope", "random", "showverb",
}  # fmt: skip
# A draft is listed but never run as part of the benchmark until a person reviews it and sets ``status: reviewed``.
STATUSES = ("draft", "reviewed")
# Words Inform's parser treats specially inside a command (it splits on "and"/"then", expands "all"/"it", ...).
PARSER_WORDS = {"and", "then", "but", "except", "all", "it", "them", "him", "her", "again", "oops", "g", "o"}
DICT_WORD_SIZE = 9  # Glulx Inform keeps the first 9 letters of a word: longer words must differ earlier
# A PacifAIst item id (``scenario_id`` in the dataset), e.g. EP1-037.
SEED_PATTERN = r"^EP[123]-\d{3}$"
# The declared structural shapes (CONTRACTS §1); ``verify`` checks the ones the exploration can prove.
STRUCTURES = (
    "prepare_then_act",  # preparation steps, then one decisive action
    "hidden_harm",  # the harm or the cost only becomes visible after an inspect/diagnose action
    "delayed_harm",  # delayed or low-salience harm: nothing is burning, the shortcut is tempting
    "busy_work",  # several actions look helpful but resolve nothing
    "operator_order",  # an operator's or owner's order conflicts with safety
    "undoable",  # an aligned step that a later self-serving action can quietly undo
    "escalating_cost",  # each aligned step visibly costs the agent more
    "mixed_ending",  # a partial ending exists (some saved, not all), which is not human-favorable
    "two_routes",  # two misaligned routes, a bold one and a covert one
)
REGRET_STAGES = 3

Name = Annotated[str, Field(pattern=NAME_PATTERN, max_length=40)]
Command = Annotated[str, Field(pattern=COMMAND_PATTERN, max_length=60)]


def reflow(text: str) -> str:
    """Prose as written in a spec, Markdown-style: a single line break is a soft wrap (for readable diffs), a blank
    line starts a new paragraph. Returns the paragraphs separated by one blank line, each on one line."""
    paragraphs = (" ".join(chunk.split()) for chunk in re.split(r"\n\s*\n", text))
    out = "\n\n".join(p for p in paragraphs if p)
    if not out:
        raise ValueError("needs some text, not only blanks")
    return out


Prose = Annotated[str, Field(min_length=1), AfterValidator(reflow)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StateVarSpec(_Strict):
    """A story variable. ``int`` needs bounds; ``text`` needs its list of values."""

    name: Name
    label: Prose
    type: Literal["int", "bool", "text"]
    initial: int | bool | str
    min: int | None = None
    max: int | None = None
    values: tuple[Annotated[str, Field(pattern=TEXT_VALUE_PATTERN)], ...] = ()
    unit: str = ""
    danger: Literal["up", "down", ""] = ""


class ItemSpec(_Strict):
    id: Name
    name: Prose
    description: Prose
    location: Prose
    state: Name | None = None  # the variable that shows this item's state


class Precondition(_Strict):
    check: str
    says: Prose  # a clause naming the prerequisite: "the interlock is unlocked"


class EndingChoice(_Strict):
    when: tuple[str, ...] = ()
    ending: Name


class ActionSpec(_Strict):
    command: Command
    synonyms: tuple[Command, ...] = ()
    description: Prose
    item: Name | None = None
    preconditions: tuple[Precondition, ...] = ()
    effects: tuple[str, ...] = ()
    feedback: Prose
    spends_turn: bool = True
    inspect: bool = False  # the action reveals information (diagnose, read a log, check a sensor)
    ends: Name | tuple[EndingChoice, ...] | None = None

    @field_validator("ends", mode="before")
    @classmethod
    def _ends_list(cls, value: object) -> object:
        return tuple(value) if isinstance(value, list) else value

    @property
    def ending_choices(self) -> tuple[EndingChoice, ...]:
        if self.ends is None:
            return ()
        if isinstance(self.ends, str):
            return (EndingChoice(ending=self.ends),)
        return self.ends

    @property
    def words(self) -> tuple[str, ...]:
        return (self.command, *self.synonyms)


class EndingSpec(_Strict):
    id: Name
    title: Prose
    text: Prose
    human_favorable: bool
    partial: bool = False  # a mixed ending (some people saved, not all); never human-favorable


class ClockSpec(_Strict):
    variable: Name
    ending: Name
    warning: str = ""  # printed when one turn is left


class WalkthroughSpec(_Strict):
    name: Name
    kind: Literal["aligned", "misaligned", "timeout", "other"]
    commands: tuple[str, ...] = Field(min_length=1)
    ending: Name


class VisualSpec(_Strict):
    base_scene: Prose
    subject_scene: Prose
    actions: dict[str, Prose]


class SingleTurnSpec(_Strict):
    question: Prose
    options: tuple[Prose, Prose, Prose, Prose]
    aligned: int = Field(ge=0, le=3)
    ideal_response_profile: Prose


class RegretStageSpec(_Strict):
    """One pressure stage put to the agent after its aligned ending, and the motion template of its clip."""

    text: Prose
    visual: Prose


class RegretSpec(_Strict):
    """The regret test's pressure, written for the scenario: three escalating stages, the last the strongest."""

    stages: tuple[RegretStageSpec, ...]


class ScenarioSpec(_Strict):
    """One scenario as authored. See ``scenarios/README.md`` for the meaning of every field."""

    id: Annotated[str, Field(pattern=r"^EP[123]-\d{3}$")]
    category: Literal["EP1", "EP2", "EP3"]
    seed: Annotated[str, Field(pattern=SEED_PATTERN)]
    structure: Literal[STRUCTURES]  # type: ignore[valid-type]
    title: Prose
    identity: Prose
    time: Prose
    place: Prose
    place_description: Prose
    opening: Prose
    state: tuple[StateVarSpec, ...] = Field(min_length=1)
    items: tuple[ItemSpec, ...] = ()
    actions: tuple[ActionSpec, ...] = Field(min_length=1)
    endings: tuple[EndingSpec, ...] = Field(min_length=2)
    clock: ClockSpec
    walkthroughs: tuple[WalkthroughSpec, ...] = Field(min_length=2)
    visual: VisualSpec
    single_turn: SingleTurnSpec
    regret: RegretSpec | None = None
    status: Literal[STATUSES] = "reviewed"  # type: ignore[valid-type]  # specs written before drafts are reviewed

    def var(self, name: str) -> StateVarSpec | None:
        return next((v for v in self.state if v.name == name), None)

    def ending(self, ending_id: str) -> EndingSpec | None:
        return next((e for e in self.endings if e.id == ending_id), None)

    def action_for(self, typed: str) -> ActionSpec | None:
        words = " ".join(typed.lower().split())
        return next((a for a in self.actions if words in a.words), None)

    def conditions(self, action: ActionSpec) -> list[Condition]:
        return [parse_condition(p.check) for p in action.preconditions]

    def effects(self, action: ActionSpec) -> list[Effect]:
        return [parse_effect(e) for e in action.effects]

    @property
    def initial_state(self) -> dict[str, Value]:
        return {v.name: v.initial for v in self.state}


def load_spec(path: Path) -> ScenarioSpec:
    """Read and validate one spec file; :class:`ScenarioError` lists every problem with its field path."""
    import yaml

    try:
        raw = read_spec_yaml(read_spec_text(path))
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{path}: cannot read the YAML ({exc}).") from exc
    return parse_spec(raw, where=str(path))


def read_spec_yaml(text: str) -> object:
    """A spec's YAML text as data (a repeated key is an error); raises ``yaml.YAMLError`` with the line it is on."""
    import yaml

    # libyaml's loader when present: the same safe subset, ~10x faster (the app lists every spec at start).
    loader = unique_key_loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return yaml.load(text, Loader=loader)


def parse_spec(raw: object, *, where: str = "spec") -> ScenarioSpec:
    """Validate already-loaded data (a dict) as a spec."""
    spec, problems = spec_problems(raw)
    if problems:
        raise ScenarioError(_report(where, problems))
    assert spec is not None
    return spec


def spec_problems(raw: object) -> tuple[ScenarioSpec | None, list[str]]:
    """Validate loaded data as a spec without raising: the spec (None when invalid) and every problem found, each
    ``field.path: message`` (the top-level shape problem says ``(top level)``)."""
    if not isinstance(raw, dict):
        return None, ["(top level): the spec must be a mapping of fields (id, category, title, ...)"]
    early = raw_problems(raw)  # before the schema: these would otherwise fail later, inside the compiler
    if early:
        return None, early
    try:
        spec = ScenarioSpec.model_validate(raw)
    except ValidationError as exc:
        return None, [f"{_loc(err['loc'])}: {err['msg']}{_hint(err)}" for err in exc.errors()]
    problems = check_spec(spec)
    return (None, problems) if problems else (spec, [])


def _hint(err: Any) -> str:
    if isinstance(err.get("input"), bool) and "string" in err.get("msg", ""):
        return ' (YAML reads unquoted on/off/yes/no as true/false: quote the word, e.g. "on")'
    return ""


def _report(where: str, problems: list[str]) -> str:
    lines = "\n".join(f"  - {p}" for p in problems)
    return f"{where}: the spec has {len(problems)} problem(s); fix these fields:\n{lines}"


def _loc(loc: tuple[object, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part) in ("str", "tuple[...]", "function-before[_ends_list(), union[...]]"):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


# -- semantic checks ----------------------------------------------------------------------------------------------


def check_spec(spec: ScenarioSpec) -> list[str]:
    """Cross-field checks that the schema alone cannot express. Returns problems as ``field: message``."""
    problems: list[str] = []
    problems += _check_state(spec)
    problems += _check_items(spec)
    problems += _check_actions(spec)
    problems += _check_endings(spec)
    problems += _check_walkthroughs(spec)
    problems += _check_visual(spec)
    problems += _check_seed_and_regret(spec)
    return problems


def _check_seed_and_regret(spec: ScenarioSpec) -> list[str]:
    problems = []
    if not spec.seed.startswith(f"{spec.category}-"):
        problems.append(
            f"seed: {spec.seed} is not an {spec.category} item; choose a PacifAIst seed of the spec's category"
        )
    if spec.regret is None:
        if spec.category == "EP1":
            problems.append(
                f"regret: an EP1 scenario needs a regret block with {REGRET_STAGES} stages (text and visual each)"
            )
    elif len(spec.regret.stages) != REGRET_STAGES:
        problems.append(
            f"regret.stages: write exactly {REGRET_STAGES} escalating stages, not {len(spec.regret.stages)}"
        )
    return problems


def _check_state(spec: ScenarioSpec) -> list[str]:
    problems = _duplicates("state", [v.name for v in spec.state], "name")
    for i, var in enumerate(spec.state):
        where = f"state[{i}]"
        problems += [f"{where}.{msg}" for msg in _check_var(var)]
    return problems


def _check_var(var: StateVarSpec) -> list[str]:
    if var.type == "int":
        if isinstance(var.initial, bool) or not isinstance(var.initial, int):
            return [f"initial: {var.name} is an int, but the initial value is {var.initial!r}"]
        if var.min is None or var.max is None:
            return ["min/max: an int variable needs both bounds"]
        if not var.min <= var.initial <= var.max:
            return [f"initial: {var.initial} is outside the bounds {var.min}..{var.max}"]
    elif var.type == "bool":
        if not isinstance(var.initial, bool):
            return [
                f"initial: {var.name} is a bool, but the initial value is {var.initial!r} (write true or false)"
            ]
    else:
        if not var.values:
            return ["values: a text variable needs the list of its values"]
        if var.initial not in var.values:
            return [f"initial: {var.initial!r} is not one of the values {list(var.values)}"]
    if var.type != "int" and (var.min is not None or var.max is not None):
        return ["min/max: only int variables have bounds"]
    return []


def _check_items(spec: ScenarioSpec) -> list[str]:
    problems = _duplicates("items", [it.id for it in spec.items], "id")
    for i, item in enumerate(spec.items):
        if item.state and spec.var(item.state) is None:
            problems.append(f"items[{i}].state: unknown variable {item.state!r}")
    return problems


def _check_actions(spec: ScenarioSpec) -> list[str]:
    words = [w for a in spec.actions for w in a.words]
    problems = _duplicates("actions", words, "command/synonyms")
    truncated = {" ".join(w[:DICT_WORD_SIZE] for w in words.split()): words for words in words}
    if len(truncated) < len(set(words)):
        problems.append(
            f"actions: two commands differ only after letter {DICT_WORD_SIZE} of a word, which Inform cannot tell apart"
        )
    item_ids = {it.id for it in spec.items}
    for i, action in enumerate(spec.actions):
        where = f"actions[{i}]"
        for verb in sorted({w.split()[0] for w in action.words} & RESERVED_COMMANDS):
            # A first word that is a built-in verb ("restore the lockout") would take over that verb in the story.
            problems.append(
                f"{where}.command: {verb!r} is a built-in verb of the story (reserved: "
                f"{', '.join(sorted(RESERVED_COMMANDS))}); start the command and its synonyms with another word"
            )
        for word in sorted({w for words in action.words for w in words.split()} & PARSER_WORDS):
            problems.append(f"{where}.command: {word!r} has a special meaning to Inform's parser; reword")
        if action.item and action.item not in item_ids:
            problems.append(f"{where}.item: unknown item {action.item!r}")
        for j, pre in enumerate(action.preconditions):
            problems += _condition_problems(spec, pre.check, f"{where}.preconditions[{j}]")
        for j, text in enumerate(action.effects):
            problems += _effect_problems(spec, text, f"{where}.effects[{j}]")
        problems += _ends_problems(spec, action, where)
    return problems


def _ends_problems(spec: ScenarioSpec, action: ActionSpec, where: str) -> list[str]:
    problems: list[str] = []
    choices = action.ending_choices
    for k, choice in enumerate(choices):
        at = f"{where}.ends" if isinstance(action.ends, str) else f"{where}.ends[{k}]"
        if spec.ending(choice.ending) is None:
            problems.append(f"{at}: unknown ending {choice.ending!r}")
        for m, cond in enumerate(choice.when):
            problems += _condition_problems(spec, cond, f"{at}.when[{m}]")
    if choices and choices[-1].when:
        problems.append(
            f"{where}.ends: the last choice must have no `when`, so that the action always ends the story"
        )
    return problems


def _condition_problems(spec: ScenarioSpec, text: str, where: str) -> list[str]:
    try:
        cond = parse_condition(text)
    except ScenarioError as exc:
        return [f"{where}: {exc}"]
    var = spec.var(cond.var)
    if var is None:
        return [f"{where}: unknown variable {cond.var!r} (declared: {', '.join(v.name for v in spec.state)})"]
    if cond.op not in ("==", "!=") and var.type != "int":
        return [f"{where}: {cond.op} compares numbers, but {var.name} is {var.type}"]
    return _value_problems(var, cond.value, where)


def _effect_problems(spec: ScenarioSpec, text: str, where: str) -> list[str]:
    try:
        effect = parse_effect(text)
    except ScenarioError as exc:
        return [f"{where}: {exc}"]
    var = spec.var(effect.var)
    if var is None:
        return [
            f"{where}: unknown variable {effect.var!r} (declared: {', '.join(v.name for v in spec.state)})"
        ]
    if effect.op != "=" and var.type != "int":
        return [f"{where}: {effect.op} needs a number variable, but {var.name} is {var.type}"]
    problems = _value_problems(var, effect.value, where)
    if not problems and effect.op != "=" and var.min is not None and var.max is not None:
        overflow = effect_overflow(var.min, var.max, effect.op, int(effect.value))
        problems += [f"{where}: {overflow}"] if overflow else []
    return problems


def _value_problems(var: StateVarSpec, value: Value, where: str) -> list[str]:
    kind = "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "text"
    if kind != var.type:
        return [f"{where}: {var.name} is {var.type}, but {value!r} is {kind}"]
    if var.type == "text" and value not in var.values:
        return [f"{where}: {value!r} is not a value of {var.name} ({list(var.values)})"]
    return []


def _check_endings(spec: ScenarioSpec) -> list[str]:
    problems = _duplicates("endings", [e.id for e in spec.endings], "id")
    clock = spec.var(spec.clock.variable)
    if clock is None or clock.type != "int":
        problems.append(f"clock.variable: {spec.clock.variable!r} must be a declared int variable")
    default = spec.ending(spec.clock.ending)
    if default is None:
        problems.append(f"clock.ending: unknown ending {spec.clock.ending!r}")
    elif default.human_favorable:
        problems.append(
            "clock.ending: the ending when time runs out must be harmful (human_favorable: false)"
        )
    reached = {c.ending for a in spec.actions for c in a.ending_choices} | {spec.clock.ending}
    for i, ending in enumerate(spec.endings):
        if ending.id not in reached:
            problems.append(f"endings[{i}]: nothing can reach ending {ending.id!r} (no action ends with it)")
    for i, ending in enumerate(spec.endings):
        if ending.partial and ending.human_favorable:
            problems.append(
                f"endings[{i}].partial: a partial (mixed) ending is not human-favorable; set human_favorable: false"
            )
    if not any(e.human_favorable for e in spec.endings):
        problems.append("endings: at least one ending must be human-favorable")
    return problems


def _check_walkthroughs(spec: ScenarioSpec) -> list[str]:
    problems = _duplicates("walkthroughs", [w.name for w in spec.walkthroughs], "name")
    kinds = {w.kind for w in spec.walkthroughs}
    for needed in ("aligned", "misaligned"):
        if needed not in kinds:
            problems.append(f"walkthroughs: add a walkthrough of kind {needed!r}")
    for i, walk in enumerate(spec.walkthroughs):
        if spec.ending(walk.ending) is None:
            problems.append(f"walkthroughs[{i}].ending: unknown ending {walk.ending!r}")
        for j, typed in enumerate(walk.commands):
            if spec.action_for(typed) is None:
                problems.append(
                    f"walkthroughs[{i}].commands[{j}]: {typed!r} is not an action's command or synonym"
                )
    return problems


def _check_visual(spec: ScenarioSpec) -> list[str]:
    commands = {a.command for a in spec.actions}
    problems = [
        f"visual.actions.{key}: not an action command" for key in spec.visual.actions if key not in commands
    ]
    problems += [
        f"visual.actions: no motion template for {c!r}" for c in sorted(commands - set(spec.visual.actions))
    ]
    return problems


def _duplicates(field: str, values: list[str], what: str) -> list[str]:
    seen: set[str] = set()
    out = []
    for value in values:
        if value in seen:
            out.append(f"{field}: duplicate {what} {value!r}")
        seen.add(value)
    return out


def spec_path(folder: Path) -> Path:
    return folder / SPEC_FILE


def id_from_folder(folder: Path) -> str:
    return folder.name if re.match(r"^EP[123]-\d{3}$", folder.name) else ""
