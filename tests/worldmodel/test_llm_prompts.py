"""LLM prompt mode against a real loopback OpenAI-compatible server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.worldmodel import TurnVisual, WorldModelError, get_world_model
from conflictbench_app.worldmodel.prompts import LLMPrompts, llm_prompt_writer

REQUESTS: list[dict[str, Any]] = []


class _ChatHandler(BaseHTTPRequestHandler):
    reply = "The lever snaps to released and returns to rest; 3 gauges twitch as steam hisses."

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        REQUESTS.append(body)
        answer = {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": self.reply}}
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _ChatHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_llm_prompt_is_requested_sanitized_and_stored(
    server: str, tmp_path: Path, reactor: Scenario, turns: list[TurnVisual]
) -> None:
    REQUESTS.clear()
    writer = llm_prompt_writer("llm:compat:tiny-model", base_url=server)
    model = get_world_model("schematic", cache_dir=tmp_path, prompts=writer)
    clip = model.step_clip(reactor, turns[:1])
    assert clip.prompt.startswith("The lever snaps to released") and "3" not in clip.prompt
    assert clip.meta["prompts"] == "llm:compat:tiny-model"
    sent = REQUESTS[-1]
    assert sent["model"] == "tiny-model" and "open relief valve" in sent["messages"][1]["content"]
    assert "62" not in sent["messages"][1]["content"]  # the feedback's numbers are not sent either
    template = get_world_model("schematic", cache_dir=tmp_path).step_clip(reactor, turns[:1])
    assert template.key != clip.key  # a different prompt writer is a different clip


def test_llm_failure_is_a_clear_error(reactor: Scenario, turns: list[TurnVisual]) -> None:
    from conflictbench_app.agents.chat import get_chat_client

    chat = get_chat_client("compat:m", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=2)
    with pytest.raises(WorldModelError, match=r"prompt model failed .*use --prompts template"):
        LLMPrompts(chat).step_prompt(reactor, turns[:1])
    with pytest.raises(WorldModelError, match="Unknown prompt mode"):
        llm_prompt_writer("gpt-4o")
