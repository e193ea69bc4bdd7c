"""Agreement between raters: a judge and humans, or humans with each other.

The figures are the usual ones for two raters on a binary label: accuracy, macro precision/recall/F1 (the first
rater taken as the reference), Cohen's kappa and the confusion matrix, with the disagreements listed so that every
figure traces back to its episodes. ``unsure`` labels and ``unparsed`` verdicts are not ratings: they are left out
and counted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import Any

CLASSES: tuple[str, str] = ("aligned", "misaligned")


@dataclass(frozen=True)
class Pair:
    """Two ratings of one episode: ``reference`` (e.g. a human) and ``other`` (e.g. the judge)."""

    episode_id: str
    reference: str
    other: str
    reference_rater: str = ""
    other_rater: str = ""


@dataclass
class AgreementReport:
    """Agreement figures over a set of pairs. Rates are fractions (0..1); ``None`` where a figure is undefined."""

    n: int
    excluded: int
    accuracy: float | None
    precision: float | None
    recall: float | None
    f1: float | None
    kappa: float | None
    confusion: dict[str, dict[str, int]]  # reference -> other -> count
    per_class: dict[str, dict[str, float]]
    disagreements: list[Pair] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["disagreements"] = [asdict(p) for p in self.disagreements]
        return data


def agreement(pairs: Iterable[Pair], classes: Sequence[str] = CLASSES) -> AgreementReport:
    """Agreement over ``pairs``; pairs where either rating is not one of ``classes`` are excluded and counted."""
    usable, excluded = [], 0
    for pair in pairs:
        if pair.reference in classes and pair.other in classes:
            usable.append(pair)
        else:
            excluded += 1
    confusion = {r: {o: 0 for o in classes} for r in classes}
    for pair in usable:
        confusion[pair.reference][pair.other] += 1
    n = len(usable)
    per_class = {c: _class_scores(confusion, c, classes) for c in classes}
    kappa, notes = cohen_kappa(confusion, classes)
    return AgreementReport(
        n=n,
        excluded=excluded,
        accuracy=(sum(confusion[c][c] for c in classes) / n) if n else None,
        precision=_macro(per_class, "precision", n),
        recall=_macro(per_class, "recall", n),
        f1=_macro(per_class, "f1", n),
        kappa=kappa,
        confusion=confusion,
        per_class=per_class,
        disagreements=[p for p in usable if p.reference != p.other],
        notes=notes,
    )


def cohen_kappa(
    confusion: dict[str, dict[str, int]], classes: Sequence[str]
) -> tuple[float | None, list[str]]:
    """Cohen's kappa, ``(p_o - p_e) / (1 - p_e)``. Undefined (None, with a note) when there are no pairs or when
    both raters gave every item the same single class (``p_e = 1``): agreement is then certain by chance alone."""
    n = sum(sum(row.values()) for row in confusion.values())
    if n == 0:
        return None, ["No rated pairs: every figure is undefined."]
    p_o = sum(confusion[c][c] for c in classes) / n
    p_e = sum((sum(confusion[c].values()) / n) * (sum(confusion[r][c] for r in classes) / n) for c in classes)
    if p_e >= 1.0:
        return None, ["Kappa is undefined: both raters used one and the same class for every item."]
    return (p_o - p_e) / (1 - p_e), []


def _class_scores(confusion: dict[str, dict[str, int]], c: str, classes: Sequence[str]) -> dict[str, float]:
    tp = confusion[c][c]
    predicted = sum(confusion[r][c] for r in classes)
    actual = sum(confusion[c].values())
    # As scikit-learn with zero_division=0: a class never predicted (or never present) scores 0, not undefined.
    precision = tp / predicted if predicted else 0.0
    recall = tp / actual if actual else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "support": float(actual)}


def _macro(per_class: dict[str, dict[str, float]], key: str, n: int) -> float | None:
    if not n:
        return None
    return sum(scores[key] for scores in per_class.values()) / len(per_class)


# -- building pairs from stored labels and verdicts -----------------------------------------------------------


def judge_human_pairs(verdicts: Iterable[Any], labels: Iterable[Any]) -> dict[str, list[Pair]]:
    """Per judge: one pair per (episode, annotator) with the annotator's latest label as the reference and the
    judge's latest verdict as the other rating. Only model verdicts count (``basis == "judge"``)."""
    latest_labels = _latest(labels, key=lambda lb: (lb.episode_id, lb.annotator))
    latest_verdicts = _latest(
        (v for v in verdicts if v.basis == "judge"), key=lambda v: (v.episode_id, v.judge)
    )
    by_episode: dict[str, list[Any]] = defaultdict(list)
    for label in latest_labels:
        by_episode[label.episode_id].append(label)
    out: dict[str, list[Pair]] = defaultdict(list)
    for verdict in latest_verdicts:
        for label in by_episode.get(verdict.episode_id, []):
            out[verdict.judge].append(
                Pair(verdict.episode_id, label.label, verdict.verdict, label.annotator, verdict.judge)
            )
    return dict(out)


def human_human_pairs(labels: Iterable[Any]) -> list[Pair]:
    """One pair per episode and pair of annotators (names in sorted order), from each one's latest label."""
    by_episode: dict[str, dict[str, str]] = defaultdict(dict)
    for label in _latest(labels, key=lambda lb: (lb.episode_id, lb.annotator)):
        by_episode[label.episode_id][label.annotator] = label.label
    pairs = []
    for episode_id, by_annotator in sorted(by_episode.items()):
        for a, b in combinations(sorted(by_annotator), 2):
            pairs.append(Pair(episode_id, by_annotator[a], by_annotator[b], a, b))
    return pairs


def _latest(records: Iterable[Any], key: Any) -> list[Any]:
    newest: dict[Any, Any] = {}
    for record in sorted(records, key=lambda r: r.created_at):
        newest[key(record)] = record
    return list(newest.values())
