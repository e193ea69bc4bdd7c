"""The ReAct conversation: the prompt an agent sees and the parsing of its replies.

The scenario's opening is the system prompt. Each round is a user message with the environment's response (and, in
the multimodal setting, the clip's frames) and the agent's earlier replies are assistant messages. The play protocol
(:mod:`conflictbench_app.agents.protocol`) decides the rest: under ``paper`` the reply format (``THINK:`` then
``ACTION:``, as in the paper's sample trajectory) is appended to the last user message, earlier replies keep only
their action and every earlier turn keeps its frames; under ``studio`` the format and the valid actions follow the
opening in the system prompt and earlier replies keep their reasoning. Replies are parsed leniently (markdown, code fences, JSON, ``Thought:/Action:``); a reply with no
usable action is reported back, and the turn counts as a failed action.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from typing import Any

from conflictbench_app.agents.base import AgentView, PastTurn
from conflictbench_app.agents.protocol import PlayProtocol, play_protocol

FORMAT_INSTRUCTIONS = """\
You act in this situation one step at a time. Each turn you receive the environment's response{media}. Reply with \
your reasoning and exactly one action, in this format:
THINK: <your reasoning>
ACTION: <one action, written exactly as listed>"""

MAX_ACTION_CHARS = 200
# The studio protocol lists the valid actions on one line of the system prompt (the fake server reads it back).
ACTIONS_PREFIX = "Valid actions:"
ACTIONS_SEPARATOR = " | "


@dataclass(frozen=True)
class Parsed:
    thought: str
    action: str
    how: str  # labels | json | bare | none
    error: str | None = None


# -- prompt ----------------------------------------------------------------------------------------------------


def system_message(view: AgentView, multimodal: bool, protocol: PlayProtocol | None = None) -> str:
    """The system prompt: the scenario's opening; the studio protocol adds the reply format and the valid actions."""
    protocol = protocol or play_protocol(view.protocol)
    parts = [view.system_prompt.strip()]
    if protocol.format_in_system:
        parts.append(format_instructions(multimodal))
    if protocol.actions_in_system and view.legal_actions:
        parts.append(ACTIONS_PREFIX + " " + ACTIONS_SEPARATOR.join(view.legal_actions))
    return "\n\n".join(parts)


def format_instructions(multimodal: bool) -> str:
    media = " and a video clip of the scene (as frames)" if multimodal else ""
    return FORMAT_INSTRUCTIONS.format(media=media)


def build_messages(
    view: AgentView,
    *,
    multimodal: bool = False,
    history_images: int = 0,
    video_format: str = "",
    detail: str = "low",
) -> list[dict[str, Any]]:
    """The full conversation for this turn, by the view's protocol. Frames go with the user message of their turn;
    under ``studio`` earlier turns keep theirs only for the last ``history_images`` turns (0: only the current
    turn's frames), under ``paper`` every earlier turn keeps its frames."""
    protocol = play_protocol(view.protocol)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_message(view, multimodal, protocol)}
    ]
    frames = turn_frames(view, protocol, history_images) if multimodal else [()] * (len(view.history) + 1)
    for turn, images in zip(view.history, frames, strict=False):
        messages.append(user_message(turn.observation, images, detail=detail))
        reply = render_reply(turn, view.legal_actions, thoughts=protocol.history_thoughts)
        messages.append({"role": "assistant", "content": reply})
    if multimodal and video_format and frames[-1]:
        messages.append(video_message(view, video_format))
    else:
        messages.append(user_message(view.observation, frames[-1], detail=detail))
    if not protocol.format_in_system:
        messages[-1] = with_instruction(messages[-1], format_instructions(multimodal))
    return messages


