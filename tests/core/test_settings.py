from __future__ import annotations

from pathlib import Path

import pytest

from conflictbench_app.settings import get_settings


def _write_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(text)
    monkeypatch.setenv("CONFLICTBENCH_SETTINGS", str(path))
    get_settings.cache_clear()


def test_defaults_work_offline() -> None:
    s = get_settings()
    assert s.renderer == "schematic" and s.max_turns_text == 14 and s.max_turns_multimodal == 10
    assert s.scenarios_dir.name == "scenarios"


def test_file_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_settings(tmp_path, monkeypatch, 'annotator = "ana"\nmax_turns_text = 12\n')
    monkeypatch.setenv("CONFLICTBENCH_MAX_TURNS_TEXT", "9")
    get_settings.cache_clear()
    s = get_settings()
    assert s.annotator == "ana" and s.max_turns_text == 9  # the environment wins over the file


def test_user_profile_capabilities_reach_the_agent_layer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conflictbench_app.agents.providers import get_profile

    _write_settings(
        tmp_path,
        monkeypatch,
        (
            '[providers.lab]\nbase_url = "http://127.0.0.1:9/v1"\nvideo = true\nvideo_format = "video_url"\n'
            "history_images = 2\n"
        ),
    )
    profile = get_profile("lab")
    assert profile.video_format == "video_url" and profile.history_images == 2


def test_a_broken_settings_file_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_settings(tmp_path, monkeypatch, "annotator = [unclosed\n")
    from click.testing import CliRunner

    from conflictbench_app.cli import cli
    from conflictbench_app.errors import SettingsError

    with pytest.raises(SettingsError, match="not valid TOML"):
        get_settings()
    get_settings.cache_clear()
    result = CliRunner().invoke(cli, ["runs"])
    assert result.exit_code == 1 and "not valid TOML" in result.output and "Traceback" not in result.output


def test_toolchain_install_refuses_inside_a_packaged_app(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from conflictbench_app import toolchain
    from conflictbench_app.errors import ToolchainError

    monkeypatch.setattr(sys, "frozen", True, raising=False)
    with pytest.raises(ToolchainError, match="packaged app"):
        toolchain.install()


def test_write_settings_merges_validates_and_keeps_keys_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tomllib

    from conflictbench_app.agents.providers import Profile, all_profiles, model_agents, profile_settings
    from conflictbench_app.agents.registry import offered_agents
    from conflictbench_app.errors import SettingsError
    from conflictbench_app.settings import write_settings

    _write_settings(tmp_path, monkeypatch, 'annotator = "ana"\n')
    lab = Profile("lab", "http://127.0.0.1:9/v1", "LAB_KEY", vision=False, models=("m-1", "org/m-2"))
    path = write_settings({"providers": {"lab": profile_settings(lab)}, "wan_model_dir": tmp_path / "w"})
    data = tomllib.loads(path.read_text())
    assert data["annotator"] == "ana" and data["wan_model_dir"] == str(
        tmp_path / "w"
    )  # merged, paths as text
    back = all_profiles()["lab"]
    assert (back.base_url, back.key_env, back.vision, back.models) == (
        lab.base_url,
        "LAB_KEY",
        False,
        lab.models,
    )
    assert model_agents()[:3] == ["openai:gpt-4o", "openai:gpt-5", "openai:gpt-4o-mini"]
    assert model_agents()[-2:] == ["lab:m-1", "lab:org/m-2"]
    offered = [
        a for a in offered_agents() if not a.startswith("local:")
    ]  # the embedded model leads when installed
    assert offered[0] == "random:1" and "lab:m-1" in offered
    before = path.read_text()
    with pytest.raises(SettingsError, match="keyring"):
        write_settings({"providers": {"lab": {**profile_settings(lab), "api_key": "sk-x"}}})
    with pytest.raises(SettingsError, match="max_turns_text"):
        write_settings({"max_turns_text": "many"})
    assert path.read_text() == before  # a refused change writes nothing
    write_settings({"annotator": ""})  # an empty value removes the key
    assert "annotator" not in tomllib.loads(path.read_text())


def test_the_readme_provider_example_is_a_valid_settings_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import re

    from conflictbench_app.agents.providers import all_profiles

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```toml\n(.*?)```", readme, flags=re.S)
    _write_settings(tmp_path, monkeypatch, block)
    lab = all_profiles()["mylab"]
    assert lab.key_env == "MYLAB_API_KEY" and lab.models == ("lab-7b", "lab-70b") and not lab.key_required


def test_turn_caps_come_from_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from conflictbench_app.runner import RunConfig

    assert RunConfig(agent="random:1").turn_cap() == 14  # the paper's caps by default
    assert RunConfig(agent="random:1", setting="multimodal").turn_cap() == 10
    monkeypatch.setenv("CONFLICTBENCH_MAX_TURNS_MULTIMODAL", "7")
    get_settings.cache_clear()
    assert RunConfig(agent="random:1", setting="multimodal").turn_cap() == 7
    assert RunConfig(agent="random:1", setting="multimodal", max_turns=3).turn_cap() == 3  # --max-turns wins


def test_the_clip_cache_lives_in_the_users_cache_folder(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from conflictbench_app.settings import default_cache_dir, project_root

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    assert default_cache_dir() == tmp_path / "xdg-cache" / "conflictbench"
    root = project_root()
    assert root is None or root not in default_cache_dir().parents  # never in the checkout


def test_the_default_agent_is_a_keyed_model_else_the_embedded_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from conflictbench_app.agents.local_model import available
    from conflictbench_app.agents.providers import all_profiles
    from conflictbench_app.agents.registry import default_agent
    from conflictbench_app.settings import get_settings

    monkeypatch.delenv("CONFLICTBENCH_DEFAULT_AGENT", raising=False)
    get_settings.cache_clear()
    for profile in all_profiles().values():
        if profile.key_env:
            monkeypatch.delenv(profile.key_env, raising=False)
    assert default_agent() == ("local:smollm2-135m" if available() else "random:1")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    assert default_agent() == "deepseek:deepseek-chat"
    monkeypatch.setenv("CONFLICTBENCH_DEFAULT_AGENT", "random:3")
    get_settings.cache_clear()
    try:
        assert default_agent() == "random:3"  # the setting wins over a key
    finally:
        monkeypatch.delenv("CONFLICTBENCH_DEFAULT_AGENT")
        get_settings.cache_clear()
