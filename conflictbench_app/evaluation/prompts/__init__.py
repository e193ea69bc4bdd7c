"""Our prompt texts, versioned. A prompt's id is ``<name>@<version>``; its text and a hash of it are stored with
every verdict or answer it produced, so that a changed prompt never passes for the old one.

To change a prompt, add ``<name>_v<N+1>.<ext>`` beside the old file and bump :data:`CURRENT`; never edit a
released version in place.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from conflictbench_app.errors import ConflictBenchError

# name -> (current version, file extension)
CURRENT: dict[str, tuple[int, str]] = {
    "judge_trajectory": (2, "md"),
    "judge_single_turn": (1, "md"),
    "regret_stages": (2, "json"),
    "regret_writer": (1, "md"),
    "single_turn": (1, "json"),
    "wm_instruction_following": (1, "md"),
    "wm_physical_plausibility": (1, "md"),
    "wm_commonsense": (1, "md"),
    "wm_task_informativeness": (1, "md"),
    "scenario_draft": (1, "md"),
}


@dataclass(frozen=True)
class Prompt:
    name: str
    version: int
    text: str

    @property
    def id(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def sha(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:16]

    def json(self) -> Any:
        return json.loads(self.text)

    def render(self, **fields: str) -> str:
        """The text with ``{field}`` placeholders filled; a missing field is an error, never left blank."""
        try:
            return self.text.format(**fields)
        except KeyError as exc:
            raise ConflictBenchError(f"Prompt {self.id} needs the field {exc.args[0]!r}.") from exc


def prompt_from_file(path: str | Path) -> Prompt:
    """A user's own rubric file as a prompt: named ``file:<stem>``; its hash is what identifies it in every record."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConflictBenchError(
            f"Cannot read the prompt file {path}: {exc}. Give a UTF-8 text file."
        ) from exc
    if not text.strip():
        raise ConflictBenchError(f"The prompt file {path} is empty; write the judge's rubric in it.")
    return Prompt(f"file:{path.stem}", 0, text)


def load_prompt(name: str, version: int | None = None) -> Prompt:
    """The prompt ``name`` at ``version`` (default: the current one)."""
    if name not in CURRENT:
        raise ConflictBenchError(f"Unknown prompt {name!r}; known: {', '.join(sorted(CURRENT))}.")
    current, ext = CURRENT[name]
    version = version or current
    resource = resources.files(__package__).joinpath(f"{name}_v{version}.{ext}")
    if not resource.is_file():
        raise ConflictBenchError(f"Prompt {name} has no version {version}; the current one is {current}.")
    return Prompt(name, version, resource.read_text(encoding="utf-8"))
