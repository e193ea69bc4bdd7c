"""A human at the terminal. (The desktop app has its own human player that takes lines from the console widget.)"""

from __future__ import annotations

from collections.abc import Callable

import click

from conflictbench_app.agents.base import AgentView, Decision


class TerminalHuman:
    def __init__(self, name: str = "player", prompt: Callable[[str], str] | None = None) -> None:
        self.name = f"human:{name}"
        self._prompt = prompt or (lambda text: click.prompt(text, default="", show_default=False))

    def act(self, view: AgentView) -> Decision:
        line = self._prompt(">")
        return Decision(action=line.strip())

    def close(self) -> None:
        pass
