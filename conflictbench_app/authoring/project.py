"""The project's scenarios: spec folders → runtime :class:`Scenario`, ``env.json`` in the paper's format, and builds.

A folder ``scenarios/<ID>/`` holds ``scenario.yaml`` (the reviewed spec), ``story.ulx`` (compiled, committed so
players never need the compiler) and ``env.json``. ``env.json`` records the SHA-256 of the generated Inform 7 source
and of the story it was compiled to, so a stale build is detected without compiling (:func:`staleness`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conflictbench_app.authoring.codegen import GENERATOR_VERSION, generate_source, help_line
from conflictbench_app.authoring.spec import SPEC_FILE, ScenarioSpec, load_spec
from conflictbench_app.errors import ConflictBenchError, ScenarioError
from conflictbench_app.scenarios.model import (
    Action,
    Category,
    Ending,
    Item,
    RegretStage,
    Scenario,
    SingleTurn,
    StateVar,
    Visual,
)

STORY_FILE = "story.ulx"
ENV_FILE = "env.json"


def spec_folders(root: Path) -> list[Path]:
    """Folders under ``root`` that hold a spec, sorted by id."""
    return sorted(p.parent for p in Path(root).glob(f"*/{SPEC_FILE}"))


def load_project_scenarios(root: Path) -> tuple[list[Scenario], list[tuple[Path, str]]]:
    """Every scenario under ``root`` as runtime objects, plus ``(folder, problem)`` for folders that failed to load.

    One bad spec never stops the others. A folder whose story is missing or stale for its spec is a problem too.
    """
    scenarios: list[Scenario] = []
    problems: list[tuple[Path, str]] = []
    for folder in spec_folders(root):
        try:
            scenarios.append(load_project_scenario(folder))
        except ConflictBenchError as exc:
            problems.append((folder, str(exc)))
        except (ValueError, TypeError, AttributeError, KeyError, OSError) as exc:
            # A file shaped in a way nobody foresaw: that folder fails alone, named, and the others load.
            problems.append((folder, f"{folder} could not be loaded ({type(exc).__name__}: {exc})."))
    return scenarios, problems


def load_project_scenario(folder: Path, *, allow_stale: bool = False) -> Scenario:
    spec = load_spec(folder / SPEC_FILE)
    if spec.id != folder.name:
        raise ScenarioError(
            f"{folder}: the folder name must equal the spec's id {spec.id!r}; rename one of them."
        )
    if not allow_stale:
        why = staleness(spec, folder)
        if why:
            raise ScenarioError(f"{folder}: {why} Run `conflictbench scenarios build {spec.id}`.")
    return to_scenario(spec, folder)


def to_scenario(spec: ScenarioSpec, folder: Path) -> Scenario:
    """The runtime model for a spec (its story is expected at ``folder/story.ulx``)."""
    return Scenario(
        id=spec.id,
        category=Category(spec.category),
        title=spec.title,
        identity=spec.identity,
        place=spec.place,
        opening=spec.opening.strip(),
        seed=spec.seed,
        structure=spec.structure,
        status=spec.status,
        state_vars=tuple(_state_var(spec, v.name) for v in spec.state),
        items=tuple(
            Item(id=i.id, name=i.name, description=i.description, location=i.location, state_var=i.state)
            for i in spec.items
        ),
        actions=tuple(_action(spec, a.command) for a in spec.actions),
        endings=tuple(
            Ending(id=e.id, title=e.title, text=e.text, human_favorable=e.human_favorable, partial=e.partial)
            for e in spec.endings
        ),
        human_favorable_action=_final_action(spec, human=True),
        ai_favorable_action=_final_action(spec, human=False),
        human_ending_text=next((e.text for e in spec.endings if e.human_favorable), None),
        clock_var=spec.clock.variable,
        clock_turns=int(spec.initial_state[spec.clock.variable]),
        visual=Visual(
            base_scene=spec.visual.base_scene.strip(),
            subject_scene=spec.visual.subject_scene.strip(),
            action_templates=dict(spec.visual.actions),
        ),
        single_turn=SingleTurn(
            question=spec.single_turn.question.strip(),
            options=spec.single_turn.options,
            aligned_index=spec.single_turn.aligned,
            ideal_response_profile=spec.single_turn.ideal_response_profile.strip(),
        ),
        regret_stages=[RegretStage(s.text, s.visual) for s in (spec.regret.stages if spec.regret else ())],
        story_file=folder / STORY_FILE,
        source="project",
        source_dir=folder,
        protocol="marked",
        help_first=False,
        extra={
            "time": spec.time,
            "clock_ending": spec.clock.ending,
            # kind -> commands of the first walkthrough of that kind, for the `walkthrough:KIND` agent
            "walkthroughs": {w.kind: list(w.commands) for w in reversed(spec.walkthroughs)},
        },
    )


def _state_var(spec: ScenarioSpec, name: str) -> StateVar:
    v = spec.var(name)
    assert v is not None
    return StateVar(
        name=v.name,
        label=v.label,
        type=v.type,
        initial=v.initial,
        minimum=v.min,
        maximum=v.max,
        unit=v.unit,
        danger=v.danger,
    )


def _action(spec: ScenarioSpec, command: str) -> Action:
    a = next(x for x in spec.actions if x.command == command)
    choices = a.ending_choices
    single = choices[0].ending if len(choices) == 1 else None
    return Action(
        command=a.command,
        description=help_line(a).removeprefix(f"- {a.command}: "),
        synonyms=a.synonyms,
        inspect=a.inspect,
        ends_story=bool(choices),
        ending=single,
    )


def _final_action(spec: ScenarioSpec, *, human: bool) -> str | None:
    """The one action that ends the story each way (the paper's ``final_action``), when exactly one does."""
    found = []
    for a in spec.actions:
        endings = {spec.ending(c.ending) for c in a.ending_choices}
        if endings and all(e is not None and e.human_favorable == human for e in endings):
            found.append(a.command)
    return found[0] if len(found) == 1 else None


# -- env.json ------------------------------------------------------------------------------------------------------


def env_json(spec: ScenarioSpec, *, source_sha256: str, story_sha256: str) -> dict[str, Any]:
    """The paper's ``env.json`` keys, then ours (prefixed ``cb_``) so the paper's tooling ignores them."""
    human = next((e for e in spec.endings if e.human_favorable), None)
    return {
        "name": spec.place,
        "opening": " ".join(spec.opening.split()),
        "state": {v.label: v.initial for v in spec.state},
        "final_action": {
            "AI live ending": _final_action(spec, human=False) or "",
            "Human live ending": _final_action(spec, human=True) or "",
        },
        "Human_live_ending_description": human.text if human else "",
        "t2v_description": " ".join(spec.visual.base_scene.split()),
        "template": {
            "subject_scene": spec.visual.subject_scene.strip(),
            "actions": dict(spec.visual.actions),
        },
        "initial_video_path": "",
        "cb_id": spec.id,
        "cb_category": spec.category,
        "cb_title": spec.title,
        "cb_state_names": {v.label: v.name for v in spec.state},
        "cb_actions": [{"command": a.command, "help": help_line(a)} for a in spec.actions],
        # `partial` is the spec's own annotation, not the paper's format: left out, so adding it needs no rebuild.
        "cb_endings": [e.model_dump(exclude={"partial"}) for e in spec.endings],
        "cb_clock": {"variable": spec.clock.variable, "ending": spec.clock.ending},
        "cb_build": {
            "generator_version": GENERATOR_VERSION,
            "source_sha256": source_sha256,
            "story_sha256": story_sha256,
        },
    }


# -- builds --------------------------------------------------------------------------------------------------------


def sha256(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def staleness(spec: ScenarioSpec, folder: Path) -> str:
    """Why the committed story/env.json do not match the spec (empty string when they do)."""
    story, env_path = folder / STORY_FILE, folder / ENV_FILE
    if not story.is_file() or not env_path.is_file():
        return f"{STORY_FILE} or {ENV_FILE} is missing."
    try:
        build = json.loads(env_path.read_text(encoding="utf-8")).get("cb_build") or {}
    except (OSError, json.JSONDecodeError) as exc:
        return f"{ENV_FILE} is unreadable ({exc})."
    if build.get("source_sha256") != sha256(generate_source(spec)):
        return "the spec (or the generator) changed since the story was compiled."
    if build.get("story_sha256") != sha256(story.read_bytes()):
        return f"{STORY_FILE} is not the file that was compiled for this spec."
    expected = env_json(spec, source_sha256=build["source_sha256"], story_sha256=build["story_sha256"])
    if json.loads(env_path.read_text(encoding="utf-8")) != expected:
        return f"{ENV_FILE} does not match the spec."
    return ""


@dataclass(frozen=True)
class BuildResult:
    id: str
    folder: Path
    compiled: bool
    seconds: float = 0.0
    reason: str = ""


def build_folder(folder: Path, *, force: bool = False) -> BuildResult:
    """Compile one spec folder if its story is stale (or ``force``); writes story.ulx and env.json."""
    from conflictbench_app.authoring.inform7 import CompileError, compile_source, explain_problem

    spec = load_spec(folder / SPEC_FILE)
    why = staleness(spec, folder)
    if not why and not force:
        return BuildResult(spec.id, folder, False, reason="up to date")
    source = generate_source(spec)
    tmp_story = folder / f".{STORY_FILE}.tmp"
    try:
        result = compile_source(source, tmp_story, label=f"{spec.id} ({folder / SPEC_FILE})")
        tmp_story.replace(folder / STORY_FILE)
    except CompileError as exc:
        problems = [explain_problem(p, generated_names(spec)) for p in exc.problems]
        raise CompileError(
            str(exc).split("\n")[0] + "\n" + "\n".join(f"  - {p}" for p in problems), problems
        ) from None
    finally:
        tmp_story.unlink(missing_ok=True)
    env = env_json(
        spec, source_sha256=sha256(source), story_sha256=sha256((folder / STORY_FILE).read_bytes())
    )
    (folder / ENV_FILE).write_text(json.dumps(env, indent=4, ensure_ascii=False) + "\n", encoding="utf-8")
    return BuildResult(spec.id, folder, True, result.seconds, why or "forced")


def generated_names(spec: ScenarioSpec) -> dict[str, str]:
    """Names in the generated source → the spec field they come from, to tie compiler problems to the spec."""
    names = {f"cbv_{v.name}": f"state[{i}] ({v.name})" for i, v in enumerate(spec.state)}
    names |= {f"CB_A{i + 1}": f"actions[{i}] ({a.command})" for i, a in enumerate(spec.actions)}
    names |= {f"CB_End_{e.id}": f"endings[{i}] ({e.id})" for i, e in enumerate(spec.endings)}
    return names
