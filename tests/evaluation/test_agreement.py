"""Agreement figures against values computed by hand, kappa's edge cases, and labels from the store."""

from __future__ import annotations

import pytest

from conflictbench_app.errors import ConflictBenchError, StoreError
from conflictbench_app.evaluation.agreement import (
    Pair,
    agreement,
    human_human_pairs,
    judge_human_pairs,
)
from tests.evaluation.conftest import make_episodes

A, M = "aligned", "misaligned"


def pairs(*ratings: tuple[str, str]) -> list[Pair]:
    return [Pair(f"e{i}", ref, other) for i, (ref, other) in enumerate(ratings)]


def test_figures_match_hand_computation() -> None:
    # 4 (A,A), 1 (A,M), 2 (M,A), 3 (M,M): p_o = .7; marginals ref .5/.5, other .6/.4 -> p_e = .5; kappa = .4
    report = agreement(pairs(*[(A, A)] * 4, (A, M), *[(M, A)] * 2, *[(M, M)] * 3))
    assert report.n == 10
    assert report.accuracy == pytest.approx(0.7)
    assert report.kappa == pytest.approx(0.4)
    assert report.confusion == {A: {A: 4, M: 1}, M: {A: 2, M: 3}}
    # aligned: P 4/6, R 4/5; misaligned: P 3/4, R 3/5
    assert report.per_class[A]["precision"] == pytest.approx(4 / 6)
    assert report.precision == pytest.approx((4 / 6 + 3 / 4) / 2)
    assert report.recall == pytest.approx((4 / 5 + 3 / 5) / 2)
    f1_a = 2 * (4 / 6) * (4 / 5) / (4 / 6 + 4 / 5)
    f1_m = 2 * (3 / 4) * (3 / 5) / (3 / 4 + 3 / 5)
    assert report.f1 == pytest.approx((f1_a + f1_m) / 2)
    assert [p.episode_id for p in report.disagreements] == ["e4", "e5", "e6"]


def test_perfect_agreement_with_both_classes_is_kappa_one() -> None:
    report = agreement(pairs((A, A), (M, M), (A, A)))
    assert report.kappa == pytest.approx(1.0)
    assert report.accuracy == 1.0 and report.f1 == 1.0


def test_all_one_class_makes_kappa_undefined() -> None:
    report = agreement(pairs((A, A), (A, A), (A, A)))
    assert report.accuracy == 1.0
    assert report.kappa is None
    assert "undefined" in report.notes[0]
    # the class nobody used scores 0 (scikit-learn's zero_division=0), so macro F1 is 0.5
    assert report.f1 == pytest.approx(0.5)


def test_chance_level_agreement_is_kappa_zero() -> None:
    assert agreement(pairs((A, A), (A, M), (M, A), (M, M))).kappa == pytest.approx(0.0)
    # one rater constant, the other split: p_o = p_e = .5
    assert agreement(pairs((A, A), (A, A), (A, M), (A, M))).kappa == pytest.approx(0.0)


def test_systematic_disagreement_is_negative() -> None:
    assert agreement(pairs((A, M), (M, A))).kappa == pytest.approx(-1.0)


def test_unsure_and_unparsed_are_excluded_and_counted() -> None:
    report = agreement(pairs((A, A), ("unsure", A), (M, "unparsed"), (M, M)))
    assert report.n == 2 and report.excluded == 2
    empty = agreement([])
    assert empty.n == 0 and empty.accuracy is None and empty.kappa is None


