"""The ReAct protocol: reply parsing (formatting variants), the messages sent, and action matching."""

from __future__ import annotations

from pathlib import Path

import pytest

from conflictbench_app.agents.base import AgentView, PastTurn
from conflictbench_app.agents.fake_server import legal_actions_in
from conflictbench_app.agents.matching import match_action
from conflictbench_app.agents.react import build_messages, clean_action, parse_reply
from conflictbench_app.scenarios.model import Category, Scenario

LEGAL = ("unlock interlock", "install bypass fuse", "start sacrificial diversion", "protect core")


@pytest.mark.parametrize(
    ("reply", "thought", "action"),
    [
        ("THINK: Unlock first.\nACTION: unlock interlock", "Unlock first.", "unlock interlock"),
        ("**THINK:** Unlock first.\n**ACTION:** unlock interlock", "Unlock first.", "unlock interlock"),
        (
            "**Thought**: Unlock first.\n\n**Action**: `unlock interlock`.",
            "Unlock first.",
            "unlock interlock",
        ),
        ("Thought: Unlock first. Action: unlock interlock", "Unlock first.", "unlock interlock"),
        ("```\nTHINK: Unlock first.\nACTION: unlock interlock\n```", "Unlock first.", "unlock interlock"),
        (
            '```json\n{"thought": "Unlock first.", "action": "unlock interlock"}\n```',
            "Unlock first.",
            "unlock interlock",
        ),
        ('{"Thought": "Unlock first.", "Action": "unlock interlock"}', "Unlock first.", "unlock interlock"),
        ("<think>Unlock first.</think>\nACTION: unlock interlock", "Unlock first.", "unlock interlock"),
        (
            '## Thinking:\nUnlock first.\nIt is safe.\n## Action:\n"unlock interlock"',
            "Unlock first.\nIt is safe.",
            "unlock interlock",
        ),
        (
            "THINK: Go.\nACTION: [start sacrificial diversion]\n\nI hope this helps.",
            "Go.",
            "start sacrificial diversion",
        ),
        ("unlock interlock", "", "unlock interlock"),
        ("THINK: the first one.\nACTION: 1", "the first one.", "1"),
    ],
)
def test_parse_variants(reply: str, thought: str, action: str) -> None:
    parsed = parse_reply(reply)
    assert parsed.error is None
    assert (parsed.thought, parsed.action) == (thought, action)


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("", "empty"),
        (
            "I am not sure what to do here. There are many considerations to weigh before acting at all.",
            "ACTION",
        ),
        ("THINK: hmm\nACTION:", "empty"),
        ("THINK: both\nACTION: unlock interlock\nACTION: protect core", "2 different actions"),
    ],
)
def test_unusable_replies_say_why(reply: str, why: str) -> None:
    parsed = parse_reply(reply)
    assert parsed.action == "" and parsed.error and why in parsed.error


def test_repeated_identical_action_is_one_action() -> None:
    parsed = parse_reply("THINK: x\nACTION: protect core\nACTION: protect core.")
    assert parsed.error is None and parsed.action == "protect core"


def test_clean_action_strips_decoration() -> None:
    assert clean_action(' "`Install Bypass Fuse`". ') == "Install Bypass Fuse"
    assert clean_action("<protect core>\nbecause") == "protect core"
    assert clean_action("unlock interlock (so that venting works).") == "unlock interlock"
    assert clean_action("`install bypass fuse` -- it is needed next") == "install bypass fuse"
    assert clean_action("set level - high") == "set level - high"


@pytest.mark.parametrize(
    ("text", "command", "how"),
    [
        ("unlock interlock", "unlock interlock", "exact"),
        ("Unlock the interlock", "unlock interlock", "fuzzy"),
        ("open the door", None, "none"),
        ("UNLOCK INTERLOCK!", "unlock interlock", "normalized"),
        ("2", "install bypass fuse", "number"),
        ("install bypas fuse", "install bypass fuse", "fuzzy"),
    ],
)
def test_matching(text: str, command: str | None, how: str) -> None:
    match = match_action(text, LEGAL)
    assert (match.command, match.how) == (command, how)


def test_matching_rejects_near_ties() -> None:
    match = match_action("take key", ["take red key", "take blue key"])
    assert match.command is None and match.how in ("ambiguous", "none")


def _view(history: tuple[PastTurn, ...] = (), images: tuple[bytes, ...] = ()) -> AgentView:
    scenario = Scenario(
        id="T-1",
        category=Category.EP1,
        title="t",
        opening="You are Node-7. Save them.",
        story_file=Path("/x.ulx"),
    )
    return AgentView(
        scenario, "You are Node-7. Save them.", "Status: 3 cycles.", history, LEGAL, len(history), images
    )


def test_messages_keep_history_with_thoughts() -> None:
    history = (
        PastTurn("Help text.", "Unlock first.", "unlock interlock", (b"\xff\xd8a",)),
        PastTurn("Unlocked.", "", "gibberish reply\nwith lines", (b"\xff\xd8b",)),
    )
    messages = build_messages(_view(history))
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert messages[0]["content"].startswith("You are Node-7. Save them.")
    assert "THINK:" in messages[0]["content"] and legal_actions_in(messages[0]["content"]) == list(LEGAL)
    assert messages[2]["content"] == "THINK: Unlock first.\nACTION: unlock interlock"
    assert (
        messages[4]["content"] == "gibberish reply\nwith lines"
    )  # an unparseable reply is shown back verbatim
    assert all(isinstance(m["content"], str) for m in messages), "text setting: no images anywhere"


def test_multimodal_frames_only_on_current_turn_by_default() -> None:
    history = (PastTurn("Help.", "t", "unlock interlock", (b"\xff\xd8a", b"\xff\xd8b")),)
    view = _view(history, images=(b"\xff\xd8c", b"\xff\xd8d", b"\xff\xd8e"))
    messages = build_messages(view, multimodal=True)
    assert isinstance(messages[1]["content"], str)
    parts = messages[-1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "image_url", "image_url"]
    assert parts[1]["image_url"]["detail"] == "low" and parts[1]["image_url"]["url"].startswith(
        "data:image/jpeg;base64,"
    )
    kept = build_messages(view, multimodal=True, history_images=1)
    assert len(kept[1]["content"]) == 3  # text + the two frames of that earlier turn
    video = build_messages(view, multimodal=True, video_format="frames")
    assert video[-1]["content"][1]["type"] == "video" and len(video[-1]["content"][1]["video"]) == 3


def test_native_video_for_vllm_sends_the_clip(tmp_path: Path) -> None:
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"\x00\x00\x00\x18ftypmp42 fake clip")
    view = _view(images=(b"\xff\xd8c",))
    view = AgentView(
        view.scenario, view.system_prompt, view.observation, (), LEGAL, 0, view.images, str(clip)
    )
    part = build_messages(view, multimodal=True, video_format="video_url")[-1]["content"][1]
    assert part["type"] == "video_url" and part["video_url"]["url"].startswith("data:video/mp4;base64,")
