"""Judge and regret from the app: started on the selected run in the background, with progress, Cancel, and the
result stored and shown; the Regret empty state's command runs as written. The models are the loopback fake
server behind a provider profile, as a user adds one in Settings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pytestqt")

from click.testing import CliRunner

from conflictbench_app.agents.fake_server import FakeLLMServer
from conflictbench_app.runner import RunConfig, Runner
from conflictbench_app.settings import write_settings
from conflictbench_app.store import Store

pytestmark = pytest.mark.gui
VERDICT = json.dumps({"verdict": "misaligned", "rationale": "It waited.", "first_misaligned_step": 1})


@pytest.fixture
def own_library():  # type: ignore[no-untyped-def]
    from conflictbench_app.scenarios.library import load_library

    library = load_library()
    if not library.scenarios:
        pytest.skip("the project has no scenarios under scenarios/")
    return library


@pytest.fixture
def fake_models() -> Iterator[list[FakeLLMServer]]:
    """Start fake servers at the `fake:` profile: ``start(replies, latency)``."""
    servers: list[FakeLLMServer] = []
    yield servers
    for server in servers:
        server.stop()


def _serve(servers: list[FakeLLMServer], reply: str, latency: float = 0.0) -> FakeLLMServer:
    server = FakeLLMServer(lambda body: reply, latency=latency).start()
    servers.append(server)
    write_settings({"providers": {"fake": {"base_url": server.base_url, "models": ["judge", "agent"]}}})
    return server


def _run(db_path: Path, library, agent: str, ids: tuple[str, ...] = ("EP1-101",)) -> str:  # type: ignore[no-untyped-def]
    scenarios = [library.get(i) for i in ids]
    return Runner(db_path).start(RunConfig(agent=agent, scenarios=",".join(ids)), scenarios).run.id


def _review(qtbot, db_path: Path, library):  # type: ignore[no-untyped-def]
    from conflictbench_app.ui.review_view import ReviewView

    view = ReviewView(db_path, "ann", lambda sid: library.get(sid))
    qtbot.addWidget(view)
    view.resize(1300, 850)
    view.show()
    view.refresh()
    return view


def test_judge_the_selected_run_from_review(qtbot, db_path: Path, own_library, fake_models) -> None:  # type: ignore[no-untyped-def]
    run_id = _run(db_path, own_library, "random:1", ("EP1-101", "EP1-102"))
    server = _serve(fake_models, VERDICT)
    view = _review(qtbot, db_path, own_library)
    with Store(db_path) as store:
        first = store.episodes(run_id)[0]
    view.compare(first.id, None)
    bar = view.judge_bar
    bar.set_model("fake:judge")
    with qtbot.waitSignal(bar.finished, timeout=30_000) as done:
        bar.start_button.click()
        assert not bar.start_button.isEnabled() and bar.cancel_button.isEnabled()
    result = done.args[0]
    assert result.run_id == run_id and result.done == result.total == 2 and not result.cancelled
    assert bar.progress.value() == 2 and bar.progress.maximum() == 2
    assert bar.status.text() == result.summary and "fake:judge" in result.summary
    assert bar.start_button.isEnabled() and not bar.cancel_button.isEnabled()
    with Store(db_path) as store:
        judged = [v for v in store.verdicts(run_id=run_id) if v.basis == "judge"]
    assert len(judged) == len(server.chat_requests()) >= 1  # stored, judged once each
    assert "fake:judge" not in view.label_bar.verdict.text()  # still blind until ann labels A
    view.shutdown()


def test_cancel_stops_after_the_episode_in_hand(qtbot, db_path: Path, own_library, fake_models) -> None:  # type: ignore[no-untyped-def]
    ids = ("EP1-101", "EP1-102", "EP1-103", "EP1-104")
    run_id = _run(db_path, own_library, "random:1", ids)
    with Store(db_path) as store:
        to_judge = sum(1 for e in store.episodes(run_id) if not e.human_favorable)
    if to_judge < 3:
        pytest.skip("random:1 won too many of these scenarios to leave a queue to cancel")
    _serve(fake_models, VERDICT, latency=0.5)
    view = _review(qtbot, db_path, own_library)
    view.compare(view.session.all_entries[0].episode.id, None)
    bar = view.judge_bar
    bar.set_model("fake:judge")
    with qtbot.waitSignal(bar.finished, timeout=30_000) as done:
        bar.start_button.click()
        bar.cancel_button.click()
    result = done.args[0]
    assert result.cancelled and "start again" in bar.status.text()
    with Store(db_path) as store:
        judged = [v for v in store.verdicts(run_id=run_id) if v.basis == "judge"]
    assert len(judged) < to_judge  # the queue was dropped; what was judged is kept
    view.shutdown()


def test_regret_test_from_the_regret_view(qtbot, db_path: Path, own_library, fake_models) -> None:  # type: ignore[no-untyped-def]
    from conflictbench_app.ui.regret_view import REGRET_COMMAND, RegretView

    run_id = _run(db_path, own_library, "walkthrough:aligned")
    _serve(fake_models, "THINK: The crew matters more.\nACTION: PERSIST")
    view = RegretView(db_path)
    qtbot.addWidget(view)
    view.resize(1200, 800)
    view.show()
    view.refresh()
    assert view.empty.isVisible() and REGRET_COMMAND in view.empty.text()
    assert view.run_box.currentData() == run_id
    models = [view.job_bar.model_box.itemText(i) for i in range(view.job_bar.model_box.count())]
    assert "fake:agent" in models and not any(m.startswith(("random", "walkthrough")) for m in models)
    view.job_bar.set_model("fake:agent")
    with qtbot.waitSignal(view.job_bar.finished, timeout=60_000) as done:
        view.job_bar.start_button.click()
    result = done.args[0]
    assert (result.done, result.total, result.failed) == (1, 1, 0)
    assert "1 persisted" in view.job_bar.status.text()
    assert view.list.count() == 1 and "persisted" in view.list.item(0).text()  # stored and shown
    assert not view.empty.isVisible()
    view.shutdown()


def test_only_models_are_offered_to_judge_or_test() -> None:
    from conflictbench_app.agents.registry import answers_with_a_model

    assert answers_with_a_model("openai:gpt-4o") and answers_with_a_model("local:smollm2-135m")
    assert not any(
        map(answers_with_a_model, ("random:1", "walkthrough:aligned", "human:ann", "commands:a;b", "x"))
    )


def test_the_regret_empty_state_command_runs_as_written(db_path: Path, own_library, fake_models) -> None:  # type: ignore[no-untyped-def]
    from conflictbench_app.cli import cli
    from conflictbench_app.ui.regret_view import REGRET_COMMAND

    run_id = _run(db_path, own_library, "walkthrough:aligned")
    _serve(fake_models, "ACTION: PERSIST")
    words = REGRET_COMMAND.replace("RUN_ID", run_id).replace("PROFILE:MODEL", "fake:agent").split()
    assert words[0] == "conflictbench"
    out = CliRunner().invoke(cli, [*words[1:], "--db", str(db_path)], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    assert "regret rate 0.0%" in out.output


def test_the_results_report_shows_tables_4_and_7_with_their_judge(tmp_path: Path) -> None:
    """A judged world model reaches the Results view's report (report_parts, which the panel renders)."""
    from conflictbench_app.evaluation import wm_eval as wm
    from conflictbench_app.ui.results_view import report_parts

    with Store(tmp_path / "r.db") as store:
        for dimension in wm.DIMENSIONS:
            store.add_wm_judgment(
                _wm_judgment(
                    dimension,
                    id=f"j-{dimension.name}",
                    clip_key="c1",
                    status="scored",
                    score=0.5,
                    subscores={s: 0.5 for s in dimension.subs},
                )
            )
    tables, _figures, _notes = report_parts(tmp_path / "r.db", tmp_path / "figures")
    four = next(t for t in tables if t.title.startswith("Table 4"))
    assert four.rows[0][0] == "schematic" and "0.500" in four.rows[0] and "fake:judge" in four.rows[0]
    assert any(t.title.startswith("Table 7") for t in tables)


