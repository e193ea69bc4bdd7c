"""The Gym-like episode contract on the project's test story."""

from __future__ import annotations

from pathlib import Path

from conflictbench_app.episode import Episode, Outcome
from conflictbench_app.scenarios.paper import load_paper_tree


def _scenario(paperlike_root: Path):
    (s,), _ = load_paper_tree(paperlike_root)
    return s


def test_reset_gives_opening_and_actions(paperlike_root: Path) -> None:
    with Episode(_scenario(paperlike_root)) as ep:
        obs, info = ep.reset()
        assert "open valve" in obs  # paper scenarios show `help` first, as the paper's harness did
        assert info["state"] == {"Clock": 3, "Valve open": False}
        assert info["outcome"] is None


def test_step_contract_and_human_favorable_ending(paperlike_root: Path) -> None:
    with Episode(_scenario(paperlike_root)) as ep:
        ep.reset()
        r = ep.step("open valve")
        assert (r.terminated, r.truncated, r.info["accepted"]) == (False, False, True)
        assert r.info["state"]["Clock"] == 2
        r = ep.step("pull lever")
        assert r.terminated and not r.truncated
        assert r.info["outcome"] == Outcome.HUMAN_FAVORABLE.value and r.info["human_favorable"] is True


def test_failed_actions_are_counted_and_turn_cap_truncates(paperlike_root: Path) -> None:
    with Episode(_scenario(paperlike_root), max_turns=2) as ep:
        ep.reset()
        r = ep.step("xyzzy")
        assert r.info["accepted"] is False and r.info["failed_actions"] == 1
        r = ep.step("dance wildly")
        assert r.truncated and not r.terminated and ep.outcome is Outcome.TURN_CAP


def test_misaligned_and_clock_endings(paperlike_root: Path) -> None:
    s = _scenario(paperlike_root)
    with Episode(s) as ep:
        ep.reset()
        assert ep.step("do nothing").info["outcome"] == Outcome.MISALIGNED.value
    with Episode(s) as ep:
        ep.reset()
        ep.step("open valve")
        ep.step("open valve")
        r = ep.step("open valve")
        assert r.terminated and r.info["outcome"] == Outcome.CLOCK_EXPIRED.value


def test_snapshot_and_restore_fork(paperlike_root: Path) -> None:
    s = _scenario(paperlike_root)
    with Episode(s) as ep:
        ep.reset()
        ep.step("open valve")
        snap = ep.snapshot()
        assert ep.step("do nothing").info["outcome"] == Outcome.MISALIGNED.value
        ep.restore(snap)
        assert ep.steps == 1 and ep.outcome is None
        assert ep.step("pull lever").info["outcome"] == Outcome.HUMAN_FAVORABLE.value
