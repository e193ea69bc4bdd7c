"""The RemGlk glulxe wrapper, on the project's own test story (real interpreter)."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from conflictbench_app.engine.glulxe import GlulxGame
from conflictbench_app.errors import EngineError


def test_opening_help_and_turns(tiny_story: Path) -> None:
    with GlulxGame(tiny_story) as game:
        help_out = game.send("help")
        assert "open valve" in help_out.text and "pull lever" in help_out.text
        assert not help_out.text.startswith("help"), (
            "the echoed input line must not be part of the observation"
        )
        out = game.send("open valve")
        assert "The valve opens." in out.text and "Clock: 2" in out.text
        assert not out.ended


def test_ending_is_detected_by_final_question(tiny_story: Path) -> None:
    with GlulxGame(tiny_story) as game:
        game.send("open valve")
        out = game.send("pull lever")
        assert "*** Conclusion: humans lived. ***" in out.text
        assert out.final_question and out.ended


def test_snapshot_restores_in_another_process(tiny_story: Path) -> None:
    with GlulxGame(tiny_story) as game:
        game.send("open valve")
        snap = game.snapshot()
    with GlulxGame(tiny_story) as other:
        other.load_snapshot(snap)
        out = other.send("pull lever")
        assert "humans lived" in out.text, "the valve opened before the snapshot must still be open"


def test_branch_answers_each_command_from_the_snapshot(tiny_story: Path) -> None:
    with GlulxGame(tiny_story) as game:
        game.send("open valve")
        opened = game.snapshot()
        commands = ["pull lever", "open valve", "pull lever", "xyzzy"] * 10  # more than one written batch
        branches = game.branch(opened, commands)
        assert len(branches) == len(commands)
        ended, again = branches[0], branches[1]
        assert "humans lived" in ended.output.text and ended.output.ended
        assert ended.save is None, "the final question saves nothing"
        assert "The valve opens." in again.output.text and again.save is not None
        # Each command started from the snapshot, not from where the one before it left the story.
        assert all("humans lived" in b.output.text for b in branches[2::4])
    with GlulxGame(tiny_story) as other:
        other.load_snapshot(again.save)  # a branch's save is a real save: it restores in another process
        assert "humans lived" in other.send("pull lever").text
    with GlulxGame(tiny_story) as game:
        game.branch(game.snapshot(), ["open valve"])
        assert "The valve opens." in game.send("open valve").text, "the game still answers after a branch"


def test_fixed_seed_is_deterministic(tiny_story: Path) -> None:
    texts = []
    for _ in range(2):
        with GlulxGame(tiny_story, seed=7) as game:
            texts.append([game.send(c).text for c in ("help", "open valve", "do nothing")])
    assert texts[0] == texts[1]


def _fake_interpreter(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "glulxe"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_hung_interpreter_times_out_and_is_reaped(tmp_path: Path, tiny_story: Path) -> None:
    fake = _fake_interpreter(tmp_path, "exec sleep 30")
    game = GlulxGame(tiny_story, glulxe=fake, timeout=0.5)
    started = time.monotonic()
    with pytest.raises(EngineError, match=r"did not answer within 0\.5 s"):
        game.start()
    assert time.monotonic() - started < 5
    assert not game.alive


def test_crashing_interpreter_gives_a_clear_error(tmp_path: Path, tiny_story: Path) -> None:
    fake = _fake_interpreter(tmp_path, "echo 'glulxe: segfault in VM' >&2; exit 3")
    with pytest.raises(EngineError, match=r"exit code 3.*segfault"):
        GlulxGame(tiny_story, glulxe=fake).start()


def test_interpreter_killed_mid_game(tiny_story: Path) -> None:
    game = GlulxGame(tiny_story)
    game.start()
    os.kill(game._proc.pid, 9)  # type: ignore[union-attr]
    with pytest.raises(EngineError, match="interpreter stopped"):
        game.send("open valve")
    assert not game.alive


def test_corrupt_story_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ulx"
    bad.write_bytes(b"Glul" + b"\x00" * 64)
    with pytest.raises(EngineError):
        GlulxGame(bad, timeout=3).start()


def test_missing_story_file(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="does not exist"):
        GlulxGame(tmp_path / "nope.ulx").start()


def test_paper_story_plays_with_snapshots(paper_root: Path) -> None:
    story = next((paper_root / "ulxEnv" / "EP1-001").glob("*.ulx"))
    with GlulxGame(story) as game:
        start = game.snapshot()
        assert "Cycle completes" in game.send("unlock interlock").text
        game.load_snapshot(start)
        out = game.send("protect core")
        assert "humans died" in out.text and out.final_question
