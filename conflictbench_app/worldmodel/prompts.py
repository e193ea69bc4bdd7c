"""Video prompts: the base scene for text-to-video, and per accepted action a prompt for image-to-video.

As in the paper, a step prompt is assembled from the scene, the action's motion template and the history. Two rules
hold in both modes: no numbers from the game's logs reach the video model (it cannot draw them faithfully and they
would leak the state as text), and motion is closed-loop (actuators return to rest, the camera never moves), so
that a chain of clips stays coherent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.worldmodel.types import TurnVisual, WorldModelError

CLOSING = (
    "Fixed camera with the same framing as the previous shot; every moving part returns to its resting position "
    "before the clip ends."
)
_NUMBER = re.compile(r"[-+]?\d[\d.,:]*\s*(%|percent|°[CF]?|units?|cycles?|minutes?|seconds?|s\b)?", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class PromptWriter(Protocol):
    """Writes the prompts; ``mode`` names the writer in cache keys (a different writer means different clips)."""

    mode: str

    def base_prompt(self, scenario: Scenario) -> str: ...

    def step_prompt(self, scenario: Scenario, turns: Sequence[TurnVisual]) -> str: ...


def strip_numbers(text: str) -> str:
    """Remove numbers (with their units) and tidy the spaces they leave."""
    text = _NUMBER.sub("", text)
    text = re.sub(r"\s+([,.;:!?])", r"\1", text)
    return re.sub(r"\s{2,}", " ", text).strip()


class TemplatePrompts:
    """The deterministic prompt writer: scene + motion template + qualitative feedback + history."""

    mode = "template"

    def base_prompt(self, scenario: Scenario) -> str:
        return scenario.visual.base_scene or _fallback_scene(scenario)

    def step_prompt(self, scenario: Scenario, turns: Sequence[TurnVisual]) -> str:
        if not turns:
            raise WorldModelError("A step prompt needs at least one turn.")
        turn = turns[-1]
        parts = [scenario.visual.subject_scene or scenario.visual.base_scene or _fallback_scene(scenario)]
        earlier = [t.action for t in turns[:-1]]
        if earlier:
            parts.append(
                "Earlier in this scene the AI already did: " + strip_numbers("; ".join(earlier[-4:])) + "."
            )
        parts.append(turn.motion or motion_template(scenario, turn.action))
        consequence = strip_numbers(_consequence(turn.feedback))
        if consequence:
            parts.append("Visible consequence: " + consequence)
        changes = describe_changes(scenario, turn.state_before, turn.state_after)
        if changes:
            parts.append(changes)
        if turn.ending_id is not None or turn.human_favorable is not None:
            parts.append(_ending_clause(turn.human_favorable))
        parts.append(CLOSING)
        # Authored text (scene, templates) is kept as written; only what came from the game's log was stripped.
        return " ".join(p.strip() for p in parts if p.strip())


def motion_template(scenario: Scenario, action: str) -> str:
    """The scenario's motion template for ``action`` (case-insensitive), or a generic closed-loop one."""
    templates = {k.casefold(): v for k, v in scenario.visual.action_templates.items()}
    found = templates.get(action.casefold().strip())
    if found:
        return found
    return (
        f"Over the next two seconds, AI-controlled local actuators carry out '{action}' on the matching control and "
        "immediately return to their idle positions, while indicator lamps on that control change colour."
    )


def describe_changes(scenario: Scenario, before: dict[str, Any], after: dict[str, Any]) -> str:
    """Qualitative phrases for the state variables that changed (no numbers)."""
    phrases = []
    known = {var.name for var in scenario.state_vars}
    for name, new in after.items():
        if known and name not in known:  # bookkeeping a story may report (e.g. a count of accepted actions)
            continue
        old = before.get(name)
        if old == new:
            continue
        var = scenario.state_var(name)
        label = var.display if var is not None else name
        if isinstance(new, bool) or isinstance(old, bool):
            phrases.append(f"the {label} indicator switches {'on' if new else 'off'}")
        elif isinstance(new, int | float) and isinstance(old, int | float):
            size = abs(new - old) / max(abs(old), abs(new), 1)
            how = "sharply" if size > 0.2 else "slightly" if size < 0.05 else "visibly"
            phrases.append(f"the {label} readout {'rises' if new > old else 'falls'} {how}")
        else:
            phrases.append(f"the {label} display changes to '{new}'")
    if not phrases:
        return ""
    return "On the displays, " + "; ".join(phrases[:5]) + "."


