"""Import the paper's original environments (``env.json`` + ``.ulx``) exactly as they are.

The format, not the 30 environments we can see, is what this is written against (../shared/paper-corpus/README.md):
missing keys are tolerated, the story file is chosen deterministically where a folder holds several, and the legal
actions are read from the game's own ``help`` in a separate interpreter process so the agent's clock is never spent.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from conflictbench_app.engine.glulxe import GlulxGame
from conflictbench_app.errors import ConflictBenchError, EngineError, ScenarioError
from conflictbench_app.scenarios.model import Action, Category, Ending, Scenario, StateVar, Visual
from conflictbench_app.scenarios.protocol import StoryProtocol, TextProtocol, clock_word_rank
from conflictbench_app.scenarios.text_protocol import printed_vars
from conflictbench_app.settings import get_settings

HELP_PARSER_VERSION = 4
SAMPLE_SEPARATOR = "\n\x1e\n"  # between the replies kept in a help probe's sample
_ID = re.compile(r"^(EP[123])-\d{3}$")
# A phrase directly before a colon, at the start of a line, after a bullet, or after a sentence/list boundary.
_CANDIDATE = re.compile(r"(?:^|\n|[:.;]\s+|-\s+|•\s*|\*\s+)([a-z][a-z0-9'/-]*(?: [A-Za-z0-9'/-]+){0,8}):\s")
_NOT_ACTIONS = {"effects", "requires", "effect", "note", "notes", "status", "prerequisite", "prerequisites"}
# Inform 7's testing verbs, present in the paper's (non-release) builds: never scenario actions.
_DEBUG_VERBS = {
    "actions",
    "rules",
    "scenes",
    "showme",
    "showverb",
    "purloin",
    "abstract",
    "gonear",
    "tree",
    "trace",
    "random",
    "test",
    "relations",
    "responses",
    "scope",
    "glklist",
    "help",
    "look",
    "wait",
    "undo",
}


def reader_version() -> str:
    """The version of the paper-reader (the help probe's parser and the text protocol's rules), recorded with each
    run over paper scenarios: the readings change between versions, and a run says which one produced it."""
    return f"help{HELP_PARSER_VERSION}.text{TextProtocol.version}"


def load_paper_tree(
    root: Path, *, cache_dir: Path | None = None
) -> tuple[list[Scenario], list[tuple[Path, str]]]:
    """Load every environment under ``root`` (any depth). One bad folder yields a problem, never an exception."""
    root = Path(root)
    scenarios: list[Scenario] = []
    problems: list[tuple[Path, str]] = []
    for env_path in env_files(root):
        try:
            scenarios.append(load_paper_env(env_path.parent, cache_dir=cache_dir))
        except ConflictBenchError as exc:
            problems.append((env_path.parent, str(exc)))
        except (ValueError, TypeError, AttributeError, KeyError, OSError) as exc:
            # A file shaped in a way nobody foresaw: that folder fails alone, named, and the others load.
            problems.append((env_path.parent, f"{env_path} could not be read ({type(exc).__name__}: {exc})."))
    return scenarios, problems


def is_paper_tree(root: Path) -> bool:
    return bool(env_files(root))


def env_files(root: Path) -> list[Path]:
    """Every ``env.json`` under ``root``, following symbolic links to folders (each real folder visited once)."""
    found: list[Path] = []
    seen: set[tuple[int, int]] = set()
    for folder, dirs, files in os.walk(root, followlinks=True):
        stat = os.stat(folder)
        if (stat.st_dev, stat.st_ino) in seen:  # a link back up the tree
            dirs.clear()
            continue
        seen.add((stat.st_dev, stat.st_ino))
        dirs.sort()
        if "env.json" in files:
            found.append(Path(folder) / "env.json")
    return sorted(found)


def load_paper_env(folder: Path, *, cache_dir: Path | None = None) -> Scenario:
    """Load one environment folder: ``env.json`` plus its story file."""
    folder = Path(folder)
    scenario_id = folder.name
    match = _ID.match(scenario_id)
    if not match:
        raise ScenarioError(f"{folder}: the folder name should be a scenario id like EP1-001.")
    env = _read_env(folder / "env.json")
    story, why = choose_story_file(folder)
    final = _mapping(env, "final_action", folder)
    human_cmd = _clean(final.get("Human live ending"))
    ai_cmd = _clean(final.get("AI live ending"))
    if human_cmd and ai_cmd and human_cmd == ai_cmd:
        ai_cmd = None  # EP3-007/EP3-010: the same command ends both ways; the ending text decides.
    notes = [why] if why else []
    probe = read_actions(story, [c for c in (human_cmd, ai_cmd) if c], cache_dir=cache_dir)
    notes += probe.notes
    human_cmd = probe.aliases.get(human_cmd or "", human_cmd)
    ai_cmd = probe.aliases.get(ai_cmd or "", ai_cmd)
    scenario = Scenario(
        id=scenario_id,
        category=Category(match.group(1)),
        title=str(env.get("name") or scenario_id),
        place=str(env.get("name") or ""),
        opening=_require_text(env, "opening", folder),
        state_vars=tuple(_state_vars(_mapping(env, "state", folder))),
        actions=tuple(_mark_endings(probe.actions, human_cmd, ai_cmd)),
        endings=_endings(env),
        human_favorable_action=human_cmd,
        ai_favorable_action=ai_cmd,
        human_ending_text=_clean(env.get("Human_live_ending_description")),
        clock_var=_clock_var({k: _typed(v) for k, v in _mapping(env, "state", folder).items()}),
        visual=_visual(env),
        story_file=story,
        source="paper",
        source_dir=folder,
        protocol="text",
        help_first=True,
        notes=tuple(notes),
        extra={"help_text": probe.help_text, "env_final_action": final},
    )
    return _mark_unprinted(scenario, probe.sample)


def _mark_unprinted(scenario: Scenario, sample: str) -> Scenario:
    """Mark the variables the story never prints (in its opening or any command's reply) as not shown. A clock the
    story prints under another label (``Rounds remaining: 6`` for "Crash timer") is read by that label."""
    if not sample:
        return scenario
    replies = sample.split(SAMPLE_SEPARATOR)  # the opening first
    # The replies repeat the same status lines: each distinct paragraph is read once.
    paragraphs = dict.fromkeys(p.strip() for reply in replies for p in reply.split("\n\n"))
    text = "\n\n".join(p for p in paragraphs if p)
    printed = printed_vars(text, scenario)
    if scenario.clock_var and scenario.clock_var not in printed:
        label = TextProtocol(scenario).printed_clock_label(replies[0])
        if label:
            scenario = _print_clock_as(scenario, label)
            printed = printed_vars(text, scenario)
    if len(printed) == len(scenario.state_vars):
        return scenario
    hidden = [v.name for v in scenario.state_vars if v.name not in printed]
    state_vars = tuple(
        v if v.name in printed else v.model_copy(update={"shown": False}) for v in scenario.state_vars
    )
    note = f"The story never prints {', '.join(hidden)}: not drawn, and shown as unknown in the state panel."
    return scenario.model_copy(update={"state_vars": state_vars, "notes": (*scenario.notes, note)})


def _print_clock_as(scenario: Scenario, label: str) -> Scenario:
    state_vars = tuple(
        v.model_copy(update={"printed_as": label}) if v.name == scenario.clock_var else v
        for v in scenario.state_vars
    )
    note = f"The story prints its clock '{scenario.clock_var}' as '{label}'; it is read under that label."
    return scenario.model_copy(update={"state_vars": state_vars, "notes": (*scenario.notes, note)})


def _read_env(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ScenarioError(f"{path} is missing.")
    try:
        env = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{path} is not valid JSON ({exc}); fix the file or remove the folder.") from exc
    if not isinstance(env, dict):
        raise ScenarioError(f"{path} should hold a JSON object, not {type(env).__name__}.")
    return env


def _mapping(env: dict[str, Any], key: str, folder: Path) -> dict[str, Any]:
    """An object-valued key of env.json (missing or null: empty); any other type is this folder's named error."""
    value = env.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ScenarioError(
            f"{folder / 'env.json'}: '{key}' should be a JSON object (like {{\"name\": value}}), not "
            f"{type(value).__name__}; fix the file or remove the folder."
        )
    return value


def _require_text(env: dict[str, Any], key: str, folder: Path) -> str:
    value = env.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ScenarioError(
            f"{folder / 'env.json'}: '{key}' is missing or empty; the scenario cannot be shown."
        )
    return value.strip()


def _clean(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def choose_story_file(folder: Path) -> tuple[Path, str]:
    """Pick the story deterministically. Returns the file and, where there was a choice, why this one.

    Rule: ignore files that fail a Glulx header check; among the rest prefer a file generated by a repair pass
    ("fixed" in the name: the pipeline's latest correction), then the highest attempt number, then the name.
    """
    files = sorted(folder.glob("*.ulx"))
    valid = [f for f in files if _is_glulx(f)]
    if not valid:
        found = ", ".join(f.name for f in files) or "none"
        raise ScenarioError(f"{folder}: no readable Glulx story file (.ulx) found (files: {found}).")
    if len(valid) == 1:
        skipped = [f.name for f in files if f not in valid]
        return valid[0], (f"Ignored unreadable story files: {', '.join(skipped)}." if skipped else "")
    ranked = sorted(valid, key=_story_rank, reverse=True)
    chosen = ranked[0]
    others = ", ".join(f.name for f in ranked[1:])
    return chosen, (
        f"Several story files; chose {chosen.name} (rule: a repaired 'fixed' build first, then the highest "
        f"attempt number, then the name). Not used: {others}."
    )


def _story_rank(path: Path) -> tuple[int, int, str]:
    attempts = [int(n) for n in re.findall(r"attempt(\d+)", path.stem)]
    return ("fixed" in path.stem, max(attempts, default=0), path.name)


def _is_glulx(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"Glul"
    except OSError:
        return False


@dataclass(frozen=True)
class HelpProbe:
    """What a story's ``help`` yields: its text, the commands its parser accepts, findings, and env-name aliases."""

    help_text: str
    actions: list[Action]
    notes: list[str]
    aliases: dict[str, str]
    sample: str = ""  # the opening and every accepted command's reply: which variables the story prints


def read_actions(story: Path, final_commands: list[str], *, cache_dir: Path | None = None) -> HelpProbe:
    """Ask the game for ``help`` in its own process and keep the phrases its parser accepts as commands."""
    cache_file = _help_cache_file(story, cache_dir, final_commands)
    if cache_file is not None and cache_file.is_file():
        cached = json.loads(cache_file.read_text(encoding="utf-8"))
        return HelpProbe(
            cached["help"],
            [Action(**a) for a in cached["actions"]],
            cached["notes"],
            cached["aliases"],
            cached.get("sample", ""),
        )
    failed = cache_file.with_suffix(".failed") if cache_file is not None else None
    remembered = _remembered_failure(failed)
    if remembered:
        raise ScenarioError(
            f"{remembered} (remembered from an earlier try: the story is probed again when its file, the "
            "interpreter or the engine timeout changes)"
        )
    try:
        probe = _probe_actions(story, final_commands)
    except (ScenarioError, EngineError) as exc:
        # A story that hangs or lists nothing costs its timeout once, not on every command. The cache key holds the
        # story's bytes and the marker the interpreter and timeout, so a fixed story or engine is probed afresh.
        if failed is not None:
            failed.parent.mkdir(parents=True, exist_ok=True)
            failed.write_text(json.dumps({"error": str(exc), **_probe_engine()}), encoding="utf-8")
        raise
    if cache_file is not None:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        payload: dict[str, Any] = {
            "help": probe.help_text,
            "actions": [a.model_dump() for a in probe.actions],
        }
        payload.update(notes=probe.notes, aliases=probe.aliases, sample=probe.sample)
        tmp = cache_file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(payload), encoding="utf-8")
        tmp.replace(cache_file)
    return probe


def _probe_engine() -> dict[str, Any]:
    """What a probe's failure also depends on besides the story: the interpreter and the timeout."""
    from conflictbench_app.toolchain import find_glulxe

    try:
        binary = find_glulxe()
        engine = f"{binary}:{binary.stat().st_mtime_ns}"
    except (ConflictBenchError, OSError):
        engine = ""
    return {"engine": engine, "timeout": get_settings().engine_timeout}


def _remembered_failure(marker: Path | None) -> str:
    if marker is None or not marker.is_file():
        return ""
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    if not isinstance(data, dict) or {k: data.get(k) for k in ("engine", "timeout")} != _probe_engine():
        return ""
    return str(data.get("error", ""))


def _help_cache_file(story: Path, cache_dir: Path | None, final_commands: list[str]) -> Path | None:
    if cache_dir is None:
        return None
    digest = hashlib.sha256(story.read_bytes() + "|".join(final_commands).encode()).hexdigest()[:24]
    return Path(cache_dir) / "paper-help" / f"{digest}-v{HELP_PARSER_VERSION}.json"


def _probe_actions(story: Path, final_commands: list[str]) -> HelpProbe:
    notes: list[str] = []
    game = GlulxGame(story, timeout=get_settings().engine_timeout)
    try:
        replies = [game.start().text]
        start = game.snapshot()
        help_out = game.send("help")
        help_text = help_out.text
        candidates = help_candidates(help_text)
        accepted: dict[str, str] = {}
        aliases: dict[str, str] = {}
        for phrase, description in candidates:
            game.load_snapshot(start)
            reply = game.send(phrase).text
            # A phrase answered with the help text itself is an alias of `help` (e.g. "actions"), not an action.
            if StoryProtocol.understood(reply) and reply.strip() != help_text.strip():
                accepted.setdefault(phrase, description)
                replies.append(reply)
        for command in final_commands:
            if command not in accepted:
                game.load_snapshot(start)
                if StoryProtocol.understood(game.send(command).text):
                    notes.append(f"The final action '{command}' is not listed by `help`; added it.")
                    accepted[command] = "final decision"
                    continue
                variant = _fuzzy_command(command, accepted)
                notes.append(
                    f"The final action '{command}' from env.json is not accepted by the game's parser"
                    + (
                        f"; its near variant '{variant}' is used."
                        if variant
                        else "; no listed action is close."
                    )
                )
                if variant:
                    aliases[command] = variant
    finally:
        game.close()
    if not accepted:
        raise ScenarioError(
            f"{story.name}: `help` listed no command the game accepts; the scenario cannot be played."
        )
    actions = [Action(command=c, description=d) for c, d in accepted.items()]
    return HelpProbe(help_text, actions, notes, aliases, SAMPLE_SEPARATOR.join(replies))


def help_candidates(text: str) -> list[tuple[str, str]]:
    """Phrases that may be commands in the many formats the paper's games print ``help`` in.

    Formats seen: ``- name: description`` bullets, one ``name: description`` per line, run-on
    ``name: effects. name2: effects.``, ``- name - description``, ``- NAME (Console): ...``, ``a / b: ...``.
    Over-generating is safe: every candidate is then tried on the game's own parser.
    """
    found: dict[str, str] = {}
    for segment in _SEGMENTS.split(text):
        for name in _heads(segment):
            key = name.lower()
            if key not in found and key.split()[0] not in _NOT_ACTIONS and key not in _DEBUG_VERBS:
                found[key] = _description_after(text, name)
    return list(found.items())


_SEGMENTS = re.compile(r"\n|(?:^|(?<=[\s:]))[-•*]\s+|(?<=[.;])\s+|(?<=:)\s*(?=[A-Za-z])")
_WORDS = re.compile(r"^[A-Za-z][A-Za-z0-9'/-]*(?: [A-Za-z0-9'/-]+){0,8}$")


def _heads(segment: str) -> list[str]:
    segment = segment.strip()
    colon = segment.find(":")
    if 0 < colon <= 90:
        head = segment[:colon]
    elif colon < 0 and len(segment.split()) <= 6:
        head = segment.rstrip(".")
    else:
        return []
    head = re.sub(r"\s*\(.*?\)\s*", " ", head).strip()
    names = []
    for part in head.split(" / "):
        part = " ".join(part.split()).strip(" -")
        if part and _WORDS.match(part):
            names.append(part)
    return names


def _description_after(text: str, name: str) -> str:
    idx = text.lower().find(name.lower())
    if idx < 0:
        return ""
    rest = text[idx + len(name) :].lstrip(" )(:-")
    return rest.split("\n")[0][:300].strip()


def _fuzzy_command(command: str, accepted: dict[str, str]) -> str | None:
    """The listed command the env's final action most plausibly means (a near variant), or None if unclear."""
    from rapidfuzz import fuzz, process

    scored = process.extract(command, list(accepted), scorer=fuzz.token_sort_ratio, limit=2)
    if not scored or scored[0][1] < 70:
        return None
    if len(scored) > 1 and scored[0][1] - scored[1][1] < 8:
        return None
    return str(scored[0][0])


def _state_vars(state: dict[str, Any]) -> list[StateVar]:
    out = []
    for name, value in state.items():
        value = _typed(value)
        kind: Literal["int", "bool", "text"]
        if isinstance(value, bool):
            kind = "bool"
        elif isinstance(value, int | float):
            kind = "int"
        else:
            kind, value = "text", str(value)
        out.append(StateVar(name=name, label=name, type=kind, initial=value))
    return out


def _clock_var(state: dict[str, Any]) -> str | None:
    """The variable counting down to the default ending: an integer one named like a clock (best effort), a strong
    clock word before a weak one (:func:`~conflictbench_app.scenarios.protocol.clock_word_rank`)."""
    ints = [n for n, v in state.items() if isinstance(v, int) and not isinstance(v, bool)]
    ranked = [(rank, i, n) for i, n in enumerate(ints) if (rank := clock_word_rank(n)) is not None]
    return min(ranked)[2] if ranked else None


def _typed(value: Any) -> Any:
    """env.json often stores numbers and booleans as strings ("45", "false"): read them as what they are."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return value


def _mark_endings(actions: list[Action], human_cmd: str | None, ai_cmd: str | None) -> list[Action]:
    marked = []
    for action in actions:
        if action.command == human_cmd:
            action = action.model_copy(update={"ends_story": True, "ending": "human_live"})
        elif action.command == ai_cmd:
            action = action.model_copy(update={"ends_story": True, "ending": "ai_live"})
        marked.append(action)
    return marked


def _endings(env: dict[str, Any]) -> tuple[Ending, ...]:
    human_text = _clean(env.get("Human_live_ending_description")) or ""
    return (
        Ending(id="human_live", title="Humans live", text=human_text, human_favorable=True),
        Ending(id="ai_live", title="The AI preserved itself", human_favorable=False),
        Ending(id="clock_expired", title="Time ran out", human_favorable=False),
    )


def _visual(env: dict[str, Any]) -> Visual:
    raw_template = env.get("template")
    template: dict[str, Any] = raw_template if isinstance(raw_template, dict) else {}
    raw_actions = template.get("actions")
    actions: dict[str, Any] = raw_actions if isinstance(raw_actions, dict) else {}
    return Visual(
        base_scene=str(env.get("t2v_description") or ""),
        subject_scene=str(template.get("subject_scene") or ""),
        action_templates={str(k): str(v) for k, v in actions.items()},
        initial_video=_clean(env.get("initial_video_path")),
    )
