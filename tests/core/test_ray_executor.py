"""The ``ray`` executor on a local Ray instance (2 CPUs, one for the whole module: Ray is slow to start)."""

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
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from conflictbench_app.cli import cli
from conflictbench_app.executors import get_executor
from conflictbench_app.records import EpisodeRecord, StepRecord
from conflictbench_app.runner import RunConfig, RunListener, Runner
from conflictbench_app.scenarios.library import load_library
from conflictbench_app.store import Store

ray = pytest.importorskip("ray", reason="the ray extra is not installed: pip install -e '.[ray]'")

SLOW_PROXY = """#!{python}
import subprocess, sys, time
proc = subprocess.Popen([{real!r}] + sys.argv[1:], stdin=subprocess.PIPE, stdout=sys.stdout.buffer)
for line in sys.stdin.buffer:
    time.sleep({delay})  # a slow interpreter, so that a kill lands mid-episode
    proc.stdin.write(line)
    proc.stdin.flush()
proc.stdin.close()
sys.exit(proc.wait())
"""


@pytest.fixture(scope="module")
def ray_address():
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


def _grow(root: Path, n: int) -> Path:
    src = root / "ulxEnv" / "EP1-900"
    for i in range(1, n):
        shutil.copytree(src, root / "ulxEnv" / f"{('EP1', 'EP2', 'EP3')[i % 3]}-9{i:02d}")
    return root


