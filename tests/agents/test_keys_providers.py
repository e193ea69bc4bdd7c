"""Keys (environment, keyring, no keyring), provider profiles (built-in and from the settings file), pricing."""

from __future__ import annotations

import threading
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend

from conflictbench_app.agents import keys
from conflictbench_app.agents.chat import get_chat_client
from conflictbench_app.agents.pricing import estimate_run, price_for
from conflictbench_app.agents.providers import get_profile, split_spec
from conflictbench_app.agents.registry import get_agent
from conflictbench_app.errors import AgentError
from conflictbench_app.settings import get_settings

from .conftest import SECRET


class MemoryKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def __init__(
        self, store: dict[tuple[str, str], str] | None = None, block: threading.Event | None = None
    ) -> None:
        super().__init__()
        self.store = store or {}
        self.block = block

    def get_password(self, service: str, username: str) -> str | None:
        if self.block is not None:
            self.block.wait(10)
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.store.pop((service, username), None)


@pytest.fixture
def with_keyring(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("CONFLICTBENCH_NO_KEYRING")
    previous = keyring.get_keyring()

    def use(backend: KeyringBackend) -> None:
        keyring.set_keyring(backend)

    yield use
    keyring.set_keyring(previous)


def test_env_var_wins_and_repr_hides_the_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    found = keys.find_key("openai", "OPENAI_API_KEY")
    assert found.value == SECRET and found.source == "env:OPENAI_API_KEY"
    assert SECRET not in repr(found) and SECRET not in str(found)


def test_keyring_lookup(with_keyring) -> None:
    with_keyring(MemoryKeyring({("conflictbench", "deepseek"): SECRET}))
    found = keys.find_key("deepseek", "DEEPSEEK_API_KEY")
    assert (found.value, found.source) == (SECRET, "keyring")


def test_no_keyring_backend_is_not_an_error(with_keyring) -> None:
    from keyring.backends import fail

    with_keyring(fail.Keyring())
    found = keys.find_key("openai", "OPENAI_API_KEY")
    assert not found.found and "no OS keyring backend" in found.note


def test_blocking_keyring_does_not_hang(with_keyring) -> None:
    release = threading.Event()
    with_keyring(MemoryKeyring(block=release))
    value, note = keys.keyring_lookup("openai", timeout=0.2)
    release.set()
    assert value is None and "did not answer" in note


def test_missing_key_for_a_cloud_profile_says_what_to_do() -> None:
    with pytest.raises(AgentError, match="set OPENAI_API_KEY or run `keyring set conflictbench openai`"):
        get_chat_client("openai:gpt-4o")


def test_specs_profiles_and_aliases() -> None:
    assert split_spec("ollama:llama3.2-vision:11b") == ("ollama", "llama3.2-vision:11b")
    assert get_profile("qwen").name == "dashscope" and get_profile("qwen").video_format == "frames"
    assert not get_profile("deepseek").vision
    assert get_profile("openai", "http://127.0.0.1:5/v1/").base_url == "http://127.0.0.1:5/v1"
    with pytest.raises(AgentError, match="carries credentials"):
        get_profile("compat", "https://user:pw@llm.example/v1")
    with pytest.raises(AgentError, match="needs --base-url"):
        get_profile("compat")
    with pytest.raises(AgentError, match="names no model"):
        split_spec("openai")
    with pytest.raises(AgentError, match="Unknown agent"):
        get_agent("nosuch:model")


def test_settings_file_adds_a_profile_and_prices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = tmp_path / "settings.toml"
    settings.write_text(
        '[providers.lab]\nbase_url = "https://llm.lab.example/v1"\nkey_env = "LAB_KEY"\nvision = false\n\n'
        '[prices."lab-model"]\ninput = 1.0\noutput = 2.0\n'
    )
    monkeypatch.setenv("CONFLICTBENCH_SETTINGS", str(settings))
    get_settings.cache_clear()
    profile = get_profile("lab")
    assert (profile.base_url, profile.key_env, profile.vision) == (
        "https://llm.lab.example/v1",
        "LAB_KEY",
        False,
    )
    with pytest.raises(AgentError, match="set LAB_KEY"):
        get_agent("lab:lab-model")
    monkeypatch.setenv("LAB_KEY", SECRET)
    agent = get_agent("lab:lab-model", timeout=5)
    assert agent.name == "lab:lab-model"
    agent.close()
    assert price_for("lab-model-v2") == price_for("lab-model") and price_for("lab-model").input == 1.0


def test_prices_by_longest_prefix_and_estimates() -> None:
    assert price_for("gpt-4o-mini-2024-07-18").input == 0.15
    assert price_for("gpt-4o-2024-08-06").input == 2.50
    assert price_for("Qwen/Qwen3-VL-30B-A3B-Instruct") == price_for("qwen3-vl-30b-a3b")
    assert price_for("my-local-model") is None
    text = estimate_run("gpt-4o", [2000] * 3, turns=14)
    images = estimate_run("gpt-4o", [2000] * 3, turns=14, images_per_turn=4)
    assert text.calls == 42 and images.prompt_tokens == text.prompt_tokens + 42 * 4 * 85
    assert 0 < text.cost_usd < images.cost_usd
    assert estimate_run("my-local-model", [2000], 10).cost_usd is None
