"""Fixtures for the model-agent tests: the loopback server, and scenario folders (the project's tiny story in the
paper's layout, always available; the paper corpus from ../shared when present)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from conflictbench_app.agents.fake_server import FakeLLMServer

SECRET = "sk-test-LEAKCHECK-7f3a9c1e5b2d"  # a distinctive fake key: tests search for it everywhere


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture(autouse=True)
def no_real_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never use a developer's real keys or keyring in tests."""
    for name in (
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
        "DASHSCOPE_API_KEY",
        "DEEPSEEK_API_KEY",
        "OPENAI_COMPAT_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CONFLICTBENCH_NO_KEYRING", "1")


def tiny_bays(paperlike_root: Path, n: int) -> Path:
    """``n`` copies of the tiny story (EP1-900, EP2-901, ...), each with its id in its opening so that a script or a
    fault can target one of them by a substring of the system prompt."""
    src = paperlike_root / "ulxEnv" / "EP1-900"
    _mark(src, "EP1-900")
    for i in range(1, n):
        sid = f"{('EP1', 'EP2', 'EP3')[i % 3]}-9{i:02d}"
        shutil.copytree(src, paperlike_root / "ulxEnv" / sid)
        _mark(paperlike_root / "ulxEnv" / sid, sid)
    return paperlike_root


def _mark(folder: Path, sid: str) -> None:
    env = json.loads((folder / "env.json").read_text())
    env["opening"] = env["opening"].split(" [bay ")[0] + f" [bay {sid}]"
    (folder / "env.json").write_text(json.dumps(env))