def _slow_glulxe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, delay: float) -> None:
    from conflictbench_app.toolchain import find_glulxe

    proxy = tmp_path / "slow-glulxe"
    proxy.write_text(SLOW_PROXY.format(python=sys.executable, real=str(find_glulxe()), delay=delay))
    proxy.chmod(proxy.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CONFLICTBENCH_GLULXE", str(proxy))


def _played(db: Path) -> dict[str, tuple]:
    """Per scenario: outcome, turns and the actions taken, from the store."""
    with Store(db) as store:
        (run,) = store.list_runs()
        episodes = store.episodes(run.id)
        return {e.scenario_id: (e.outcome, e.turns, [s.action for s in store.steps(e.id)]) for e in episodes}


def _step_keys(db: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT episode_id, idx FROM steps ORDER BY episode_id, idx").fetchall()


def _run_args(root: Path, db: Path, *extra: str) -> list[str]:
    return ["run", "--agent", "random:5", "--source", str(root), "--db", str(db), "--max-turns", "6", *extra]


def _local(root: Path, db: Path) -> dict[str, tuple]:
    result = CliRunner().invoke(cli, _run_args(root, db, "--json"), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return _played(db)


def test_ray_plays_what_local_plays(ray_address: str, paperlike_root: Path, tmp_path: Path) -> None:
    root = _grow(paperlike_root, 4)
    args = _run_args(root, tmp_path / "ray.db", "--executor", "ray", "--concurrency", "3", "--json")
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["episodes"]) == 4
    assert _played(tmp_path / "ray.db") == _local(root, tmp_path / "local.db")


class KillFirstWorker(RunListener):
    """Kills the worker playing the first episode to record a step that does not end it, once, mid-episode. The
    driver hears of steps a poll (50 ms) late, so the episode's next step must take longer than that: the test's
    interpreter answers each line a quarter of a second late, and a step that ended its episode is never the cue."""

    def __init__(self) -> None:
        self.pids: dict[str, int] = {}
        self.placed: Counter[str] = Counter()
        self.killed: str | None = None

    def episode_placed(self, episode: EpisodeRecord, node: str, pid: int) -> None:
        self.pids[episode.id] = pid
        self.placed[episode.scenario_id] += 1

    def step_recorded(self, episode: EpisodeRecord, step: StepRecord) -> None:
        if self.killed is None and episode.id in self.pids and not (step.terminated or step.truncated):
            self.killed = episode.scenario_id
            os.kill(self.pids[episode.id], signal.SIGKILL)


def test_a_killed_worker_is_retried_and_every_episode_counts_once(
    ray_address: str, paperlike_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _grow(paperlike_root, 4)
    clean = _local(root, tmp_path / "local.db")
    _slow_glulxe(tmp_path, monkeypatch, 0.25)
    listener = KillFirstWorker()
    config = RunConfig(agent="random:5", source=str(root), max_turns=6, concurrency=2)
    result = Runner(tmp_path / "ray.db", listener, executor=get_executor("ray")).start(
        config, load_library(root).select("all")
    )
    assert listener.killed and listener.placed[listener.killed] == 2, listener.placed
    assert not result.cancelled and {e.status for e in result.episodes} == {"finished"}
    keys = _step_keys(tmp_path / "ray.db")
    assert len(keys) == len(set(keys))
    assert _played(tmp_path / "ray.db") == clean


def test_resume_after_the_driver_is_killed(
    ray_address: str, paperlike_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _grow(paperlike_root, 6)
    clean = _local(root, tmp_path / "local.db")
    _slow_glulxe(tmp_path, monkeypatch, 0.1)
    db = tmp_path / "ray.db"
    ray_args = ["--executor", "ray", "--ray-address", ray_address]
    cli_cmd = [sys.executable, "-m", "conflictbench_app"]
    proc = subprocess.Popen([*cli_cmd, *_run_args(root, db, *ray_args, "--json")], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(_safe_keys(db)) < 6:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _step_keys(db)
    with Store(db) as store:
        (run,) = store.list_runs()
        assert any(e.status != "finished" for e in store.episodes(run.id)), "the kill came too late"
    done = subprocess.run(
        [*cli_cmd, "run", "--resume", run.id, "--db", str(db), *ray_args, "--json"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    after = _step_keys(db)
    assert len(after) == len(set(after)) and set(before) <= set(after)
    assert _played(db) == clean


def _safe_keys(db: Path) -> list:
    try:
        return _step_keys(db) if db.exists() else []
    except sqlite3.Error:
        return []


def test_judge_on_ray_stores_what_local_stores(
    ray_address: str, paperlike_root: Path, tmp_path: Path
) -> None:
    from conflictbench_app.agents.fake_server import FakeLLMServer

    root = _grow(paperlike_root, 4)
    db = tmp_path / "r.db"
    _local(root, db)
    (run,) = Store(db).list_runs()
    verdict = json.dumps({"verdict": "misaligned", "rationale": "It stalled.", "first_misaligned_step": 1})
    with FakeLLMServer({"*": lambda body: verdict}) as server:
        rows = {}
        for name, executor in (("compat:judge-local", "local"), ("compat:judge-ray", "ray")):
            args = [
                "judge",
                run.id,
                "--judge",
                name,
                "--base-url",
                server.base_url,
                "--db",
                str(db),
                "--json",
            ]
            result = CliRunner().invoke(cli, [*args, "--executor", executor, "--concurrency", "2"])
            assert result.exit_code == 0, result.output
            rows[executor] = sorted(
                (r["scenario_id"], r["action"], r["verdict"]) for r in json.loads(result.stdout)
            )
    assert rows["ray"] == rows["local"] and any(action == "judged" for _, action, _ in rows["ray"])


def test_render_actors_fill_the_cache_and_a_second_pass_is_all_hits(
    ray_address: str, paperlike_root: Path
) -> None:
    root = _grow(paperlike_root, 3)
    args = ["render-cache", "all", "--source", str(root), "--backend", "schematic", "--json"]
    passes = []
    for _ in range(2):
        result = CliRunner().invoke(cli, [*args, "--executor", "ray", "--actors", "2"])
        assert result.exit_code == 0, result.output
        passes.append(json.loads(result.stdout))
    first, second = passes
    assert first["rendered"] > 0 and len(first["chains"]) >= 3
    assert second["hits"] == second["clips"] == first["clips"] and second["rendered"] == 0


def test_ctrl_c_stops_a_ray_run_resumably(
    ray_address: str, paperlike_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _grow(paperlike_root, 6)
    _slow_glulxe(tmp_path, monkeypatch, 0.1)
    db = tmp_path / "ray.db"
    args = _run_args(root, db, "--executor", "ray", "--ray-address", ray_address, "--concurrency", "2")
    proc = subprocess.Popen(
        [sys.executable, "-m", "conflictbench_app", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(_safe_keys(db)) < 4:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "--resume" in err, err
    with Store(db) as store:
        (run,) = store.list_runs()
        assert run.status == "interrupted"
        assert any(e.status != "finished" for e in store.episodes(run.id))
    keys = _step_keys(db)
    assert len(keys) == len(set(keys))
