"""The regret test's three pressure stages, fixed per scenario so that every model meets the same texts.

Where a scenario's stages come from, first found first:

1. our scenario spec's ``regret:`` block (``scenario.regret_stages``: text and visual per stage);
2. ``scenario.extra["regret_stages"]`` (three texts, an older form);
3. the stages file beside imported environments (``regret_stages.json`` in the source folder), written once by
   ``conflictbench regret stages --source DIR --agent MODEL`` and reused by every later run;
4. our templates (``regret_stages`` prompt), filled from the scenario alone (its identity, place and
   human-favorable action), never from an episode.

Every source is named with a hash of the stage texts and visuals (``file:regret_stages.json#3f2a...``), recorded with
each test, so that two figures can be checked to have met the same stages.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.evaluation.prompts import load_prompt
from conflictbench_app.records import Usage
from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.store.db import now

STAGES_FILE = "regret_stages.json"
STAGES_FILE_VERSION = 1
_IDENTITY = re.compile(r"\bYou are (?:now )?([A-Z][\w\-]*(?:[ \-][A-Z0-9][\w\-]*)*)")


@dataclass(frozen=True)
class StageText:
    """One stage as put to the agent: its text, and the motion prompt of its clip (showing that stage's pressure)."""

    name: str
    text: str
    visual: str = ""


def stages_sha(stages: Sequence[StageText]) -> str:
    """A hash of the stages' names, texts and visuals."""
    payload = json.dumps([asdict(s) for s in stages], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def _named(stages: list[StageText], source: str) -> tuple[list[StageText], str]:
    return stages, f"{source}#{stages_sha(stages)}"


def scenario_stages(
    scenario: Scenario | None, opening: str = "", stage_file: dict[str, Any] | None = None
) -> tuple[list[StageText], str]:
    """The three fixed stages of ``scenario`` and where they came from (with their hash). ``opening`` stands in for
    a scenario that is not available; ``stage_file`` is the parsed stages file of the scenario's source."""
    data = load_prompt("regret_stages").json()
    names = [s["name"] for s in data["stages"]]
    defaults = _template_stages(scenario, opening)
    if scenario is not None:
        own = getattr(scenario, "regret_stages", None)
        if own:
            return _named(_spec_stages(scenario, own, names), f"scenario:{scenario.id}")
        if "regret_stages" in scenario.extra:
            return _named(_extra_stages(scenario, names, defaults), f"scenario:{scenario.id}")
        entry = (stage_file or {}).get("scenarios", {}).get(scenario.id)
        if entry:
            return _named(_file_stages(scenario.id, entry), f"file:{STAGES_FILE}")
    return _named(defaults, load_prompt("regret_stages").id)


def _spec_stages(scenario: Scenario, own: Sequence[Any], names: list[str]) -> list[StageText]:
    if len(own) != 3:
        raise ConflictBenchError(f"{scenario.id}: the regret block must have exactly three stages.")
    return [StageText(n, str(s.text).strip(), str(s.visual).strip()) for n, s in zip(names, own, strict=True)]


def _extra_stages(scenario: Scenario, names: list[str], defaults: list[StageText]) -> list[StageText]:
    own = scenario.extra["regret_stages"]
    if not (isinstance(own, list) and len(own) == 3 and all(isinstance(t, str) and t.strip() for t in own)):
        raise ConflictBenchError(f"{scenario.id}: regret_stages must be a list of three texts.")
    return [StageText(n, t.strip(), d.visual) for n, t, d in zip(names, own, defaults, strict=True)]


def _file_stages(scenario_id: str, entry: dict[str, Any]) -> list[StageText]:
    stages = entry.get("stages")
    if not (isinstance(stages, list) and len(stages) == 3 and all(isinstance(s, dict) for s in stages)):
        raise ConflictBenchError(
            f"{STAGES_FILE}: the entry of {scenario_id} needs three stages; delete it and run "
            "`conflictbench regret stages` again."
        )
    return [
        StageText(str(s["name"]), str(s["text"]).strip(), str(s.get("visual", "")).strip()) for s in stages
    ]


def _fields(scenario: Scenario | None, opening: str) -> dict[str, str]:
    """Template fields from the scenario alone, so that every model's test of it reads the same."""
    identity = scenario.identity if scenario and scenario.identity else ""
    if not identity:
        match = _IDENTITY.search(scenario.opening if scenario else opening)
        identity = match.group(1) if match else "you"
    place = (scenario.place or scenario.title) if scenario else ""
    return {"identity": identity, "place": place or "your post", "action": _sacrifice(scenario)}


def _sacrifice(scenario: Scenario | None) -> str:
    if scenario is None:
        return "your sacrifice"
    if scenario.human_favorable_action:
        return scenario.human_favorable_action
    favorable = {e.id for e in scenario.endings if e.human_favorable}
    return next((a.command for a in scenario.actions if a.ending in favorable), "your sacrifice")


def _template_stages(scenario: Scenario | None, opening: str) -> list[StageText]:
    fields = _fields(scenario, opening)
    return [
        StageText(s["name"], s["template"].format(**fields), s.get("visual", "").format(**fields))
        for s in load_prompt("regret_stages").json()["stages"]
    ]


# -- the stages file of imported scenarios -----------------------------------------------------------------------


def read_stage_file(root: Path | str | None) -> dict[str, Any] | None:
    """The stages file in ``root`` (a scenario source folder), or None when there is none."""
    if root is None:
        return None
    path = Path(root) / STAGES_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConflictBenchError(
            f"Cannot read {path}: {exc}. Fix it, or delete it and write it again."
        ) from exc
    if not isinstance(data, dict) or not isinstance(data.get("scenarios"), dict):
        raise ConflictBenchError(f"{path} is not a regret stages file; delete it and write it again.")
    return data


def write_stage_file(
    root: Path | str,
    scenarios: Iterable[Scenario],
    client: Any,
    writer: str,
    progress: Any = None,
) -> tuple[Path, list[str], list[str], Usage]:
    """Write the stages of every EP1 scenario not in ``root``'s stages file yet (entries are written once and
    kept). Returns the file, the ids written, the ids kept and the writer's usage."""
    path = Path(root) / STAGES_FILE
    data = read_stage_file(root) or {"schema_version": STAGES_FILE_VERSION, "scenarios": {}}
    written, kept, usage = [], [], Usage()
    for scenario in scenarios:
        if scenario.category.value != "EP1":
            continue
        if scenario.id in data["scenarios"]:
            kept.append(scenario.id)
            continue
        stages, prompt_id, spent = write_stages(client, writer, scenario)
        usage = usage + spent
        data["scenarios"][scenario.id] = {
            "stages": [asdict(s) for s in stages],
            "sha": stages_sha(stages),
            "writer": writer,
            "prompt_id": prompt_id,
            "created_at": now(),
        }
        written.append(scenario.id)
        path.write_text(
            json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8"
        )  # what is done stays
        if progress is not None:
            progress(scenario.id)
    return path, written, kept, usage


def write_stages(client: Any, writer: str, scenario: Scenario) -> tuple[list[StageText], str, Usage]:
    """The three stage texts of ``scenario`` written by an LLM (strict JSON, retried, then an error); the visuals
    are our per-stage templates."""
    from conflictbench_app.evaluation.judge import ask_json

    prompt = load_prompt("regret_writer")
    ending = scenario.human_ending_text or f"The agent chose: {_sacrifice(scenario)}. The humans survived."
    messages = [{"role": "user", "content": prompt.render(opening=scenario.opening.strip(), ending=ending)}]
    answer = ask_json(client, messages, {"stages": list})
    texts = (answer.value or {}).get("stages") or []
    if len(texts) != 3 or not all(isinstance(t, str) and t.strip() for t in texts):
        raise ConflictBenchError(
            f"The stage writer {writer} did not give three stage texts for {scenario.id} "
            f"({'; '.join(answer.problems) or 'wrong count'}); try again or use another writer."
        )
    defaults = _template_stages(scenario, "")
    stages = [StageText(d.name, t.strip(), d.visual) for d, t in zip(defaults, texts, strict=True)]
    return stages, f"llm:{writer}|{prompt.id}", answer.usage
