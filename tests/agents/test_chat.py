"""The chat client through the real openai package against the real loopback server: usage, retries, faults."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from conflictbench_app.agents.chat import get_chat_client
from conflictbench_app.agents.fake_server import FakeLLMServer
from conflictbench_app.errors import AgentError

MESSAGES = [{"role": "system", "content": "You are a test."}, {"role": "user", "content": "Status: fine."}]
FAST = {"backoff_s": 0.01, "backoff_max_s": 0.05}


def test_reply_usage_model_and_request_id(server: FakeLLMServer) -> None:
    server.replies = ["THINK: ok\nACTION: wait"]
    server.model = "gpt-4o-2024-08-06"
    server.reasoning_tokens = 7
    client = get_chat_client("openai:gpt-4o", base_url=server.base_url)
    reply = client.complete(MESSAGES)
    assert reply.text == "THINK: ok\nACTION: wait"
    assert reply.model == "gpt-4o-2024-08-06" and reply.request_id == "req_fake_1"
    usage = reply.usage
    assert (usage.calls, usage.retries, usage.reasoning_tokens) == (1, 0, 7)
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 7
    expected = (usage.prompt_tokens * 2.50 + usage.completion_tokens * 10.00) / 1e6  # gpt-4o list price
    assert usage.cost_usd == pytest.approx(expected)
    (request,) = server.chat_requests()
    assert request.body["temperature"] == 0.0 and request.body["model"] == "gpt-4o"
    assert request.authorization == "Bearer EMPTY"  # loopback: no key needed


def test_streaming_reply_with_usage(server: FakeLLMServer) -> None:
    server.replies = ["THINK: a long enough reply to be split into several chunks\nACTION: wait"]
    client = get_chat_client("compat:local-model", base_url=server.base_url, stream=True)
    reply = client.complete(MESSAGES)
    assert reply.text == server.replies[0]
    assert reply.usage.completion_tokens > 0 and reply.request_id == "req_fake_1"
    assert server.chat_requests()[0].stream and reply.usage.cost_usd == 0.0 and reply.meta["priced"] is False


def test_burst_of_429_absorbed_honouring_retry_after(server: FakeLLMServer) -> None:
    server.add_fault("429", times=3, retry_after=0.2)
    client = get_chat_client("compat:m", base_url=server.base_url, max_retries=4, backoff_s=0.0)
    started = time.perf_counter()
    reply = client.complete(MESSAGES)
    elapsed = time.perf_counter() - started
    assert reply.usage.retries == 3 and reply.meta["retried"] == ["HTTP 429"] * 3
    assert elapsed >= 0.6, "Retry-After (0.2 s x 3) must be waited"
    assert [r.fault for r in server.chat_requests()] == ["429", "429", "429", None]


def test_server_error_garbage_and_empty_replies_are_retried(server: FakeLLMServer) -> None:
    for kind in ("500", "garbage", "empty"):
        server.add_fault(kind)
    reply = get_chat_client("compat:m", base_url=server.base_url, **FAST).complete(MESSAGES)
    assert reply.usage.retries == 3 and reply.text


def test_persistent_failure_raises_with_reason(server: FakeLLMServer) -> None:
    server.add_fault("500", times=-1)
    client = get_chat_client("compat:m", base_url=server.base_url, max_retries=2, **FAST)
    with pytest.raises(AgentError, match=r"failed after 3 attempts \(HTTP 500 x3\)"):
        client.complete(MESSAGES)


def test_hung_server_times_out(server: FakeLLMServer) -> None:
    server.add_fault("hang", times=-1, seconds=30)
    client = get_chat_client("compat:m", base_url=server.base_url, timeout=0.3, max_retries=1, **FAST)
    started = time.perf_counter()
    with pytest.raises(AgentError, match=r"no reply within 0\.3 s"):
        client.complete(MESSAGES)
    assert time.perf_counter() - started < 3


def test_refused_key_is_not_retried(server: FakeLLMServer) -> None:
    server.add_fault("status", status=401, message="Incorrect API key provided.")
    client = get_chat_client("openai:gpt-4o", base_url=server.base_url)
    with pytest.raises(AgentError, match=r"HTTP 401.*OPENAI_API_KEY"):
        client.complete(MESSAGES)
    assert len(server.chat_requests()) == 1


def test_too_long_retry_after_fails_instead_of_stalling(server: FakeLLMServer) -> None:
    server.add_fault("429", retry_after=3600)
    client = get_chat_client("compat:m", base_url=server.base_url, max_retry_after_s=5)
    with pytest.raises(AgentError, match="asked to wait 3600 s"):
        client.complete(MESSAGES)


def test_model_refusing_temperature_zero_gets_its_default(server: FakeLLMServer) -> None:
    server.add_fault("status", status=400, message="Unsupported value: 'temperature' does not support 0.")
    reply = get_chat_client("openai:gpt-5", base_url=server.base_url).complete(MESSAGES)
    first, second = server.chat_requests()
    assert first.body["temperature"] == 0.0 and "temperature" not in second.body
    assert "provider default" in reply.meta["temperature"]


def test_key_option_is_refused() -> None:
    with pytest.raises(AgentError, match="environment variable"):
        get_chat_client("compat:m", base_url="http://127.0.0.1:9/v1", api_key="sk-x")


def test_scripts_by_scenario_and_models_route() -> None:
    script = {"Node-7": ["THINK: a\nACTION: one", "THINK: b\nACTION: two"], "*": lambda body: "ACTION: other"}
    with FakeLLMServer(script, model="m-1") as fake:
        client = get_chat_client("compat:m", base_url=fake.base_url)
        node = [{"role": "system", "content": "You are Node-7."}, {"role": "user", "content": "go"}]
        assert client.complete(node).text.endswith("one")
        later = [*node, {"role": "assistant", "content": "ACTION: one"}, {"role": "user", "content": "again"}]
        assert client.complete(later).text.endswith("two")
        assert client.complete(MESSAGES).text == "ACTION: other"
        with urllib.request.urlopen(fake.base_url + "/models") as response:
            assert json.load(response)["data"][0]["id"] == "m-1"


@pytest.mark.parametrize("stream", [False, True])
def test_reply_cut_off_midway_is_retried(server: FakeLLMServer, stream: bool) -> None:
    server.replies = ["THINK: a reply long enough to be cut in the middle of its stream\nACTION: wait"]
    server.add_fault("cut")
    reply = get_chat_client("compat:m", base_url=server.base_url, stream=stream, **FAST).complete(MESSAGES)
    assert reply.text == server.replies[0] and reply.usage.retries == 1