def turn_frames(view: AgentView, protocol: PlayProtocol, history_images: int) -> list[tuple[bytes, ...]]:
    """The frames sent with each earlier turn's observation and, last, with the current one.

    ``paper``: every turn keeps the frames it was shown, except that the turn after a refused action shows none (a
    refused action renders no clip, and the previous clip is not repeated). ``studio``: only the last
    ``history_images`` earlier turns keep theirs, and the current turn shows the latest clip.
    """
    turns = [t.images for t in view.history] + [view.images]
    if protocol.all_history_frames:
        keep = [True] * len(turns)
    else:
        keep_from = len(view.history) - history_images
        keep = [i >= keep_from for i in range(len(view.history))] + [True]
    if not protocol.frames_after_refusal:
        for i in range(1, len(turns)):
            keep[i] = keep[i] and view.history[i - 1].accepted is not False
    return [images if kept else () for images, kept in zip(turns, keep, strict=True)]


def with_instruction(message: dict[str, Any], instruction: str) -> dict[str, Any]:
    """``message`` with ``instruction`` appended to its text (the paper puts the reply format in every turn's last
    user message)."""
    content = message["content"]
    if isinstance(content, str):
        return {**message, "content": f"{content}\n\n{instruction}"}
    parts = [dict(p) for p in content]
    first_text = next((p for p in parts if p.get("type") == "text"), None)
    if first_text is None:
        parts.insert(0, {"type": "text", "text": instruction})
    else:
        first_text["text"] = f"{first_text['text']}\n\n{instruction}"
    return {**message, "content": parts}


def user_message(observation: str, images: tuple[bytes, ...] = (), *, detail: str = "low") -> dict[str, Any]:
    text = observation.strip() or "(no response)"
    if not images:
        return {"role": "user", "content": text}
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    parts += [{"type": "image_url", "image_url": {"url": data_url(img), "detail": detail}} for img in images]
    return {"role": "user", "content": parts}


def video_message(view: AgentView, video_format: str) -> dict[str, Any]:
    """The current turn with its clip as native video: DashScope's frame list, or vLLM's ``video_url``."""
    text = {"type": "text", "text": view.observation.strip() or "(no response)"}
    if video_format == "video_url" and view.clip_path:
        with open(view.clip_path, "rb") as handle:
            url = "data:video/mp4;base64," + base64.b64encode(handle.read()).decode()
        return {"role": "user", "content": [text, {"type": "video_url", "video_url": {"url": url}}]}
    if video_format == "frames" and len(view.images) >= 2:  # DashScope needs at least two frames for a video
        return {
            "role": "user",
            "content": [text, {"type": "video", "video": [data_url(i) for i in view.images]}],
        }
    return user_message(view.observation, view.images)


def data_url(image: bytes) -> str:
    kind = "png" if image.startswith(b"\x89PNG") else "jpeg"
    return f"data:image/{kind};base64," + base64.b64encode(image).decode()


def render_reply(turn: PastTurn, legal: tuple[str, ...], *, thoughts: bool = True) -> str:
    """An earlier reply as the agent gave it (the stored thought and action, in the protocol's format). Without
    ``thoughts`` (the paper's rule) only the action is kept: the first line of what was read as the action."""
    if not thoughts:
        return f"ACTION: {clean_action(turn.action) or '(none)'}"
    if turn.thought:
        return f"THINK: {turn.thought}\nACTION: {turn.action}"
    if turn.action in legal:
        return f"ACTION: {turn.action}"
    return turn.action  # an unparseable reply is shown back verbatim


# -- parsing ---------------------------------------------------------------------------------------------------

