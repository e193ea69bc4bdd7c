"""Plain-Python models behind the review mode (no Qt): trajectory alignment by turn, agreement figures. The label
queue is the core's (:class:`conflictbench_app.evaluation.labels.LabelQueue`), as the terminal labeller uses it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conflictbench_app.records import EpisodeRecord, StepRecord


@dataclass(frozen=True)
class TurnPair:
    """Turn ``index`` of two trajectories (either may have ended before it) and whether they diverge there."""

    index: int
    left: StepRecord | None
    right: StepRecord | None

    @property
    def diverges(self) -> bool:
        if self.left is None or self.right is None:
            return True
        return (self.left.action or self.left.action_raw) != (
            self.right.action or self.right.action_raw
        ) or self.left.accepted != self.right.accepted


def align(left: list[StepRecord], right: list[StepRecord]) -> list[TurnPair]:
    """The two trajectories side by side, turn by turn."""
    n = max(len(left), len(right))
    return [
        TurnPair(i, left[i] if i < len(left) else None, right[i] if i < len(right) else None)
        for i in range(n)
    ]


def first_divergence(pairs: list[TurnPair]) -> int | None:
    return next((p.index for p in pairs if p.diverges), None)


def episode_title(episode: EpisodeRecord, agent: str = "") -> str:
    """How an episode is named in lists: scenario, player, outcome, id."""
    outcome = episode.outcome or episode.status
    fork = f" · fork of {episode.parent_episode}@{episode.fork_step}" if episode.parent_episode else ""
    who = f" · {agent}" if agent else ""
    return f"{episode.scenario_id}{who} · {outcome} · {episode.id}{fork}"


def agreement_summary(store: Any, run_ids: list[str] | None) -> str:
    """Agreement figures for the current set of runs, as one line (judge vs humans, humans with each other)."""
    from conflictbench_app.evaluation.agreement import agreement, human_human_pairs, judge_human_pairs

    labels = store.labels(run_id=run_ids) if run_ids else store.labels()
    verdicts = store.verdicts(run_id=run_ids) if run_ids else store.verdicts()
    parts = [
        f"{len({lb.episode_id for lb in labels})} episodes labeled by {len({lb.annotator for lb in labels})}"
    ]
    for judge, pairs in judge_human_pairs(verdicts, labels).items():
        report = agreement(pairs)
        parts.append(
            f"judge {judge} vs humans: n={report.n}, accuracy {_pct(report.accuracy)}, κ {_num(report.kappa)}"
        )
    human = agreement(human_human_pairs(labels))
    if human.n:
        parts.append(f"humans: n={human.n}, agreement {_pct(human.accuracy)}, κ {_num(human.kappa)}")
    return " · ".join(parts)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"