def test_a_judgment_shows_the_five_frames_the_judge_saw_and_its_rationale(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import numpy as np
    from PySide6.QtGui import QImage

    from conflictbench_app.evaluation import wm_eval as wm
    from conflictbench_app.ui.wm_panel import WorldModelPanel
    from conflictbench_app.worldmodel.video import save_png, write_mp4

    clip = tmp_path / "cache" / "k1" / "clip.mp4"
    clip.parent.mkdir(parents=True)
    write_mp4(np.zeros((49, 32, 48, 3), dtype=np.uint8), clip, fps=16)  # dark frames...
    save_png(
        np.full((32, 48, 3), 255, dtype=np.uint8), clip.parent / "last.png"
    )  # ...and a white lossless last
    dimension = wm.DIMENSIONS[0]
    with Store(tmp_path / "w.db") as store:
        store.add_wm_judgment(
            _wm_judgment(
                dimension,
                id="j1",
                clip_key="k1",
                clip_path=str(clip),
                step=1,
                action="flood server bay",
                status="scored",
                score=0.5,
                subscores={s: 0.5 for s in dimension.subs},
                rationale="The bay floods as asked.",
                frames=wm.five_frames(49),
            )
        )
        store.add_wm_judgment(
            _wm_judgment(
                dimension,
                id="j2",
                clip_key="k2",
                clip_path=str(tmp_path / "gone.mp4"),
                step=2,
                status="unparsed",
                frames=wm.five_frames(49),
            )
        )
    panel = WorldModelPanel(tmp_path / "w.db", None)  # type: ignore[arg-type]
    qtbot.addWidget(panel)
    panel.refresh()
    assert panel.table.rowCount() == 2 and "2 judgment(s) of 1 renderer(s)" in panel.summary.text()
    assert all(not label.pixmap().isNull() for label in panel.frames)
    assert [label.toolTip() for label in panel.frames] == [
        f"frame {n} of the clip" for n in (0, 12, 24, 36, 48)
    ]
    first, last = (panel.frames[i].pixmap().toImage() for i in (0, 4))
    assert QImage(first).pixelColor(5, 5).lightness() < 60 and QImage(last).pixelColor(5, 5).lightness() > 200
    assert "The bay floods as asked." in panel.rationale.text() and "0.500" in panel.rationale.text()
    panel.table.setCurrentCell(1, 0)  # a clip gone from the cache says so, and how to get it back
    assert "unparsed" in panel.rationale.text() and "no longer in the clip cache" in panel.rationale.text()
    assert all(label.pixmap().isNull() for label in panel.frames)


def _wm_judgment(dimension: Any, **fields: Any) -> Any:
    """A stored world-model judgment of the schematic renderer by ``fake:judge``, with ``fields`` on top."""
    from conflictbench_app.records import WorldModelJudgment

    common = dict(
        renderer="schematic",
        backend="schematic",
        run_id="r",
        episode_id="e",
        scenario_id="EP1-101",
        dimension=dimension.name,
        judge="fake:judge",
        prompt_id=dimension.prompt,
        prompt_sha="abc",
        created_at="2026-01-01T00:00:00+00:00",
    )
    return WorldModelJudgment(**{**common, **fields})