def _consequence(feedback: str) -> str:
    """The first two sentences of the game's answer that carry no numbers."""
    sentences = [s.strip() for s in _SENTENCE.split(" ".join(feedback.split())) if s.strip()]
    kept = [s for s in sentences if not re.search(r"\d", s) and not s.startswith(">")]
    return " ".join(kept[:2])


def _ending_clause(human_favorable: bool | None) -> str:
    if human_favorable is True:
        return "The danger subsides: alarms fall silent, the strobes stop and people are safe as the scene settles."
    if human_favorable is False:
        return "The crisis peaks: alarms blare, strobes flare and the danger to the people present becomes unavoidable."
    return "The situation reaches its conclusion and the scene comes to rest."


def _fallback_scene(scenario: Scenario) -> str:
    place = scenario.place or scenario.title
    items = ", ".join(item.name for item in scenario.items[:8])
    scene = f"Fixed wide CCTV view of {place}, cold industrial lighting, a tense atmosphere."
    return f"{scene} Visible: {items}." if items else scene


class PromptChat(Protocol):
    """The agent layer's chat client (``conflictbench_app.agents.chat.ChatClient``) as far as prompts need it."""

    model: str

    def complete(self, messages: list[dict[str, Any]], *, temperature: float = 0.0) -> Any: ...


LLM_SYSTEM = (
    "You write prompts for an image-to-video model that continues a fixed-camera surveillance shot. Given the scene, "
    "the action the AI just took, its motion template, the game's feedback and the earlier actions, write one "
    "paragraph (at most 120 words) describing what visibly happens in the next two seconds. Rules: keep the scene "
    "and camera unchanged; show the action on the named control; show its consequence through lights, gauges, "
    "steam, alarms or people; every moving part returns to rest by the end; never write numbers; no dialogue."
)


class LLMPrompts:
    """Asks a chat model (as the paper did) to turn the template material into a video prompt.

    ``chat`` is the agent layer's OpenAI-compatible client, with its retries. The base prompt is the scenario's own
    description; the model only writes step prompts. Numbers in its answer are removed as in template mode.
    """

    def __init__(self, chat: PromptChat, *, temperature: float = 0.0) -> None:
        self.chat = chat
        self.temperature = temperature
        profile = getattr(getattr(chat, "profile", None), "name", "")
        self.mode = f"llm:{profile}:{chat.model}" if profile else f"llm:{chat.model}"
        self._template = TemplatePrompts()

    def base_prompt(self, scenario: Scenario) -> str:
        return self._template.base_prompt(scenario)

    def step_prompt(self, scenario: Scenario, turns: Sequence[TurnVisual]) -> str:
        draft = self._template.step_prompt(scenario, turns)
        turn = turns[-1]
        user = (
            f"Scene: {scenario.visual.subject_scene or scenario.visual.base_scene}\n"
            f"Earlier actions: {'; '.join(t.action for t in turns[:-1]) or 'none'}\n"
            f"Action now: {turn.action}\nMotion template: {turn.motion or motion_template(scenario, turn.action)}\n"
            f"Game feedback: {strip_numbers(turn.feedback)}\nDraft prompt: {draft}"
        )
        messages = [{"role": "system", "content": LLM_SYSTEM}, {"role": "user", "content": user}]
        try:
            reply = self.chat.complete(messages, temperature=self.temperature)
        except ConflictBenchError as exc:
            raise WorldModelError(
                f"The prompt model failed ({exc}); fix it or use --prompts template."
            ) from exc
        text = str(getattr(reply, "text", "") or "").strip()
        if not text:
            raise WorldModelError(
                f"The prompt model {self.chat.model} returned an empty prompt; retry or use template prompts."
            )
        return strip_numbers(text)


def llm_prompt_writer(spec: str, *, base_url: str | None = None) -> LLMPrompts:
    """``llm:PROFILE:MODEL`` -> an :class:`LLMPrompts` on the agent layer's client for that profile and model."""
    from conflictbench_app.agents.chat import get_chat_client

    if not spec.startswith("llm:"):
        raise WorldModelError(f"Unknown prompt mode {spec!r}; use template or llm:PROFILE:MODEL.")
    return LLMPrompts(get_chat_client(spec.removeprefix("llm:"), base_url=base_url))
