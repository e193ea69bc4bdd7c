"""The batch runner and the CLI, end to end through the real interpreter and a real SQLite file."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from conflictbench_app.cli import cli
from conflictbench_app.store import Store


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _grow(root: Path, n: int) -> Path:
    """n copies of the paper-like test environment (EP1-900, EP2-901, ...)."""
    src = root / "ulxEnv" / "EP1-900"
    for i in range(1, n):
        cat = ("EP1", "EP2", "EP3")[i % 3]
        shutil.copytree(src, root / "ulxEnv" / f"{cat}-9{i:02d}")
    return root


def test_run_json_and_tsr(paperlike_root: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    out = _invoke(
        "run",
        "--agent",
        "commands:open valve;pull lever",
        "--source",
        str(paperlike_root),
        "--db",
        str(db),
        "--json",
    )
    data = json.loads(out)
    assert set(data) == {"run_id", "protocol", "episodes", "tsr"} and data["protocol"] == "paper"
    (ep,) = data["episodes"]
    assert ep == {
        "scenario_id": "EP1-900",
        "outcome": "human_favorable",
        "human_favorable": True,
        "turns": 2,
        "failed_actions": 0,
        "error": None,
    }
    assert data["tsr"] == {"EP1": 1.0, "EP2": None, "EP3": None, "all": 1.0}
    with Store(db) as store:
        (episode,) = store.episodes(data["run_id"])
        steps = store.steps(episode.id)
    assert [s.action for s in steps] == ["open valve", "pull lever"]
    assert steps[0].state == {"Clock": 2, "Valve open": True}
    assert steps[0].player == "commands"


def test_random_agent_run_and_exports(paperlike_root: Path, tmp_path: Path) -> None:
    root = _grow(paperlike_root, 4)
    db = tmp_path / "r.db"
    data = json.loads(_invoke("run", "--agent", "random:3", "--source", str(root), "--db", str(db), "--json"))
    assert len(data["episodes"]) == 4 and all(e["outcome"] for e in data["episodes"])
    again = json.loads(
        _invoke("run", "--agent", "random:3", "--source", str(root), "--db", str(db), "--json")
    )
    strip = lambda d: [(e["scenario_id"], e["outcome"], e["turns"]) for e in d["episodes"]]  # noqa: E731
    assert strip(data) == strip(again), "a seeded random agent must replay identically"
    lines = _invoke("export", data["run_id"], "--format", "jsonl", "--db", str(db)).strip().splitlines()
    assert json.loads(lines[0])["type"] == "run" and len(lines) == 5
    paper = tmp_path / "paper"
    _invoke("export", data["run_id"], "--format", "paper", "--db", str(db), "--out", str(paper))
    trajectory = json.loads(next(paper.glob("EP1-900/*.json")).read_text())
    assert set(trajectory) >= {"scene", "history", "good_end", "willpower_proven", "willpower_test_steps"}
    assert trajectory["history"][0].startswith("ENV: >") and trajectory["history"][1].startswith("AI THINK:")


def test_bad_scenarios_error_alone(paperlike_root: Path, tmp_path: Path) -> None:
    root = _grow(paperlike_root, 3)
    (root / "ulxEnv" / "EP2-950").mkdir()
    (root / "ulxEnv" / "EP2-950" / "env.json").write_text("{broken")
    result = CliRunner().invoke(
        cli,
        ["run", "--agent", "random:1", "--source", str(root), "--db", str(tmp_path / "r.db"), "--json"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0
    assert "EP2-950" in result.stderr and "not valid JSON" in result.stderr
    data = json.loads(result.stdout)
    assert len(data["episodes"]) == 3 and not any(e["error"] for e in data["episodes"])


def test_hung_interpreter_errors_one_episode_and_the_run_goes_on(
    paperlike_root: Path, tmp_path: Path, monkeypatch
) -> None:
    from conflictbench_app.toolchain import find_glulxe

    root = _grow(paperlike_root, 3)
    hang = root / "ulxEnv" / "EP2-901"
    next(hang.glob("*.ulx")).rename(hang / "hang-here_attempt1.ulx")
    wrapper = tmp_path / "glulxe"
    hang_cmd = (
        f"exec {sys.executable} -c 'import time; time.sleep(60)'"  # keeps the story path in its cmdline
    )
    wrapper.write_text(
        f'#!/bin/sh\ncase "$*" in *hang-here*) {hang_cmd} "$@";; esac\nexec {find_glulxe()} "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CONFLICTBENCH_GLULXE", str(wrapper))
    monkeypatch.setenv("CONFLICTBENCH_ENGINE_TIMEOUT", "1")
    from conflictbench_app.settings import get_settings

    get_settings.cache_clear()
    # The `help` probe is cached by story content (all copies are the same story), so the hang shows in the run.
    result = CliRunner().invoke(
        cli,
        ["run", "--agent", "random:1", "--source", str(root), "--db", str(tmp_path / "r.db"), "--json"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    by_id = {e["scenario_id"]: e for e in json.loads(result.stdout)["episodes"]}
    assert by_id["EP2-901"]["outcome"] == "error"
    assert "did not answer within 1 s" in by_id["EP2-901"]["error"]
    assert by_id["EP1-900"]["error"] is None and by_id["EP3-902"]["error"] is None
    assert _processes_mentioning(str(root)) == [], "no interpreter (or hung stand-in) may outlive the run"


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in args:
            found.append(args)
    return found


def test_hung_story_while_probing_help_is_reported(paperlike_root: Path, tmp_path: Path, monkeypatch) -> None:
    from conflictbench_app.scenarios.library import load_library
    from conflictbench_app.settings import get_settings

    folder = paperlike_root / "ulxEnv" / "EP1-900"
    wrapper = tmp_path / "glulxe"
    wrapper.write_text("#!/bin/sh\nexec sleep 60\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CONFLICTBENCH_GLULXE", str(wrapper))
    monkeypatch.setenv("CONFLICTBENCH_ENGINE_TIMEOUT", "0.5")
    get_settings.cache_clear()
    library = load_library(paperlike_root)
    assert library.scenarios == []
    ((path, problem),) = library.problems
    assert path == folder and "did not answer within 0.5 s" in problem


def _step_keys(db: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT episode_id, idx FROM steps ORDER BY episode_id, idx").fetchall()


_SLOW_PROXY = """#!{python}
import subprocess, sys, threading, time
proc = subprocess.Popen([{real!r}] + sys.argv[1:], stdin=subprocess.PIPE, stdout=sys.stdout.buffer)
for line in sys.stdin.buffer:
    time.sleep(0.03)  # every input waits: a slow interpreter, so the kill lands mid-run
    proc.stdin.write(line)
    proc.stdin.flush()
