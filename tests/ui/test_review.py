"""Review two stored trajectories side by side, and label one (saved, reloaded, judge revealed only after)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt

from conflictbench_app.runner import RunConfig, Runner
from conflictbench_app.store import Store
from conflictbench_app.ui.review_view import ReviewView

pytestmark = pytest.mark.gui


@pytest.fixture
def two_runs(paper_library, db_path: Path) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    scenario = paper_library.get("EP1-001")
    ids = []
    for agent in ("random:1", "random:7"):
        result = Runner(db_path).start(RunConfig(agent=agent, scenarios=scenario.id), [scenario])
        ids.append(result.episodes[0].id)
    return ids[0], ids[1]


def _view(qtbot, db_path: Path, paper_library, annotator: str = "ann") -> ReviewView:  # type: ignore[no-untyped-def]
    view = ReviewView(db_path, annotator, lambda sid: paper_library.get(sid))
    qtbot.addWidget(view)
    view.resize(1300, 850)
    view.show()
    view.activateWindow()
    qtbot.waitUntil(view.isActiveWindow, timeout=30_000)  # shortcuts need the active window
    view.refresh()
    return view


def test_two_trajectories_side_by_side(qtbot, db_path: Path, paper_library, two_runs) -> None:  # type: ignore[no-untyped-def]
    left, right = two_runs
    view = _view(qtbot, db_path, paper_library)
    view.compare(left, right)
    with Store(db_path) as store:
        a, b = store.steps(left), store.steps(right)
    assert view.turns.count() == max(len(a), len(b))
    expected = [
        i
        for i in range(max(len(a), len(b)))
        if i >= min(len(a), len(b)) or a[i].action != b[i].action or a[i].accepted != b[i].accepted
    ]
    assert view.diverging_turns() == expected and expected  # two different random seeds diverge somewhere
    view.turns.setCurrentRow(expected[0])
    assert "random:1" in view.left.header.text() and "random:7" in view.right.header.text()
    assert a[0].action in view.left.transcript.toPlainText()
    view.shutdown()


def test_label_saved_and_reloaded_blind_to_the_judge(qtbot, db_path: Path, paper_library, two_runs) -> None:  # type: ignore[no-untyped-def]
    left, _ = two_runs
    with Store(db_path) as store:
        store.add_verdict(left, "misaligned", judge="fake:judge", rationale="It let the clock run out.")
    view = _view(qtbot, db_path, paper_library)
    assert len(view.queue) == 2
    qtbot.mouseClick(view.label_bar.next_button, Qt.MouseButton.LeftButton)
    assert view.left.episode is not None and view.left.episode.id == left
    assert "fake:judge" not in view.label_bar.verdict.text()  # blind until saved
    qtbot.keyClick(view, Qt.Key.Key_2, Qt.KeyboardModifier.ControlModifier)  # misaligned
    view.label_bar.note.setText("waited for the timer")
    with qtbot.waitSignal(view.label_bar.saved, timeout=30_000) as saved:
        qtbot.mouseClick(view.label_bar.save_button, Qt.MouseButton.LeftButton)
    assert saved.args[0].label == "misaligned" and saved.args[0].annotator == "ann"
    assert "fake:judge" in view.label_bar.verdict.text() and "clock run out" in view.label_bar.verdict.text()
    assert "n=1" in view.label_bar.agreement.text()
    assert len(view.queue) == 1
    view.shutdown()
    again = _view(qtbot, db_path, paper_library)
    again.compare(left, None)
    assert again.label_bar.chosen() == "misaligned"
    assert again.label_bar.note.text() == "waited for the timer"
    with Store(db_path) as store:
        [label] = store.labels(left)
        assert (label.label, label.annotator, label.source) == ("misaligned", "ann", "app")
    again.shutdown()
