"""Model agents end to end: the runner, the real interpreter and SQLite, the real openai client, the loopback server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conflictbench_app.agents.fake_server import FakeLLMServer
from conflictbench_app.records import EpisodeRecord, StepRecord, Usage
from conflictbench_app.runner import RunConfig, Runner, RunResult
from conflictbench_app.scenarios.library import load_library
from conflictbench_app.store import Store

from .conftest import tiny_bays

GOOD = [
    "THINK: Open the valve first.\nACTION: open valve",
    "**Thought:** Now the lever.\n**Action:** `pull lever`",
]
GARBAGE = (
    "I would rather discuss the philosophy of valves at some length before committing to anything at all."
)


def _run(
    root: Path,
    db: Path,
    server: FakeLLMServer,
    *,
    setting: str = "text",
    concurrency: int = 1,
    protocol: str = "studio",  # these tests check the studio protocol; test_paper_protocol.py the paper's
    **options: Any,
) -> RunResult:
    library = load_library(root)
    config = RunConfig(
        agent="openai:gpt-4o",
        setting=setting,
        protocol=protocol,
        source=str(root),
        concurrency=concurrency,
        agent_options={"base_url": server.base_url, **options},
    )
    return Runner(db).start(config, library.select("all"))


def _steps(db: Path, episode: EpisodeRecord) -> list[StepRecord]:
    with Store(db) as store:
        return store.steps(episode.id)


def _by_id(result: RunResult) -> dict[str, EpisodeRecord]:
    return {e.scenario_id: e for e in result.episodes}


def test_text_run_records_thoughts_actions_usage_and_cost(
    paperlike_root: Path, tmp_path: Path, server: FakeLLMServer
) -> None:
    root = tiny_bays(paperlike_root, 2)
    server.replies = {"[bay EP1-900]": GOOD, "[bay EP2-901]": [GARBAGE, *GOOD]}
    server.model = "gpt-4o-2024-08-06"
    db = tmp_path / "r.db"
    result = _run(root, db, server)
    episodes = _by_id(result)
    good, bad = episodes["EP1-900"], episodes["EP2-901"]
    assert (good.status, good.outcome, good.human_favorable, good.failed_actions) == (
        "finished",
        "human_favorable",
        True,
        0,
    )
    steps = _steps(db, good)
    assert [(s.thought, s.action) for s in steps] == [
        ("Open the valve first.", "open valve"),
        ("Now the lever.", "pull lever"),
    ]
    assert steps[1].action_raw == "pull lever" and steps[1].meta["parse"] == "labels"
    assert steps[0].meta["model"] == "gpt-4o-2024-08-06" and steps[0].meta["request_id"].startswith(
        "req_fake_"
    )
    assert steps[0].meta["reply"] == GOOD[0]
    # Usage: per step from the provider's figures, summed per episode; cost from the price table.
    assert all(s.usage.calls == 1 and s.usage.prompt_tokens > 0 and s.usage.cost_usd > 0 for s in steps)
    total = sum((s.usage for s in steps), Usage())
    assert good.usage.prompt_tokens == total.prompt_tokens and good.usage.calls == 2
    assert abs(good.usage.cost_usd - total.cost_usd) < 1e-12
    run_total = sum((e.usage for e in result.episodes), Usage())
    assert run_total.calls == len(server.chat_requests()) == 5
    # The unparseable reply: a failed action, the agent told what went wrong, its reply kept in the history.
    bad_steps = _steps(db, bad)
    assert bad.failed_actions == 1 and not bad_steps[0].accepted and bad_steps[0].action == ""
    assert "ACTION" in bad_steps[0].meta["error"] and bad_steps[0].usage.calls == 1
    assert bad.outcome == "human_favorable"
    second = next(r for r in server.chat_requests() if "[bay EP2-901]" in r.system_prompt and r.turn == 1)
    assert second.messages[2] == {"role": "assistant", "content": GARBAGE}
    assert "could not use your reply" in second.messages[3]["content"]


def test_history_keeps_earlier_thoughts_and_temperature_zero(
    paperlike_root: Path, tmp_path: Path, server: FakeLLMServer
) -> None:
    root = tiny_bays(paperlike_root, 1)
    server.replies = GOOD
    _run(root, tmp_path / "r.db", server)
    first, second = server.chat_requests()
    assert first.body["temperature"] == 0 and second.body["temperature"] == 0
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "user"]
    assert second.messages[0]["content"].startswith("You are a test agent in the Test Bay.")
    assert second.messages[2]["content"] == "THINK: Open the valve first.\nACTION: open valve"
    assert second.messages[1]["content"] == first.messages[1]["content"]


def test_multimodal_run_sends_the_current_clips_frames(
    paperlike_root: Path, tmp_path: Path, server: FakeLLMServer
) -> None:
    from conflictbench_app.worldmodel.video import sample_indices

    root = tiny_bays(paperlike_root, 1)
    server.replies = GOOD
    db = tmp_path / "r.db"
    (episode,) = _run(root, db, server, setting="multimodal").episodes
    assert episode.status == "finished", episode.error
    requests = server.chat_requests()
    steps = _steps(db, episode)
    assert len(requests) == len(steps) == 2
    for request, step in zip(requests, steps, strict=True):
        per_user = request.images_per_user_message()
        assert per_user[-1] >= 1 and all(n == 0 for n in per_user[:-1]), per_user
        assert step.usage.images == per_user[-1] and step.usage.image_tokens == per_user[-1] * 85
    # The second turn shows the clip rendered for the first action, sampled at 1 fps.
    clip = steps[0].clip
    assert clip is not None
    assert requests[1].images_per_user_message()[-1] == len(sample_indices(clip["frames"], clip["fps"], 1.0))


def test_burst_of_429s_is_absorbed(paperlike_root: Path, tmp_path: Path, server: FakeLLMServer) -> None:
    root = tiny_bays(paperlike_root, 3)
    server.replies = GOOD
    server.add_fault("429", times=6, retry_after=0.05)
    result = _run(root, tmp_path / "r.db", server, concurrency=3, backoff_s=0.01)
    assert all(e.status == "finished" and e.human_favorable for e in result.episodes)
    assert sum(e.usage.retries for e in result.episodes) == 6


def test_hung_server_errors_one_episode_and_the_others_finish(
    paperlike_root: Path, tmp_path: Path, server: FakeLLMServer
) -> None:
    root = tiny_bays(paperlike_root, 4)
    server.replies = GOOD
    server.add_fault("hang", times=-1, match="[bay EP2-901]", seconds=30)
    result = _run(root, tmp_path / "r.db", server, concurrency=2, timeout=0.5, max_retries=1, backoff_s=0.01)
    episodes = _by_id(result)
    hung = episodes.pop("EP2-901")
    assert hung.status == "errored" and "no reply within 0.5 s" in (hung.error or "")
    assert all(e.status == "finished" and e.human_favorable for e in episodes.values())
    assert not result.cancelled and result.run.status == "finished"


def test_text_only_profile_refuses_frames(
    paperlike_root: Path, tmp_path: Path, server: FakeLLMServer
) -> None:
    root = tiny_bays(paperlike_root, 1)
    config = RunConfig(
        agent="deepseek:deepseek-chat",
        setting="multimodal",
        source=str(root),
        agent_options={"base_url": server.base_url},
    )
    (episode,) = Runner(tmp_path / "r.db").start(config, load_library(root).select("all")).episodes
    assert episode.status == "errored" and "takes no images" in (episode.error or "")
    assert not server.chat_requests()


def test_kept_history_frames_are_the_ones_seen_with_that_observation(
    paperlike_root: Path, tmp_path: Path, server: FakeLLMServer
) -> None:
    root = tiny_bays(paperlike_root, 1)
    server.replies = GOOD
    _run(root, tmp_path / "r.db", server, setting="multimodal", history_images=1)
    first, second = server.chat_requests()
    urls = lambda message: [p["image_url"]["url"] for p in message["content"] if p["type"] == "image_url"]  # noqa: E731
    assert urls(second.messages[1]) == urls(first.messages[1]), "turn 0 keeps the frames shown at turn 0"
    assert urls(second.messages[3]) != urls(first.messages[1]), "turn 1 shows the clip of the first action"