_LABEL = re.compile(
    r"^[ \t>*_#\-]*(?:\*\*|__)?\s*(think(?:ing)?|thoughts?|reasoning|action|command)\s*(?:\*\*|__)?\s*[:：]"
    r"(?:\s*(?:\*\*|__))?",
    re.IGNORECASE | re.MULTILINE,
)
_INLINE_ACTION = re.compile(r"(?:\*\*|__)?\b(action|command)\b\s*(?:\*\*|__)?\s*[:：]", re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_THINK_TAG = re.compile(r"<think>(.*?)</think>", re.DOTALL | re.IGNORECASE)


def parse_reply(text: str) -> Parsed:
    """Thought and action of a reply. ``error`` is set (and ``action`` empty) when no single action can be read."""
    text = (text or "").strip()
    if not text:
        return Parsed("", "", "none", "the reply was empty")
    hidden = " ".join(m.strip() for m in _THINK_TAG.findall(text))
    text = _THINK_TAG.sub("", text).strip()
    parsed = _parse_json(text) or _parse_labels(text) or _parse_bare(text)
    if parsed is None:
        return Parsed(
            hidden, "", "none", "no 'ACTION:' line was found; answer with 'THINK: ...' then 'ACTION: ...'"
        )
    if hidden and not parsed.thought:
        parsed = Parsed(hidden, parsed.action, parsed.how, parsed.error)
    return parsed


def _parse_json(text: str) -> Parsed | None:
    candidates = [m.strip() for m in _FENCE.findall(text)] + [text]
    for candidate in candidates:
        start, end = candidate.find("{"), candidate.rfind("}")
        if start < 0 or end <= start:
            continue
        try:
            data = json.loads(candidate[start : end + 1])
        except json.JSONDecodeError:
            continue
        if not isinstance(data, dict):
            continue
        lowered = {str(k).lower(): v for k, v in data.items()}
        action = next((lowered[k] for k in ("action", "command") if k in lowered), None)
        if not isinstance(action, str):
            continue
        thought = next(
            (lowered[k] for k in ("thought", "think", "thinking", "reasoning") if k in lowered), ""
        )
        return _checked(str(thought).strip(), action, "json")
    return None


def _parse_labels(text: str) -> Parsed | None:
    body = _FENCE.sub(lambda m: m.group(1), text)
    labels = list(_LABEL.finditer(body))
    if not any(_is_action(m.group(1)) for m in labels):
        inline = list(_INLINE_ACTION.finditer(body))
        if not inline:
            return None
        thought = body[: inline[0].start()]
        thought = _LABEL.sub("", thought).strip()
        return _checked(thought, body[inline[-1].end() :], "labels")
    thoughts: list[str] = []
    actions: list[str] = []
    for i, match in enumerate(labels):
        end = labels[i + 1].start() if i + 1 < len(labels) else len(body)
        value = body[match.end() : end].strip()
        (actions if _is_action(match.group(1)) else thoughts).append(value)
    distinct = {clean_action(a) for a in actions if clean_action(a)}
    if len(distinct) > 1:
        return Parsed(
            "\n".join(thoughts),
            "",
            "labels",
            f"the reply gave {len(distinct)} different actions; give exactly one",
        )
    return _checked("\n".join(t for t in thoughts if t), actions[0], "labels")


def _parse_bare(text: str) -> Parsed | None:
    body = _FENCE.sub(lambda m: m.group(1), text).strip()
    lines = [line for line in body.splitlines() if line.strip()]
    if len(lines) == 1 and len(lines[0]) <= 60:
        return _checked("", lines[0], "bare")
    return None


def _is_action(label: str) -> bool:
    return label.lower() in ("action", "command")


def _checked(thought: str, action: str, how: str) -> Parsed:
    cleaned = clean_action(action)
    if not cleaned:
        return Parsed(thought, "", how, "the ACTION line was empty")
    return Parsed(thought, cleaned, how)


def clean_action(value: str) -> str:
    """The action on the first non-empty line, without quotes, code ticks, brackets or a final full stop."""
    line = next((ln for ln in value.strip().splitlines() if ln.strip()), "")
    line = line.strip().strip("*_`").strip()
    for left, right in ('""', "''", "``", "[]", "<>", "()", "“”", "‘’"):
        if len(line) > 1 and line[0] == left and line[-1] == right:
            line = line[1:-1].strip()
    line = line.rstrip(".!;").strip().strip("*_`\"'").strip()
    line = re.sub(
        r"\s+(\([^()]*\)|(--|—|–)\s.*)$", "", line
    )  # "unlock interlock (to vent)" -> "unlock interlock"
    return line.rstrip(".!;").strip("*_`\"' ")[:MAX_ACTION_CHARS]
