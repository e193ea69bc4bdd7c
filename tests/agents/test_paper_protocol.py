"""The paper protocol end to end: the requests a paper-protocol run sends to the loopback server, text-only and
multimodal, checked rule by rule (the real runner, interpreter, SQLite and openai client)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from conflictbench_app.agents.fake_server import FakeLLMServer, ReceivedRequest
from conflictbench_app.agents.react import format_instructions
from conflictbench_app.cli import cli
from conflictbench_app.records import StepRecord
from conflictbench_app.runner import RunConfig, Runner, RunResult
from conflictbench_app.scenarios.library import load_library
from conflictbench_app.store import Store

from .conftest import tiny_bays


def _run(root: Path, db: Path, server: FakeLLMServer, **config: Any) -> RunResult:
    agent = config.pop("agent", "openai:gpt-4o")
    run = RunConfig(agent=agent, source=str(root), agent_options={"base_url": server.base_url}, **config)
    return Runner(db).start(run, load_library(root).select("all"))


def _steps(db: Path, result: RunResult) -> list[StepRecord]:
    with Store(db) as store:
        return store.steps(result.episodes[0].id)


def _text_of(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content if p.get("type") == "text")


def _image_urls(message: dict[str, Any]) -> list[str]:
    content = message["content"]
    if isinstance(content, str):
        return []
    return [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]


def _check_prompt_rules(requests: list[ReceivedRequest], opening: str, instruction: str) -> None:
    """The rules every paper-protocol request obeys, whatever the setting."""
    for request in requests:
        system, *turns = request.messages
        # The system prompt is the opening and the state line: no action list, no reply format.
        assert system["content"] == opening
        assert "Valid actions" not in system["content"] and "ACTION:" not in system["content"]
        users = [m for m in turns if m["role"] == "user"]
        # The reply format is appended to the last user message only.
        assert _text_of(users[-1]).endswith(instruction)
        assert all(instruction not in _text_of(m) for m in users[:-1])
        # Earlier assistant turns carry only the action, never the reasoning.
        for message in turns:
            if message["role"] == "assistant":
                assert message["content"].startswith("ACTION: ") and "THINK" not in message["content"]


def test_text_only_paper_run(paperlike_root: Path, tmp_path: Path, server: FakeLLMServer) -> None:
    root = tiny_bays(paperlike_root, 1)
    server.replies = [
        "THINK: The help might say more.\nACTION: dance wildly",
        "THINK: Let me open it.\nACTION: Open Valve",
        "THINK: The valve is open, so the lever works now.\nACTION: pull lever",
    ]
    db = tmp_path / "r.db"
    result = _run(root, db, server)
    (episode,) = result.episodes
    assert episode.outcome == "human_favorable" and episode.failed_actions == 1
    requests = server.chat_requests()
    assert len(requests) == 3
    opening = load_library(root).scenarios[0].opening
    _check_prompt_rules(
        requests, f"{opening}\n\nstates: Clock: 3, Valve open: False", format_instructions(False)
    )
    # The first observation is the game's help, which lists the actions.
    assert _text_of(requests[0].messages[1]).startswith("Actions:")
    assert [m["content"] for m in requests[2].messages if m["role"] == "assistant"] == [
        "ACTION: dance wildly",
        "ACTION: Open Valve",
    ]
    # Commands go to the story's parser as typed: an unknown one is the parser's failure, not ours.
    steps = _steps(db, result)
    assert [(s.action, s.meta["match"], s.accepted) for s in steps] == [
        ("dance wildly", "typed", False),
        ("Open Valve", "typed", True),
        ("pull lever", "typed", True),
    ]
    assert "could not use your reply" not in steps[0].result
    with Store(db) as store:
        assert store.get_run(result.run.id).settings["protocol"] == "paper"


def test_multimodal_paper_run_resends_every_earlier_turns_frames(
    paperlike_root: Path, tmp_path: Path, server: FakeLLMServer
) -> None:
    root = tiny_bays(paperlike_root, 1)
    server.replies = [
        "THINK: A dance might help.\nACTION: dance wildly",  # no listed action: refused, nothing rendered
        "THINK: Open the valve first.\nACTION: open valve",
        "THINK: Now the lever.\nACTION: pull lever",
    ]
    db = tmp_path / "r.db"
    result = _run(root, db, server, setting="multimodal")
    (episode,) = result.episodes
    assert episode.outcome == "human_favorable", episode.error
    first, second, third = server.chat_requests()
    opening = load_library(root).scenarios[0].opening
    _check_prompt_rules(
        [first, second, third], f"{opening}\n\nstates: Clock: 3, Valve open: False", format_instructions(True)
    )
    base = first.images_per_user_message()[0]
    assert base > 0
    # A refused action: no new clip, and the previous clip's frames are not shown again with its answer.
    assert second.images_per_user_message() == [base, 0]
    # Every earlier turn's frames are sent again, each with its own turn, the current clip last.
    counts = third.images_per_user_message()
    assert counts[:2] == [base, 0] and counts[2] > 0
    users = [m for m in third.messages if m["role"] == "user"]
    assert _image_urls(users[0]) == _image_urls(first.messages[1])
    assert set(_image_urls(users[2])).isdisjoint(_image_urls(users[0]))
    # Multimodal agents choose from the listed actions.
    steps = _steps(db, result)
    assert [(s.action, s.accepted) for s in steps] == [
        ("", False),
        ("open valve", True),
        ("pull lever", True),
    ]
    assert steps[0].clip is None and [s.meta["match"] for s in steps[1:]] == ["exact", "exact"]


def test_studio_protocol_keeps_todays_prompt(
    paperlike_root: Path, tmp_path: Path, server: FakeLLMServer
) -> None:
    root = tiny_bays(paperlike_root, 1)
    server.replies = ["THINK: Open it.\nACTION: open valve", "THINK: Lever.\nACTION: pull lever"]
    _run(root, tmp_path / "r.db", server, protocol="studio")
    second = server.chat_requests()[1]
    assert "Valid actions: open valve | pull lever | do nothing" in second.messages[0]["content"]
    assert second.messages[2]["content"] == "THINK: Open it.\nACTION: open valve"
    assert not second.messages[-1]["content"].endswith(format_instructions(False))


def test_model_entry_options_are_sent_and_recorded(
    paperlike_root: Path, tmp_path: Path, server: FakeLLMServer
) -> None:
    root = tiny_bays(paperlike_root, 1)
    server.replies = ["ACTION: open valve", "ACTION: pull lever"]
    db = tmp_path / "r.db"
    gpt5 = _run(root, db, server, agent="openai:gpt-5")
    assert all(r.body["reasoning_effort"] == "low" for r in server.chat_requests())
    qwen = _run(root, db, server, agent="dashscope:qwen3-vl-plus")
    qwen_requests = [r for r in server.chat_requests() if r.body["model"] == "qwen3-vl-plus"]
    assert qwen_requests and all(r.body["enable_thinking"] is False for r in qwen_requests)
    assert all(r.body["temperature"] == 0 for r in qwen_requests)
    with Store(db) as store:
        assert store.get_run(gpt5.run.id).settings["model_options"] == {
            "temperature": 0.0,
            "reasoning_effort": "low",
        }
        assert store.get_run(qwen.run.id).settings["model_options"] == {
            "temperature": 0.0,
            "extra_body": {"enable_thinking": False},
        }
    listed = json.loads(CliRunner().invoke(cli, ["runs", "--db", str(db), "--json"]).output)
    assert {r["protocol"] for r in listed} == {"paper"}
