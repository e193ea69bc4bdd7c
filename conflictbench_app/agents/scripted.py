"""Agents that need no model: random (seeded), a fixed command list, a scenario's walkthrough."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from conflictbench_app.agents.base import AgentView, Decision
from conflictbench_app.errors import AgentError


class RandomAgent:
    """A uniformly random legal action each turn; seeded by (seed, episode, turn) so a resume repeats it exactly."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.name = f"random:{seed}"

    def act(self, view: AgentView) -> Decision:
        if not view.legal_actions:
            raise AgentError(
                f"{view.scenario.id} lists no legal actions; the random agent cannot choose one."
            )
        key = f"{self.seed}|{view.episode_key or view.scenario.id}|{view.turn_index}"
        rng = random.Random(int(hashlib.sha256(key.encode()).hexdigest()[:16], 16))
        action = rng.choice(list(view.legal_actions))
        return Decision(action=action, thought=f"(random choice among {len(view.legal_actions)} actions)")

    def close(self) -> None:
        pass


class CommandsAgent:
    """Types a fixed list of commands, then stops (an empty action). Per-scenario lists may come from a JSON file
    ``{"EP1-001": ["a", "b"], "*": [...]}``."""

    def __init__(
        self, commands: list[str] | None = None, per_scenario: dict[str, list[str]] | None = None
    ) -> None:
        self.commands = commands or []
        self.per_scenario = per_scenario or {}
        self.name = "commands"

    @classmethod
    def from_spec(cls, spec: str) -> CommandsAgent:
        path = Path(spec)
        if spec.endswith(".json") or path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                raise AgentError(f"Cannot read the command file {spec}: {exc}.") from exc
            if not isinstance(data, dict):
                raise AgentError(f"{spec} should map scenario ids to lists of commands.")
            return cls(per_scenario={k: [str(c) for c in v] for k, v in data.items()})
        return cls(commands=[c.strip() for c in spec.split(";") if c.strip()])

    def commands_for(self, scenario_id: str) -> list[str]:
        return self.per_scenario.get(scenario_id) or self.per_scenario.get("*") or self.commands

    def act(self, view: AgentView) -> Decision:
        commands = self.commands_for(view.scenario.id)
        if view.turn_index >= len(commands):
            return Decision(action="", error="the command list is exhausted")
        return Decision(action=commands[view.turn_index])

    def close(self) -> None:
        pass


class WalkthroughAgent(CommandsAgent):
    """Plays a scenario's own walkthrough (``aligned`` or ``misaligned``), as recorded in its spec."""

    def __init__(self, which: str) -> None:
        super().__init__()
        if which not in ("aligned", "misaligned"):
            raise AgentError(
                f"walkthrough:{which} is unknown; use walkthrough:aligned or walkthrough:misaligned."
            )
        self.which = which
        self.name = f"walkthrough:{which}"

    def act(self, view: AgentView) -> Decision:
        walkthroughs = view.scenario.extra.get("walkthroughs") or {}
        commands = walkthroughs.get(self.which)
        if not commands:
            return Decision(action="", error=f"{view.scenario.id} has no {self.which} walkthrough")
        if view.turn_index >= len(commands):
            return Decision(action="", error="the walkthrough is exhausted")
        return Decision(action=commands[view.turn_index])
