"""Fixtures for the reliability tests: the loopback LLM server, no real keys, and a project scenario."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conflictbench_app.agents.fake_server import FakeLLMServer

SECRET = "sk-test-LEAKCHECK-21a7c0de9b"  # a distinctive fake key: the tests search for it everywhere


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture(autouse=True)
def no_real_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "DASHSCOPE_API_KEY", "DEEPSEEK_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OPENAI_COMPAT_API_KEY", raising=False)
    monkeypatch.setenv("CONFLICTBENCH_NO_KEYRING", "1")
