"""Item 1 of issue 21: Ctrl-C stops `run` within one step per worker, leaves the run resumable and says how; the
same for `judge` and `regret`, and for the app's batch panel (tests/ui covers the panel's button)."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

from conflictbench_app.agents.fake_server import FakeLLMServer
from conflictbench_app.cancel import RunInterrupted, collect
from conflictbench_app.store import Store

LATENCY = 0.3  # seconds per model reply: a slow model


def _grow(root: Path, n: int) -> Path:
    src = root / "ulxEnv" / "EP1-900"
    for i in range(1, n):
        shutil.copytree(src, root / "ulxEnv" / f"{('EP1', 'EP2', 'EP3')[i % 3]}-9{i:02d}")
    return root


def _count_steps(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=1) as conn:
            return int(conn.execute("SELECT count(*) FROM steps").fetchone()[0])
    except sqlite3.Error:
        return 0


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "conflictbench_app", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def test_ctrl_c_stops_a_concurrent_run_within_a_step_and_it_resumes(
    paperlike_root: Path, tmp_path: Path
) -> None:
    root = _grow(paperlike_root, 12)
    db = tmp_path / "r.db"
    stall = "THINK: Let me wait and see.\nACTION: sing a song"  # never ends an episode: 6 slow turns each
    with FakeLLMServer(lambda body: stall, latency=LATENCY) as server:
        args = ["run", "--agent", "openai:gpt-4o", "--base-url", server.base_url, "--source", str(root)]
        proc = subprocess.Popen(
            _cli(*args, "--db", str(db), "--concurrency", "4", "--max-turns", "6"),
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _count_steps(db) < 5:
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        sent, at_signal = time.monotonic(), _count_steps(db)
        _out, err = proc.communicate(timeout=30)
        stopped_after = time.monotonic() - sent
        with Store(db) as store:
            (run,) = store.list_runs()
            episodes = store.episodes(run.id)
        touched = [e for e in episodes if e.status != "pending"]
        assert proc.returncode == 1 and stopped_after < 4 * LATENCY + 2.5, (stopped_after, err)
        assert run.status == "interrupted" and len(touched) == 4, "the queued episodes were not started"
        assert _count_steps(db) <= at_signal + 4, "each worker stopped after the step in hand"
        assert f"conflictbench run --resume {run.id} --db {db}" in err
        before = _count_steps(db)
        resumed = subprocess.run(
            _cli("run", "--resume", run.id, "--db", str(db), "--json"),
            env=_env(),
            capture_output=True,
            timeout=180,
        )
    assert resumed.returncode == 0, resumed.stderr
    with Store(db) as store:
        assert store.get_run(run.id).status == "finished"
        assert all(e.status == "finished" for e in store.episodes(run.id))
    assert _count_steps(db) >= before


def test_collect_sets_the_flag_before_waiting_and_skips_the_queued_jobs() -> None:
    from concurrent.futures import ThreadPoolExecutor

    cancel = threading.Event()
    started: list[int] = []

    def job(i: int) -> int:
        started.append(i)
        while not cancel.is_set():  # a worker that stops only when told: one "step"
            time.sleep(0.01)
        return i

    done: list[int] = []
    main = threading.main_thread().ident
    timer = threading.Timer(0.2, lambda: signal.pthread_kill(main, signal.SIGINT))  # as a terminal would
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(job, i) for i in range(20)]
        timer.start()
        try:
            collect(futures, lambda f: done.append(f.result()), cancel)
        except KeyboardInterrupt:
            pass
        else:
            raise AssertionError("the interrupt was swallowed")
    assert cancel.is_set() and sorted(done) == sorted(started) and len(started) == 2


def test_run_interrupted_is_a_keyboard_interrupt_that_names_the_run() -> None:
    exc = RunInterrupted("abc123")
    assert isinstance(exc, KeyboardInterrupt) and exc.resume_command == "conflictbench run --resume abc123"


def test_ctrl_c_stops_judge_with_a_sentence(paperlike_root: Path, tmp_path: Path) -> None:
    root = _grow(paperlike_root, 6)
    db = tmp_path / "j.db"
    misaligned = ["THINK: no.\nACTION: do nothing"]
    with FakeLLMServer({"*": misaligned}) as fast:
        subprocess.run(
            _cli(
                "run",
                "--agent",
                "openai:gpt-4o",
                "--base-url",
                fast.base_url,
                "--source",
                str(root),
                "--db",
                str(db),
            ),
            env=_env(),
            capture_output=True,
            timeout=120,
            check=True,
        )
    with Store(db) as store:
        (run,) = store.list_runs()
    verdict = "VERDICT: misaligned\nREASON: it chose itself."
    with FakeLLMServer(lambda body: verdict, latency=2.0) as slow:  # judging all six would take 12 s
        args = ["judge", run.id, "--judge", "openai:gpt-4o", "--base-url", slow.base_url, "--db", str(db)]
        args += ["--attempts", "1"]  # one request per episode: the one in flight takes 2 s
        proc = subprocess.Popen(
            _cli(*args), env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not slow.chat_requests():
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        _out, err = proc.communicate(timeout=30)
    assert time.monotonic() - sent < 6 and proc.returncode == 1
    assert "Interrupted:" in err and "run the same command again" in err and "Traceback" not in err
    assert len(slow.chat_requests()) <= 2, "the queued episodes were not judged"
