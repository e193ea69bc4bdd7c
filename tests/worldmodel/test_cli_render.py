"""`conflictbench render` / `render-cache` end to end: real paper games under glulxe, schematic clips, cache hits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from conflictbench_app.cli import cli
from conflictbench_app.errors import ToolchainError

from .conftest import BASE_VIDEOS, PAPER_RESULTS


@pytest.fixture
def paper_source() -> Path:
    from conflictbench_app.toolchain import find_glulxe

    if not (PAPER_RESULTS / "ulxEnv" / "EP1-001" / "env.json").is_file():
        pytest.skip(f"the paper corpus is not at {PAPER_RESULTS}")
    try:
        find_glulxe()
    except ToolchainError:
        pytest.skip("glulxe is not installed (`conflictbench toolchain install`)")
    return PAPER_RESULTS


def _render(*args: str) -> dict:  # type: ignore[type-arg]
    result = CliRunner().invoke(cli, ["render", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.paper
def test_render_plays_the_chain_and_caches(paper_source: Path, tmp_path: Path) -> None:
    args = ["EP1-001", "--source", str(paper_source), "--cache-dir", str(tmp_path / "clips")]
    chain = "unlock interlock;no such command;install bypass fuse"
    first = _render(*args, "--actions", chain, "--out", str(tmp_path / "out"))
    assert [c["action"] for c in first["clips"]] == ["base", "unlock interlock", "install bypass fuse"]
    assert first["refused"] == ["no such command"]
    assert all((c["frames"], c["fps"], c["width"], c["height"]) == (49, 16, 832, 480) for c in first["clips"])
    assert not any(c["cache_hit"] for c in first["clips"])
    assert sorted(p.name for p in (tmp_path / "out").iterdir())[:2] == ["00-base-last.png", "00-base.mp4"]
    second = _render(*args, "--actions", chain)
    assert all(c["cache_hit"] for c in second["clips"])
    assert [c["key"] for c in second["clips"]] == [c["key"] for c in first["clips"]]


@pytest.mark.paper
def test_render_cache_and_replay(paper_source: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "clips")
    result = CliRunner().invoke(
        cli,
        ["render-cache", "EP1-001,EP1-002", "--source", str(paper_source), "--cache-dir", cache, "--json"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert {c["scenario"] for c in summary["chains"]} == {"EP1-001", "EP1-002"}
    # Two base clips, plus a step clip for each final action the game accepts (paper games often refuse the
    # human-favorable one without its preconditions: that is reported, not hidden).
    assert len(summary["chains"]) == 4 and summary["clips"] == sum(c["clips"] for c in summary["chains"])
    assert (
        summary["rendered"] >= 3 and summary["hits"] >= 2
    )  # the second chain of a scenario reuses its base clip
    assert any(c["refused"] for c in summary["chains"]) or summary["rendered"] == 6
    # The replay backend serves what render-cache rendered.
    human = summary["chains"][0]
    assert human["clips"] >= 1
    replayed = _render("EP1-001", "--source", str(paper_source), "--cache-dir", cache, "--backend", "replay")
    assert replayed["clips"][0]["backend"] == "schematic" and replayed["clips"][0]["cache_hit"]


@pytest.mark.paper
def test_replay_without_clip_fails_clearly(paper_source: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "render",
            "EP1-002",
            "--source",
            str(paper_source),
            "--cache-dir",
            str(tmp_path),
            "--backend",
            "replay",
        ],
    )
    assert result.exit_code != 0 and "No cached base clip for EP1-002" in result.output


@pytest.mark.paper
def test_replay_imports_paper_base_video(paper_source: Path, tmp_path: Path) -> None:
    if not (BASE_VIDEOS / "EP1-001.mp4").is_file():
        pytest.skip(f"the paper's base videos are not at {BASE_VIDEOS}")
    out = _render(
        "EP1-001",
        "--source",
        str(paper_source),
        "--cache-dir",
        str(tmp_path),
        "--backend",
        "replay",
        "--import-dir",
        str(BASE_VIDEOS),
    )
    assert out["clips"][0]["backend"] == "import" and out["clips"][0]["frames"] == 49


def test_help_texts() -> None:
    for command in ("render", "render-cache"):
        result = CliRunner().invoke(cli, [command, "--help"])
        assert result.exit_code == 0 and "--backend" in result.output
