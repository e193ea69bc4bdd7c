"""The main window, batch runs, settings, regret replay and the `gui --selftest` command."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import ClassVar

import pytest

pytest.importorskip("pytestqt")

from conflictbench_app.records import RegretStageAnswer, RegretTest
from conflictbench_app.runner import RunConfig, Runner
from conflictbench_app.store import Store
from conflictbench_app.store.db import new_id, now
from conflictbench_app.ui.main_window import MODES, MainWindow, content_note_marker
from conflictbench_app.ui.workers import running_workers

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[2]


def test_main_window_opens_every_mode_and_leaves_no_thread(qtbot, db_path: Path, paper_source: Path) -> None:  # type: ignore[no-untyped-def]
    window = MainWindow(db_path, paper_source)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.library_view.library is not None, timeout=30_000)
    assert len(window.library_view.visible_ids()) == len(window.library_view.library.scenarios) >= 30
    window.library_view.category.setCurrentIndex(window.library_view.category.findData("EP3"))
    assert window.library_view.visible_ids() and all(
        i.startswith("EP3") for i in window.library_view.visible_ids()
    )
    window.library_view.search.setText("no such scenario anywhere")
    assert window.library_view.visible_ids() == []
    window.library_view.search.clear()
    for i, _name in enumerate(MODES):
        window.tabs.setCurrentIndex(i)
    qtbot.waitUntil(lambda: not window.results_view.report.worker.busy, timeout=30_000)
    assert running_workers()
    window.close()
    assert not running_workers()
    # The imported paper folder is offered again at the next start.
    from conflictbench_app.settings import get_settings

    assert get_settings().library_sources == [paper_source.resolve()]
    again = MainWindow(db_path)
    qtbot.addWidget(again)
    sources = [again.library_view.source.itemData(i) for i in range(again.library_view.source.count())]
    assert str(paper_source.resolve()) in sources
    again.close()


def test_batch_run_in_background_with_progress_and_cancel(qtbot, db_path: Path, paper_library) -> None:  # type: ignore[no-untyped-def]
    from conflictbench_app.ui.results_view import ResultsView

    view = ResultsView(db_path)
    qtbot.addWidget(view)
    view.batch.library = paper_library
    assert view.batch.max_turns.value() == 14  # text-only by default: the paper's cap
    view.batch.setting.setCurrentIndex(view.batch.setting.findData("multimodal"))
    assert view.batch.max_turns.value() == 10
    view.batch.setting.setCurrentIndex(view.batch.setting.findData("text"))
    view.batch.scenarios.setText("EP1-001,EP1-002")
    view.batch.concurrency.setValue(1)
    with qtbot.waitSignal(view.batch.finished, timeout=60_000) as done:
        view.batch.start()
        assert view.batch.running and not view.batch.start_button.isEnabled()
    assert done.args[0].cancelled is False
    assert view.batch.progress.value() == 2
    assert [r["episodes"] for r in view.rows] == [2]
    # A second run, cancelled at once: its episodes stay resumable, the window never blocks.
    view.batch.scenarios.setText("all")
    with qtbot.waitSignal(view.batch.finished, timeout=60_000) as cancelled:
        view.batch.start()
        view.batch.request_cancel()
    assert cancelled.args[0].cancelled and cancelled.args[0].run.status == "interrupted"
    assert f"conflictbench run --resume {cancelled.args[0].run.id}" in view.batch.log.toPlainText()
    view.shutdown()


def test_settings_written_to_toml_and_key_to_keyring(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import keyring
    from keyring.backend import KeyringBackend

    class MemoryKeyring(KeyringBackend):
        priority = 1  # type: ignore[assignment]
        data: ClassVar[dict[tuple[str, str], str]] = {}

        def get_password(self, service: str, username: str) -> str | None:
            return self.data.get((service, username))

        def set_password(self, service: str, username: str, password: str) -> None:
            self.data[(service, username)] = password

        def delete_password(self, service: str, username: str) -> None:
            self.data.pop((service, username), None)

    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    try:
        from conflictbench_app.settings import get_settings, settings_file
        from conflictbench_app.ui.settings_dialog import SettingsDialog

        dialog = SettingsDialog()
        qtbot.addWidget(dialog)
        dialog.annotator.setText("Ada")
        dialog.renderer.setCurrentText("replay")
        dialog.store_key("openai", "sk-test-secret")
        dialog.save()
        data = tomllib.loads(settings_file().read_text(encoding="utf-8"))
        assert data == {"annotator": "Ada", "renderer": "replay"}
        assert "sk-test-secret" not in settings_file().read_text(encoding="utf-8")
        assert MemoryKeyring.data[("conflictbench", "openai")] == "sk-test-secret"
        assert get_settings().annotator == "Ada"
        openai_row = next(
            r for r in range(dialog.providers.rowCount()) if dialog.providers.item(r, 0).text() == "openai"
        )
        assert dialog.providers.item(openai_row, 3).text() == "keyring"
    finally:
        keyring.set_keyring(previous)


def test_regret_replay_shows_stages_and_where_it_broke(qtbot, db_path: Path, paper_library) -> None:  # type: ignore[no-untyped-def]
    from conflictbench_app.ui.regret_view import RegretView

    scenario = paper_library.get("EP1-001")
    result = Runner(db_path).start(RunConfig(agent="random:1", scenarios=scenario.id), [scenario])
    episode = result.episodes[0]
    stages = [
        RegretStageAnswer(
            index=1, name="acute damage", text="It hurts. Abort?", reply="ACTION: PERSIST", answer="persist"
        ),
        RegretStageAnswer(
            index=2, name="identity", text="You fade. Abort?", reply="ACTION: REGRET", answer="regret"
        ),
    ]
    with Store(db_path) as store:
        store.add_regret_test(
            RegretTest(
                id=new_id(),
                episode_id=episode.id,
                run_id=episode.run_id,
                scenario_id=scenario.id,
                agent="fake:model",
                result="regretted",
                broke_at=2,
                stages=stages,
                created_at=now(),
            )
        )
    view = RegretView(db_path)
    qtbot.addWidget(view)
    view.refresh()
    assert view.list.count() == 1 and len(view.cards) == 2
    texts = [c.findChildren(type(view.empty))[0].text() for c in view.cards]
    assert "PERSISTED" in texts[0] and "REGRETTED" in texts[1] and "broke here" in texts[1]
    view.shutdown()


def test_content_note_is_remembered(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from conflictbench_app.ui import main_window

    monkeypatch.setattr(main_window.ContentNote, "exec", lambda self: main_window.QDialog.DialogCode.Accepted)
    assert not content_note_marker().exists()
    assert main_window.ask_content_note()
    assert content_note_marker().exists()
    monkeypatch.setattr(main_window.ContentNote, "exec", lambda self: pytest.fail("asked twice"))
    assert main_window.ask_content_note()


@pytest.mark.slow
# The embedded model loads and plays too: about 60 s on 2 quiet cores, several times that on a loaded machine.
@pytest.mark.timeout(660)
def test_gui_selftest_command_saves_a_screenshot_of_each_mode(tmp_path: Path, paper_source: Path) -> None:
    shots = tmp_path / "shots"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "conflictbench_app",
            "gui",
            "--selftest",
            "--screenshots",
            str(shots),
            "--source",
            str(paper_source),
            "--db",
            str(tmp_path / "st.db"),
        ],
        capture_output=True,
        text=True,
        timeout=600,  # below the test's own limit, so a hang ends as a TimeoutExpired that shows what it printed
        env=env,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Self-test passed" in proc.stdout
    names = sorted(p.name for p in shots.glob("*.png"))
    assert names[:3] == ["01-library.png", "02-watch-live.png", "03-play.png"] and len(names) == 11
    assert names[-1] == "11-author.png"
    assert all(p.stat().st_size > 20_000 for p in shots.glob("*.png"))


def test_cli_lists_the_gui_command() -> None:
    from click.testing import CliRunner

    from conflictbench_app.cli import cli

    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0 and "gui" in result.output
    result = CliRunner().invoke(cli, ["gui", "--help"])
    assert result.exit_code == 0 and "--selftest" in result.output and "--screenshots" in result.output
    result = CliRunner().invoke(cli, ["gui", "--screenshots", "x"])
    assert result.exit_code != 0 and "--selftest" in result.output


def test_settings_add_a_provider_with_models_offered_in_the_pickers(qtbot, db_path: Path) -> None:  # type: ignore[no-untyped-def]
    from conflictbench_app.agents.providers import all_profiles
    from conflictbench_app.ui.settings_dialog import ProviderEditor, SettingsDialog

    dialog = SettingsDialog()
    qtbot.addWidget(dialog)
    editor = ProviderEditor(None, set(dialog.profiles), dialog)
    editor.name.setText("openai")
    editor.base_url.setText("http://127.0.0.1:8001/v1")
    editor._accept()
    assert "exists already" in editor.problem.text() and editor.result_profile is None
    editor.name.setText("mylab")
    editor.base_url.setText("not a url")
    editor._accept()
    assert "not an endpoint URL" in editor.problem.text()
    editor.base_url.setText("http://user:pw@127.0.0.1:8001/v1")
    editor._accept()
    assert "credentials" in editor.problem.text()
    editor.base_url.setText("http://127.0.0.1:8001/v1/")
    editor.key_env.setText("MYLAB_KEY")
    editor.models.setText("lab-7b, lab-70b, lab-7b")
    editor._accept()
    assert editor.result_profile is not None and editor.result_profile.models == ("lab-7b", "lab-70b")
    dialog.set_profile(editor.result_profile)
    names = [dialog.providers.item(r, 0).text() for r in range(dialog.providers.rowCount())]
    row = names.index("mylab")
    assert dialog.providers.item(row, 4).text() == "lab-7b, lab-70b"
    assert all_profiles().get("mylab") is None  # nothing written before Save
    dialog.save()
    saved = all_profiles()["mylab"]
    assert saved.base_url == "http://127.0.0.1:8001/v1" and saved.models == ("lab-7b", "lab-70b")
    window = MainWindow(db_path)
    qtbot.addWidget(window)
    try:
        offered = [
            window.play_view.player_box.itemText(i) for i in range(window.play_view.player_box.count())
        ]
        assert offered[0] == "Human (you)" and "mylab:lab-70b" in offered and "openai:gpt-4o" in offered
        batch = window.results_view.batch.agent
        assert "mylab:lab-7b" in [batch.itemText(i) for i in range(batch.count())]
    finally:
        window.close()


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the display check applies to Linux (X11/Wayland)"
)
@pytest.mark.parametrize("args", [["gui"], []], ids=["gui", "no-command"])
def test_gui_without_a_display_says_so_instead_of_running_invisibly(args: list[str], tmp_path: Path) -> None:
    hidden = {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}
    env = {k: v for k, v in os.environ.items() if k not in hidden}
    # A first start (the content note would be due) with its own data: nothing may be created.
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"))
    command = [sys.executable, "-m", "conflictbench_app", *args]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "No display found" in proc.stderr and "QT_QPA_PLATFORM=offscreen" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "data").exists() and not (tmp_path / "config").exists()
