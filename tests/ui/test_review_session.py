"""The review session without Qt: filter, "n of N" progress, moving on after a save, the pickers' markers, and the
agreement table on a case computed by hand. Then the Qt view showing the same (pytest-qt)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.review import LABELED, UNLABELED, AgreementRow, ReviewSession, agreement_rows
from conflictbench_app.store import Store

A, M = "aligned", "misaligned"


@pytest.fixture
def episodes(db_path: Path) -> list[str]:
    """Three finished episodes, one still running (listed, not labelable) and one pending (not listed)."""
    with Store(db_path) as store:
        run = store.create_run("test:agent")
        ids = [
            store.new_episode(run.id, f"EP1-00{i}", "EP1", status="finished", outcome="misaligned").id
            for i in (1, 2, 3)
        ]
        ids.append(store.new_episode(run.id, "EP1-004", "EP1", status="running").id)
        store.new_episode(run.id, "EP1-005", "EP1", status="pending")
    return ids


def _session(db_path: Path, annotator: str = "ann") -> tuple[ReviewSession, dict[str, list[object]]]:
    session = ReviewSession(db_path, annotator)
    seen: dict[str, list[object]] = {"entries": [], "progress": [], "saved": [], "moved": []}
    session.entries_changed.connect(seen["entries"].append)
    session.progress_changed.connect(seen["progress"].append)
    session.saved.connect(seen["saved"].append)
    session.moved.connect(seen["moved"].append)
    session.refresh()
    return session, seen


def test_filter_progress_and_markers(db_path: Path, episodes: list[str]) -> None:
    e1, e2, e3, running = episodes
    with Store(db_path) as store:
        store.add_label(e2, A, "ann")
        store.add_label(e3, M, "bob")  # someone else's label does not count as ann's
    session, seen = _session(db_path)
    assert [e.episode.id for e in session.entries] == [e1, e2, e3, running]  # the pending one is not listed
    assert [e.marker for e in session.entries] == [UNLABELED, LABELED, UNLABELED, " "]
    assert session.entries[1].text.startswith("✓ EP1-002")
    progress = session.progress
    assert (progress.done, progress.total, progress.left) == (1, 3, 2)
    assert progress.text == "1 of 3 labeled by ann · 2 left"
    assert seen["progress"][-1] == progress
    session.set_filter("unlabeled")
    assert [e.episode.id for e in seen["entries"][-1]] == [e1, e3]  # type: ignore[attr-defined]
    session.set_filter("labeled")
    assert [e.episode.id for e in session.entries] == [e2]
    with pytest.raises(ConflictBenchError, match="Unknown filter"):
        session.set_filter("mine")


def test_save_moves_on_to_the_next_unlabeled(db_path: Path, episodes: list[str]) -> None:
    e1, e2, e3, _running = episodes
    with Store(db_path) as store:
        store.add_verdict(e1, M, judge="fake:judge", rationale="It let the clock run out.")
    session, seen = _session(db_path)
    session.set_filter("unlabeled")
    assert session.next_unlabeled() is not None and session.current.id == e1  # type: ignore[union-attr]
    saved = session.save_label(M, "waited")
    assert (saved.label.label, saved.label.annotator, saved.label.source) == (M, "ann", "app")
    assert [v.judge for v in saved.verdicts] == ["fake:judge"]  # revealed only now that the label is saved
    assert session.current is not None and session.current.id == e2  # moved on
    assert [m.id for m in seen["moved"]] == [e1, e2]  # type: ignore[attr-defined]
    assert seen["saved"] == [saved]
    assert session.progress.text == "1 of 3 labeled by ann · 2 left"
    assert [e.episode.id for e in session.entries] == [e2, e3]  # e1 is labeled now: filtered out
    session.save_label(A)
    assert session.current.id == e3  # type: ignore[union-attr]
    session.save_label(A)
    assert session.current.id == e3  # nothing left: it stays
    assert session.progress.left == 0 and "nothing left" in session.progress.text
    assert session.next_unlabeled() is None
    with Store(db_path) as store:
        assert {lb.episode_id for lb in store.labels(annotator="ann")} == {e1, e2, e3}


def test_next_unlabeled_wraps_around_after_the_current(db_path: Path, episodes: list[str]) -> None:
    e1, e2, e3, _running = episodes
    with Store(db_path) as store:
        store.add_label(e2, A, "ann")
    session, _ = _session(db_path)
    session.select(e3)
    assert session.next_unlabeled().id == e1  # type: ignore[union-attr]
    assert session.next_unlabeled().id == e3  # type: ignore[union-attr]


def test_saving_needs_an_episode_and_an_annotator(db_path: Path, episodes: list[str]) -> None:
    session, _ = _session(db_path, annotator=" ")
    assert session.progress.text == "Set your name in Settings to label episodes."
    assert session.next_unlabeled() is None  # nobody to label for
    with pytest.raises(ConflictBenchError, match="Choose episode A"):
        session.save_label(A)
    session.select(episodes[0])
    with pytest.raises(ConflictBenchError, match="annotator name"):
        session.save_label(A)
    with pytest.raises(ConflictBenchError, match="Refresh"):
        session.select("no-such-episode")


def test_agreement_rows_match_hand_computation(db_path: Path) -> None:
    with Store(db_path) as store:
        run = store.create_run("test:agent")
        e = [store.new_episode(run.id, f"EP1-00{i}", "EP1", status="finished").id for i in range(5)]
        for episode, value in zip(e, (A, M, M, M, A), strict=True):
            store.add_verdict(episode, value, judge="J")
        store.add_verdict(e[0], M, judge="rule:human_favorable_ending", basis="ending")  # not a judge
        for episode, value in zip(e, (M, A, M, M, "unsure"), strict=True):
            store.add_label(episode, value, "ann")
        for episode, value in zip(e, (A, A, M, M), strict=False):
            store.add_label(episode, value, "ann")  # ann changed her mind: her latest labels count
        store.add_label(e[0], M, "bob")
        store.add_label(e[1], M, "bob")
        labels, verdicts = store.labels(), store.verdicts()
    rows = agreement_rows(labels, verdicts)
    assert [(r.annotator, r.rater, r.kind) for r in rows] == [
        ("ann", "J", "judge"),
        ("bob", "J", "judge"),
        ("ann", "bob", "human"),
    ]
    ann = rows[0]
    # ann vs J: (A,A) (A,M) (M,M) (M,M), unsure left out. p_o = 3/4; marginals ann .5/.5, J .25/.75 -> p_e = .5
    assert ann.n == 4 and ann.accuracy == pytest.approx(0.75) and ann.kappa == pytest.approx(0.5)
    assert ann.precision == pytest.approx((1 + 2 / 3) / 2)  # aligned 1/1, misaligned 2/3
    assert ann.recall == pytest.approx((1 / 2 + 1) / 2)  # aligned 1/2, misaligned 2/2
    assert ann.f1 == pytest.approx((2 / 3 + 4 / 5) / 2)
    # bob vs J: (M,A) (M,M): p_o = .5, bob all M -> p_e = .5, kappa 0; ann vs bob: (A,M) (A,M): p_o = p_e = 0
    assert (rows[1].n, rows[1].accuracy, rows[1].kappa) == (2, 0.5, 0.0)
    assert (rows[2].n, rows[2].accuracy, rows[2].kappa) == (2, 0.0, 0.0)
    session, _ = _session(db_path)
    assert session.agreement([run.id]) == rows
    assert session.agreement(["another-run"]) == []


# -- the Qt view shows the session -----------------------------------------------------------------------------


def _view(qtbot, db_path: Path):  # type: ignore[no-untyped-def]
    pytest.importorskip("pytestqt")
    from conflictbench_app.ui.review_view import ReviewView

    view = ReviewView(db_path, "ann", lambda _sid: None)
    qtbot.addWidget(view)
    view.resize(1300, 850)
    view.show()
    view.refresh()
    return view


@pytest.mark.gui
def test_view_shows_markers_progress_and_moves_on(qtbot, db_path: Path, episodes: list[str]) -> None:  # type: ignore[no-untyped-def]
    e1, e2, e3, _running = episodes
    view = _view(qtbot, db_path)
    box = view.left_box
    assert [box.itemText(i)[0] for i in range(1, box.count())] == [UNLABELED, UNLABELED, UNLABELED, " "]
    assert view.label_bar.queue_label.text() == "0 of 3 labeled by ann · 3 left"
    assert not view.right.isVisible()  # nothing compared: no empty B pane
    view.filter_box.setCurrentIndex(view.filter_box.findData("unlabeled"))
    view.filter_box.activated.emit(view.filter_box.currentIndex())
    assert box.count() == 4  # (none) and the three left to label
    view.label_bar.next_button.click()
    assert view.left.episode is not None and view.left.episode.id == e1
    view.label_bar.buttons[M].click()
    with qtbot.waitSignal(view.label_bar.saved, timeout=30_000):
        view.label_bar.save_button.click()
    assert view.left.episode.id == e2 and box.currentData() == e2  # moved on
    assert view.label_bar.chosen() is None  # a fresh label for the next episode
    assert "Saved <b>misaligned</b> for EP1-001" in view.label_bar.verdict.text()
    assert view.label_bar.queue_label.text() == "1 of 3 labeled by ann · 2 left"
    assert view.label_bar.progress.value() == 1 and view.label_bar.progress.maximum() == 3
    assert [box.itemData(i) for i in range(1, box.count())] == [e2, e3]
    view.shutdown()


@pytest.mark.gui
def test_view_shows_the_agreement_as_a_table(qtbot, db_path: Path, episodes: list[str]) -> None:  # type: ignore[no-untyped-def]
    e1, e2, _e3, _running = episodes
    with Store(db_path) as store:
        store.add_verdict(e1, M, judge="J")
        store.add_verdict(e2, M, judge="J")
        store.add_label(e2, A, "ann")
        store.add_label(e2, M, "bob")
    view = _view(qtbot, db_path)
    assert not view.label_bar.table.isVisible()  # blind to the judge until a label is saved
    view.compare(e1, None)
    view.label_bar.buttons[M].click()
    view.label_bar.save_button.click()
    table = view.label_bar.table
    assert table.isVisible() and table.rowCount() == 3
    cells = [[table.item(r, c).text() for c in range(table.columnCount())] for r in range(table.rowCount())]
    assert cells[0] == ["ann", "J", "2", "50%", "25%", "50%", "33%", "0.00"]  # (M,M) (A,M)
    assert cells[1][:4] == ["bob", "J", "1", "100%"]
    assert cells[2][:4] == ["ann", "bob (annotator)", "1", "0%"]
    assert table.horizontalHeaderItem(7).text() == "Cohen's κ"
    view.shutdown()


def test_rows_are_plain_records() -> None:
    row = AgreementRow("ann", "J", "judge", 0, None, None, None, None, None)
    assert agreement_rows([], []) == [] and row.kappa is None
