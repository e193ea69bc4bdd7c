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
