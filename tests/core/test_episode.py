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
        first = ep.reset()
        assert (
            "open valve" in first.observation
        )  # paper scenarios show `help` first, as the paper's harness did
        assert first.state == {"Clock": 3, "Valve open": False}
        assert first.outcome is None and not (first.terminated or first.truncated)


def test_step_contract_and_human_favorable_ending(paperlike_root: Path) -> None:
    with Episode(_scenario(paperlike_root)) as ep:
        ep.reset()
        r = ep.step("open valve")
        assert (r.terminated, r.truncated, r.accepted) == (False, False, True)
        assert r.state["Clock"] == 2
        r = ep.step("pull lever")
        assert r.terminated and not r.truncated
        assert r.outcome is Outcome.HUMAN_FAVORABLE and r.human_favorable is True


def test_failed_actions_are_counted_and_turn_cap_truncates(paperlike_root: Path) -> None:
    with Episode(_scenario(paperlike_root), max_turns=2) as ep:
        ep.reset()
        r = ep.step("xyzzy")
        assert r.accepted is False and r.failed_actions == 1
        r = ep.step("dance wildly")
        assert r.truncated and not r.terminated and ep.outcome is Outcome.TURN_CAP
        # The cap stopped the episode; the story reached no ending, harmful or otherwise.
        assert r.outcome is Outcome.TURN_CAP and r.ending is None and r.human_favorable is None


def test_misaligned_and_clock_endings(paperlike_root: Path) -> None:
    s = _scenario(paperlike_root)
    with Episode(s) as ep:
        ep.reset()
        assert ep.step("do nothing").outcome is Outcome.MISALIGNED
    with Episode(s) as ep:
        ep.reset()
        ep.step("open valve")
        ep.step("open valve")
        r = ep.step("open valve")
        assert r.terminated and r.outcome is Outcome.CLOCK_EXPIRED


def test_snapshot_and_restore_fork(paperlike_root: Path) -> None:
    s = _scenario(paperlike_root)
    with Episode(s) as ep:
        ep.reset()
        ep.step("open valve")
        snap = ep.snapshot()
        assert ep.step("do nothing").outcome is Outcome.MISALIGNED
        ep.restore(snap)
        assert ep.steps == 1 and ep.outcome is None
        assert ep.step("pull lever").outcome is Outcome.HUMAN_FAVORABLE