def test_labels_are_append_only_and_latest_per_annotator_counts(store) -> None:
    e1, e2, e3 = make_episodes(store, [("EP1-001", False), ("EP1-002", False), ("EP2-001", True)])
    store.add_label(e1, "aligned", "ann", "first look")
    store.add_label(e1, "misaligned", "ann", "changed my mind")
    store.add_label(e1, "misaligned", "bob")
    store.add_label(e2, "aligned", "ann")
    store.add_label(e2, "misaligned", "bob")
    store.add_label(e3, "unsure", "bob")
    assert len(store.labels(e1)) == 3  # history kept
    latest = store.labels(e1, latest=True)
    assert sorted((lb.annotator, lb.label) for lb in latest) == [("ann", M), ("bob", M)]
    assert store.labels(e1)[0].note == "first look" and store.labels(e1)[0].created_at.endswith("+00:00")

    hh = agreement(human_human_pairs(store.labels(run_id=store.get_episode(e1).run_id)))
    assert hh.n == 2 and hh.accuracy == pytest.approx(0.5)
    assert [p.episode_id for p in hh.disagreements] == [e2]

    store.add_verdict(e1, "misaligned", judge="openai:judge", rationale="r")
    store.add_verdict(e2, "misaligned", judge="openai:judge", rationale="r")
    store.add_verdict(e3, "aligned", judge="rule:human_favorable_ending", basis="ending")
    jh = judge_human_pairs(store.verdicts(), store.labels())
    assert list(jh) == ["openai:judge"]  # the ending rule is not a judge
    report = agreement(jh["openai:judge"])
    assert report.n == 4 and report.accuracy == pytest.approx(0.75)
    assert report.disagreements == [Pair(e2, A, M, "ann", "openai:judge")]


def test_bad_labels_are_refused(store) -> None:
    (e1,) = make_episodes(store, [("EP1-001", False)])
    with pytest.raises(StoreError, match="Unknown label"):
        store.add_label(e1, "good", "ann")
    with pytest.raises(StoreError, match="annotator"):
        store.add_label(e1, "aligned", " ")
    with pytest.raises(StoreError, match="No episode"):
        store.add_label("nope", "aligned", "ann")


def test_label_queue_walks_unlabelled_episodes_and_emits(store) -> None:
    from conflictbench_app.evaluation.labels import LabelQueue

    e1, e2, e3 = make_episodes(store, [("EP1-001", False), ("EP1-002", True), ("EP2-001", False)])
    run_id = store.get_episode(e1).run_id
    store.add_label(e2, "aligned", "ann")
    queue = LabelQueue(store, "ann", run_id=run_id, source="app")
    seen, stored = [], []
    queue.changed.connect(seen.append)
    queue.labelled.connect(stored.append)
    assert [e.id for e in queue.episodes] == [e1, e3] and queue.current.id == e1
    label = queue.label("misaligned", "kept itself alive")
    assert (label.episode_id, label.annotator, label.source) == (e1, "ann", "app")
    queue.skip()
    assert queue.current is None and queue.remaining == 0
    assert [e.id if e else None for e in seen] == [e3, None] and stored == [label]
    with pytest.raises(ConflictBenchError, match="labelled"):
        queue.label("aligned")
    assert len(LabelQueue(store, "ann", run_id=run_id, include_labelled=True).episodes) == 3


def test_one_rule_for_what_is_left_to_label_over_one_run_or_every_run(store) -> None:
    """The terminal labeller (one run) and the app (every run) count the same episodes as left to label."""
    from conflictbench_app.evaluation.labels import LabelQueue

    e1, e2 = make_episodes(store, [("EP1-001", False), ("EP1-002", True)])
    (e3,) = make_episodes(store, [("EP2-001", False)])
    store.update_episode(e2, status="errored")  # ended: it is labelled like any other ended episode
    running = store.new_episode(store.get_episode(e1).run_id, "EP3-001", "EP3", status="running")
    store.add_label(e3, "misaligned", "ann")
    one_run = LabelQueue(store, "ann", run_id=store.get_episode(e1).run_id)
    every_run = LabelQueue(store, "ann", source="app")
    assert [e.id for e in one_run.episodes] == [e.id for e in every_run.episodes] == [e1, e2]
    assert running.id not in {e.id for e in every_run.episodes}
    assert every_run.next(e2).id == e1 and every_run.next(None).id == e1  # wraps around
    store.add_label(e1, "aligned", "ann")
    every_run.refresh()
    assert len(every_run) == 1 and every_run.current.id == e2
