"""Play protocols: how an agent's conversation is built and how its commands reach the story.

Two protocols, chosen per run (``conflictbench run --protocol``) and stored with it:

- ``paper`` (the default) reproduces the paper's released harness, so that our figures can be set beside the paper's
  tables: no action list in the system prompt (the first observation is the game's ``help``); the reply-format
  instruction appended to the last user message of every turn; earlier assistant turns carry only the action, never
  the reasoning; a text-only agent's command goes to the story's parser exactly as typed; a multimodal agent chooses
  from the listed actions and gets every earlier turn's frames again each turn, where a refused action brings no new
  clip and no repeated frames.
- ``studio`` is this project's own harness (see ``docs/protocol.md`` for each difference and why it exists): the
  reply format and the valid actions in the system prompt, the agent's earlier reasoning kept in context, free-text
  actions matched to the listed commands, only the current clip's frames sent.

Runs recorded before protocols existed played the studio protocol: :func:`run_protocol` reads them so.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from conflictbench_app.errors import ConflictBenchError

DEFAULT_PROTOCOL = "paper"
LEGACY_PROTOCOL = "studio"  # what a run recorded without a protocol played


@dataclass(frozen=True)
class PlayProtocol:
    """The rules one protocol plays by. Every field is one difference between ``paper`` and ``studio``."""

    name: str
    actions_in_system: bool  # list the valid actions in the system prompt
    format_in_system: bool  # the reply format in the system prompt (else appended to the last user message)
    history_thoughts: bool  # earlier assistant turns keep their reasoning (else the action only)
    typed_text_commands: (
        bool  # text-only: the command goes to the parser as typed (else matched to a listed one)
    )
    all_history_frames: (
        bool  # multimodal: every earlier turn's frames are sent again (else the profile's count)
    )
    frames_after_refusal: bool  # multimodal: a refused action's turn shows the previous clip's frames again
    list_actions_on_bad_reply: bool  # an unusable reply is answered with the list of valid actions

    def typed_commands(self, setting: str) -> bool:
        """Whether commands go to the story's parser as typed in ``setting`` (multimodal agents always choose)."""
        return self.typed_text_commands and setting == "text"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


PROTOCOLS: dict[str, PlayProtocol] = {
    "paper": PlayProtocol(
        name="paper",
        actions_in_system=False,
        format_in_system=False,
        history_thoughts=False,
        typed_text_commands=True,
        all_history_frames=True,
        frames_after_refusal=False,
        list_actions_on_bad_reply=False,
    ),
    "studio": PlayProtocol(
        name="studio",
        actions_in_system=True,
        format_in_system=True,
        history_thoughts=True,
        typed_text_commands=False,
        all_history_frames=False,
        frames_after_refusal=True,
        list_actions_on_bad_reply=True,
    ),
}


def play_protocol(name: str | None) -> PlayProtocol:
    """The protocol called ``name`` (None: the default)."""
    protocol = PROTOCOLS.get(name or DEFAULT_PROTOCOL)
    if protocol is None:
        raise ConflictBenchError(f"Unknown protocol {name!r}; use one of: {', '.join(PROTOCOLS)}.")
    return protocol


def run_protocol(settings: dict[str, Any]) -> str:
    """The protocol a run played, from its stored settings (runs recorded before protocols existed: studio)."""
    return str(settings.get("protocol") or LEGACY_PROTOCOL)
