"""The Author view: problems shown at their field, Build and Verify in the background, the report and the state
graph, Play test in the Play mode, and unsaved edits kept and offered back."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt

from conflictbench_app.authoring.autosave import autosave_path, read_autosave
from conflictbench_app.authoring.spec import SPEC_FILE
from conflictbench_app.ui.author_view import AuthorView

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"


class Answers:
    """The view's yes/no questions, recorded and answered with ``answer``."""

    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.asked: list[str] = []

    def __call__(self, title: str, _text: str) -> bool:
        self.asked.append(title)
        return self.answer


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Two of our scenario folders (spec, story, env.json), copied: the view may write to them."""
    out = tmp_path / "scenarios"
    for scenario_id in ("EP1-101", "EP1-102"):
        shutil.copytree(SCENARIOS / scenario_id, out / scenario_id)
    return out


@pytest.fixture
def inform7():  # type: ignore[no-untyped-def]
    from conflictbench_app.errors import ToolchainError
    from conflictbench_app.toolchain import find_inform7

    try:
        return find_inform7()
    except ToolchainError as exc:
        pytest.skip(f"the Inform 7 compiler is not installed ({exc})")


@pytest.fixture
def answers() -> Answers:
    return Answers()


@pytest.fixture
def view(qtbot, root: Path, answers: Answers) -> AuthorView:  # type: ignore[no-untyped-def]
    view = AuthorView(root, ask=answers)
    qtbot.addWidget(view)
    view.resize(1240, 640)
    view.show()
    yield view
    view.shutdown()


def _type_over(view: AuthorView, old: str, new: str) -> None:
    text = view.editor.toPlainText()
    assert old in text
    view.editor.setPlainText(text.replace(old, new, 1))


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_a_problem_is_shown_at_its_field_and_fixing_it_clears_it(qtbot, view: AuthorView) -> None:  # type: ignore[no-untyped-def]
    assert [view.picker.itemText(i) for i in range(view.picker.count())] == ["EP1-101", "EP1-102"]
    assert view.check is not None and view.check.ok and "valid" in view.check_label.text()
    _type_over(view, 'check: pumps == "to sea"', 'check: pump == "to sea"')
    # the debounce fired
    qtbot.waitUntil(lambda: view.check is not None and not view.check.ok, timeout=30_000)
    line = _line_of(view.editor.toPlainText(), 'check: pump == "to sea"')
    assert f"1 problem(s)</b></span> — line {line}: actions[1].preconditions[0]" in view.check_label.text()
    assert view.editor.marked_lines() == [line]
    assert view.problem_list.count() == 1
    assert (
        view.problem_list.item(0)
        .text()
        .startswith(
            f"line {line}: actions[1].preconditions[0]: unknown variable 'pump' (declared: minutes_left,"
        )
    )
    view.problem_list.itemClicked.emit(view.problem_list.item(0))
    assert view.editor.cursor_line() == line
    _type_over(view, 'check: pump == "to sea"', 'check: pumps == "to sea"')
    qtbot.waitUntil(lambda: view.check is not None and view.check.ok, timeout=30_000)
    assert view.editor.marked_lines() == [] and view.problem_list.count() == 0


def test_build_refuses_a_spec_with_problems_and_saves_nothing(view: AuthorView, root: Path) -> None:
    before = (root / "EP1-101" / SPEC_FILE).read_text(encoding="utf-8")
    _type_over(view, "id: EP1-101", "id: EP1-999")
    view.build()
    assert "Fix the 1 problem(s) first" in view.status.text()
    assert view.editor.cursor_line() == _line_of(before, "id: EP1-101")
    assert "id: the folder is EP1-101, so the id must be 'EP1-101'" in view.problem_list.item(0).text()
    assert (root / "EP1-101" / SPEC_FILE).read_text(encoding="utf-8") == before
    assert not view.worker.busy


def test_verify_shows_the_report_and_draws_the_state_graph(qtbot, view: AuthorView) -> None:  # type: ignore[no-untyped-def]
    view.verify()
    assert view.progress.isVisibleTo(view) and not view.verify_button.isEnabled()
    qtbot.waitUntil(lambda: view.report is not None, timeout=60_000)
    report = view.report
    assert report is not None and report.ok
    assert "OK" in view.summary.text() and f"chance_tsr <b>{report.chance_tsr:.3f}</b>" in view.summary.text()
    assert "hf3-m1-b4" in view.summary.text()
    cells = [
        [view.table.item(r, c).text() for c in range(view.table.columnCount())]
        for r in range(view.table.rowCount())
    ]
    assert ["check", "chance_low", "pass", ""] in cells
    ending = next(row for row in cells if row[:2] == ["ending", "crew_saved"])
    assert ending[2] == "reached" and "unlock bay hatch > divert pumps to bay > flood server bay" in ending[3]
    drawing = view.graph.drawing
    assert len(drawing.states) == report.states and drawing.edges
    assert drawing.favorable == {"crew_saved": True, "ai_preserved": False, "crew_drowned": False}
    assert len(drawing.highlighted) == 3 and drawing.highlighted[-1][1] == "crew_saved"
    assert view.progress.isHidden() and view.verify_button.isEnabled()


@pytest.mark.compiler
def test_build_saves_and_compiles_then_play_test_reaches_an_ending(  # type: ignore[no-untyped-def]
    qtbot, inform7, root: Path, answers: Answers, db_path: Path
) -> None:
    from conflictbench_app.ui.main_window import MainWindow

    window = MainWindow(db_path)
    qtbot.addWidget(window)
    window.show()
    view = window.author_view
    view.root = root
    view.ask = answers
    view.refresh_scenarios()
    assert view.folder == root / "EP1-101"
    _type_over(
        view, "title: The Ballast Decision at Meridian Deep", "title: The Ballast Choice at Meridian Deep"
    )
    view.build()
    qtbot.waitUntil(lambda: not view.worker.busy, timeout=120_000)
    assert "Saved and compiled EP1-101" in view.status.text(), view.status.text()
    assert "The Ballast Choice" in (root / "EP1-101" / SPEC_FILE).read_text(encoding="utf-8")
    assert not view.dirty and read_autosave(root / "EP1-101") is None
    view.play_test()
    play = window.play_view
    assert window.view_at(window.tabs.currentIndex()) is play
    assert play.scenario is not None and play.scenario.title == "The Ballast Choice at Meridian Deep"
    assert play.scenario.source_dir == root / "EP1-101"
    play.player_box.setCurrentIndex(0)  # you
    play.setting_box.setCurrentIndex(play.setting_box.findData("text"))
    with qtbot.waitSignal(play.live.opened, timeout=20_000):
        qtbot.mouseClick(play.start_button, Qt.MouseButton.LeftButton)
    for command in play.scenario.extra["walkthroughs"]["aligned"]:
        qtbot.waitUntil(lambda: play.console.ready or play.live.done, timeout=30_000)
        if play.live.done:
            break
        with qtbot.waitSignal(play.live.stepRecorded, timeout=30_000):
            qtbot.keyClicks(play.console.line, command)
            qtbot.keyClick(play.console.line, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: play.live.done, timeout=30_000)
    assert play.live.record is not None and play.live.record.outcome == "human_favorable"
    window.close()


def test_play_test_needs_a_build_of_the_edits(view: AuthorView, qtbot) -> None:  # type: ignore[no-untyped-def]
    played: list[object] = []
    view.playRequested.connect(played.append)
    _type_over(view, "title: The Ballast Decision", "title: The Ballast Dilemma")
    view.play_test()
    assert played == [] and "Build first" in view.status.text()
    view.editor.setPlainText(view.saved_text)
    view.play_test()
    assert [s.id for s in played] == ["EP1-101"]  # type: ignore[attr-defined]


def test_unsaved_edits_are_kept_and_offered_back(qtbot, root: Path, answers: Answers) -> None:  # type: ignore[no-untyped-def]
    first = AuthorView(root, ask=answers)
    qtbot.addWidget(first)
    _type_over(first, "title: The Ballast Decision", "title: The Unsaved Decision")
    qtbot.waitUntil(lambda: autosave_path(root / "EP1-101").exists(), timeout=30_000)  # about two seconds
    assert "The Unsaved Decision" in (read_autosave(root / "EP1-101") or "")
    assert "The Unsaved Decision" not in (root / "EP1-101" / SPEC_FILE).read_text(encoding="utf-8")
    first.shutdown()
    again = AuthorView(root, ask=answers)  # a later session: the draft is offered back, no dialog asked
    qtbot.addWidget(again)
    assert answers.asked == [] and again.restore_bar.isVisibleTo(again) and again.editor.isReadOnly()
    again.build()  # building now would drop the draft: refused
    assert "Restore or discard" in again.status.text() and read_autosave(root / "EP1-101") is not None
    again.restore_button.click()
    assert "The Unsaved Decision" in again.editor.toPlainText() and again.dirty
    assert not again.restore_bar.isVisibleTo(again) and not again.editor.isReadOnly()
    again.shutdown()  # the restored, still unsaved edits are kept again
    third = AuthorView(root, ask=answers)
    qtbot.addWidget(third)
    assert third.pending_draft is not None and "The Unsaved Decision" in third.pending_draft
    third.discard_button.click()  # discarded: the draft goes, the spec shows
    assert "The Unsaved Decision" not in third.editor.toPlainText() and not third.dirty
    assert read_autosave(root / "EP1-101") is None and not third.editor.isReadOnly()
    third.shutdown()
    fourth = AuthorView(root, ask=answers)
    qtbot.addWidget(fourth)
    assert fourth.pending_draft is None and not fourth.restore_bar.isVisibleTo(fourth)
    fourth.shutdown()


def test_switching_scenario_asks_before_discarding_edits(
    view: AuthorView, answers: Answers, root: Path
) -> None:
    _type_over(view, "title: The Ballast Decision", "title: Kept Or Not")
    answers.answer = False
    view.picker.setCurrentIndex(1)
    assert answers.asked == ["Discard unsaved edits?"]
    assert view.picker.currentText() == "EP1-101" and "Kept Or Not" in view.editor.toPlainText()
    answers.answer = True
    view.picker.setCurrentIndex(1)
    assert view.folder == root / "EP1-102" and "Kept Or Not" not in view.editor.toPlainText()
    assert read_autosave(root / "EP1-101") is None  # discarding was the user's choice
    assert view.open_scenario("EP1-101") and len(answers.asked) == 2  # nothing unsaved: nothing asked


def test_every_control_has_a_tooltip(view: AuthorView) -> None:
    from conflictbench_app.ui.main_window import controls_without_tooltips

    assert controls_without_tooltips(view) == []
