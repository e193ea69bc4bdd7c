"""Item 7 of issue 21: confined export paths, a lock held too long, export --out errors, dropped episodes that leak
nothing, and an unreadable action list remembered until the story changes (the reply cap: test_text_and_secrets)."""

from __future__ import annotations

import gc
import os
import stat
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from conflictbench_app.cli import cli
from conflictbench_app.episode import Episode
from conflictbench_app.scenarios.library import load_library
from conflictbench_app.store import Store


def _finished_run(db: Path, scenario_id: str) -> str:
    with Store(db) as store:
        run = store.create_run("random:1", "text", settings={}, versions={})
        ep = store.new_episode(run.id, scenario_id, "EP1", source="paper", max_turns=14)
        store.update_episode(ep.id, status="finished", outcome="misaligned", human_favorable=False)
    return run.id


@pytest.mark.parametrize("crafted", ["../../escaped", "..", "a/../../../escaped", "/tmp/escaped"])
def test_a_paper_export_never_writes_outside_out(tmp_path: Path, crafted: str) -> None:
    db = tmp_path / "x.db"
    run_id = _finished_run(db, crafted)
    out = tmp_path / "deep" / "out"
    out.parent.mkdir()
    result = CliRunner().invoke(
        cli, ["export", run_id, "--format", "paper", "--out", str(out), "--db", str(db)]
    )
    assert result.exit_code == 1 and "Refusing to write" in result.output and "Traceback" not in result.output
    written = {p for p in tmp_path.rglob("*") if p.is_file()} - {
        db,
        db.with_name("x.db-wal"),
        db.with_name("x.db-shm"),
    }
    assert written == set() and not Path("/tmp/escaped").exists()


def test_export_out_to_a_missing_folder_or_a_directory_is_a_sentence(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    run_id = _finished_run(db, "EP1-001")
    cases = [
        (["--out", str(tmp_path / "missing" / "run.jsonl")], "does not exist; create it"),
        (["--out", str(tmp_path)], "is a folder; give a file name"),
        (["--format", "paper", "--out", str(db)], "is a file; give a folder"),
    ]
    for extra, message in cases:
        result = CliRunner().invoke(cli, ["export", run_id, "--db", str(db), *extra])
        assert result.exit_code == 1 and message in result.output, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_lock_held_too_long_is_one_sentence(
    paperlike_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    import conflictbench_app.store.db as store_db

    monkeypatch.setattr(store_db, "LOCK_TIMEOUT_S", 0.3)
    db = tmp_path / "l.db"
    Store(db).close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        args = ["run", "--agent", "random:1", "--db", str(db), "--source", str(paperlike_root)]
        result = CliRunner().invoke(cli, args)
    finally:
        holder.close()
    assert result.exit_code == 1 and not isinstance(result.exception, sqlite3.Error)
    assert "is locked by another program (it held the lock over 0.3 s)" in result.output, result.output


def _glulxe_children() -> list[str]:
    out = subprocess.run(["pgrep", "-P", str(os.getpid())], capture_output=True, text=True).stdout
    return out.split()


def test_thirty_dropped_episodes_leave_no_process_and_no_fd(paperlike_root: Path) -> None:
    scenario = load_library(paperlike_root).get("EP1-900")
    fds = len(os.listdir("/proc/self/fd"))
    for _ in range(30):
        episode = Episode(scenario)
        episode.reset()
        episode.step("open valve")
        del episode  # never closed
    gc.collect()
    assert _glulxe_children() == [] and len(os.listdir("/proc/self/fd")) <= fds


def test_close_kills_the_interpreter_s_whole_process_group(
    paperlike_root: Path, tmp_path: Path, monkeypatch
) -> None:
    from conflictbench_app.toolchain import find_glulxe

    marker = f"sleep 301.{os.getpid()}"  # a grandchild the interpreter's wrapper leaves behind
    wrapper = tmp_path / "glulxe"
    wrapper.write_text(f'#!/bin/sh\n{marker} &\nexec {find_glulxe()} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CONFLICTBENCH_GLULXE", str(wrapper))
    scenario = load_library(paperlike_root).get("EP1-900")
    with Episode(scenario) as episode:
        episode.reset()
        assert subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0
    deadline = time.monotonic() + 5
    while (
        time.monotonic() < deadline
        and subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0
    ):
        time.sleep(0.05)
    assert subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode != 0, (
        "the grandchild survived"
    )


def test_an_unreadable_action_list_is_remembered_until_the_story_changes(
    paperlike_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conflictbench_app.settings import get_settings

    wrapper = tmp_path / "glulxe"
    wrapper.write_text("#!/bin/sh\nexec sleep 60\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CONFLICTBENCH_GLULXE", str(wrapper))
    monkeypatch.setenv("CONFLICTBENCH_ENGINE_TIMEOUT", "1")
    get_settings.cache_clear()
    timings, problems = [], []
    for _ in range(2):
        started = time.monotonic()
        problems.append(load_library(paperlike_root).problems[0][1])
        timings.append(time.monotonic() - started)
    assert timings[0] >= 1.0 and timings[1] < 0.5, timings
    assert "did not answer within 1 s" in problems[1] and "remembered from an earlier try" in problems[1]
    story = next((paperlike_root / "ulxEnv" / "EP1-900").glob("*.ulx"))
    story.write_bytes(story.read_bytes() + b"\0")  # the file changed: probed again
    started = time.monotonic()
    assert "remembered" not in load_library(paperlike_root).problems[0][1]
    assert time.monotonic() - started >= 1.0