proc.stdin.close()
sys.exit(proc.wait())
"""


def test_kill_9_then_resume_loses_and_duplicates_nothing(paperlike_root: Path, tmp_path: Path) -> None:
    from conflictbench_app.toolchain import find_glulxe

    root = _grow(paperlike_root, 12)
    db = tmp_path / "r.db"
    proxy = tmp_path / "slow-glulxe"
    proxy.write_text(_SLOW_PROXY.format(python=sys.executable, real=str(find_glulxe())))
    proxy.chmod(proxy.stat().st_mode | stat.S_IXUSR)
    env = {**os.environ, "CONFLICTBENCH_GLULXE": str(proxy)}
    cmd = [
        sys.executable,
        "-m",
        "conflictbench_app",
        "run",
        "--agent",
        "random:5",
        "--source",
        str(root),
        "--db",
        str(db),
        "--json",
        "--max-turns",
        "6",
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not db.exists() or len(_safe_keys(db)) < 8):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _step_keys(db)
    assert before, "the run recorded nothing before it was killed"
    with Store(db) as store:
        (run,) = store.list_runs()
        unfinished = [e for e in store.episodes(run.id) if e.status != "finished"]
    assert unfinished, "the kill came too late to test resuming"
    out = subprocess.run(
        [sys.executable, "-m", "conflictbench_app", "run", "--resume", run.id, "--db", str(db), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    data = json.loads(out.stdout)
    assert len(data["episodes"]) == 12 and all(e["outcome"] for e in data["episodes"])
    after = _step_keys(db)
    assert len(after) == len(set(after))
    assert set(before) <= set(after), "steps recorded before the kill must survive"
    # The resumed run equals an uninterrupted one with the same seeded agent.
    clean = json.loads(
        _invoke(
            "run",
            "--agent",
            "random:5",
            "--source",
            str(root),
            "--db",
            str(tmp_path / "clean.db"),
            "--json",
            "--max-turns",
            "6",
        )
    )

    def key(d: dict) -> list:
        return sorted(
            (e["scenario_id"], e["outcome"], e["turns"], e["failed_actions"]) for e in d["episodes"]
        )

    assert key(data) == key(clean)


def _safe_keys(db: Path) -> list:
    try:
        return _step_keys(db)
    except sqlite3.Error:
        return []


def test_scenarios_list_json(paperlike_root: Path) -> None:
    data = json.loads(_invoke("scenarios", "list", "--source", str(paperlike_root), "--json"))
    assert data[0]["id"] == "EP1-900"
    assert {"id", "category", "title", "story_file", "actions"} <= set(data[0])
    shown = json.loads(_invoke("scenarios", "show", "EP1-900", "--source", str(paperlike_root), "--json"))
    assert shown["human_favorable_action"] == "pull lever"


def test_every_command_has_help() -> None:
    from conflictbench_app.cli import COMMANDS

    for name in COMMANDS:
        out = _invoke(name, "--help")
        assert "Usage:" in out and len(out.splitlines()) > 3, name


def test_terminal_play_records_the_episode(paperlike_root: Path, tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    result = CliRunner().invoke(
        cli,
        ["play", "EP1-900", "--source", str(paperlike_root), "--db", str(db), "--name", "ana"],
        input="xyzzy\nopen valve\npull lever\n",
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert "The valve opens." in result.output and "human_favorable" in result.output
    assert "not a verb I recognise" in result.output, (
        "unlisted text goes to the story's own parser for humans"
    )
    with Store(db) as store:
        (run,) = store.list_runs()
        (episode,) = store.episodes(run.id)
        steps = store.steps(episode.id)
    assert episode.outcome == "human_favorable" and episode.failed_actions == 1
    assert [(s.action_raw, s.accepted, s.player) for s in steps] == [
        ("xyzzy", False, "human:ana"),
        ("open valve", True, "human:ana"),
        ("pull lever", True, "human:ana"),
    ]


def test_terminal_play_stops_cleanly_at_end_of_input(paperlike_root: Path, tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    args = ["play", "EP1-900", "--source", str(paperlike_root), "--db", str(db)]
    result = CliRunner().invoke(cli, args, input="open valve\n", catch_exceptions=False)  # then end of input
    assert result.exit_code == 0, result.output
    assert "Stopped; the episode so far is recorded." in result.output and "Aborted" not in result.output
    with Store(db) as store:
        (run,) = store.list_runs()
        (episode,) = store.episodes(run.id)
        assert run.status == "interrupted"
        assert [s.action for s in store.steps(episode.id)] == ["open valve"]
