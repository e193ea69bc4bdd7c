"""Kill -9 sweep: a run is killed at many points and resumed; nothing recorded is lost or duplicated, and the
resumed run ends as an uninterrupted one with the same seeded agent.

Each trial starts ``conflictbench run --agent random:SEED`` over N copies of the tiny test story, waits until K
steps are recorded (K sweeps from 1 up), sends SIGKILL, counts the recorded steps, resumes with
``--resume RUN_ID`` and compares: steps recorded before the kill all survive (same rows, same text), no
(episode, idx) appears twice, and the per-episode outcomes equal a clean run's (the baseline, measured in the same
invocation). Printed: per trial the steps at the kill, the episodes in flight, steps lost, duplicates, match.

    .venv/bin/python benchmarks/bench_kill9.py --trials 12 --episodes 9
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "data" / "tiny"


def make_source(folder: Path, n: int) -> Path:
    for i in range(n):
        target = folder / "ulxEnv" / f"{('EP1', 'EP2', 'EP3')[i % 3]}-9{i:02d}"
        target.mkdir(parents=True)
        shutil.copy(TINY / "env.json", target / "env.json")
        shutil.copy(TINY / "tiny.ulx", target / "tiny.ulx")
    return folder


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "conflictbench_app", *args]


def rows(db: Path) -> list[tuple]:
    try:
        with sqlite3.connect(db, timeout=2) as conn:
            query = "SELECT e.scenario_id, s.idx, s.action, s.result FROM steps s JOIN episodes e ON e.id = s.episode_id"
            return sorted(conn.execute(query).fetchall())
    except sqlite3.Error:
        return []


def outcomes(summary: dict) -> list[tuple]:
    return sorted(
        (e["scenario_id"], e["outcome"], e["turns"], e["failed_actions"]) for e in summary["episodes"]
    )


def trial(source: Path, db: Path, kill_at: int, seed: int, env: dict[str, str]) -> dict:
    args = [
        "run",
        "--agent",
        f"random:{seed}",
        "--source",
        str(source),
        "--db",
        str(db),
        "--json",
        "--max-turns",
        "8",
    ]
    proc = subprocess.Popen(cli(*args), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(rows(db)) < kill_at and proc.poll() is None:
        time.sleep(0.002)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = rows(db)
    with sqlite3.connect(db) as conn:
        run_id = conn.execute("SELECT id FROM runs").fetchone()[0]
        in_flight = conn.execute("SELECT count(*) FROM episodes WHERE status = 'running'").fetchone()[0]
    done = subprocess.run(
        cli("run", "--resume", run_id, "--db", str(db), "--json"),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    after = rows(db)
    keys = [(r[0], r[1]) for r in after]
    return {
        "killed_at": len(before),
        "in_flight": in_flight,
        "lost": len(set(before) - set(after)),
        "duplicates": len(keys) - len(set(keys)),
        "summary": json.loads(done.stdout) if done.returncode == 0 else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--episodes", type=int, default=9)
    parser.add_argument("--seed", type=int, default=5)
    opts = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory(prefix="cb-kill9-") as tmp:
        source = make_source(Path(tmp) / "src", opts.episodes)
        started = time.perf_counter()
        args = [
            "run",
            "--agent",
            f"random:{opts.seed}",
            "--source",
            str(source),
            "--json",
            "--max-turns",
            "8",
        ]
        clean = subprocess.run(
            cli(*args, "--db", str(Path(tmp) / "clean.db")),
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        baseline_s = time.perf_counter() - started
        expected = outcomes(json.loads(clean.stdout))
        total = len(rows(Path(tmp) / "clean.db"))
        print(f"baseline: clean run of {opts.episodes} episodes, {total} steps, {baseline_s:.2f} s")
        matches = lost = dups = 0
        for i in range(opts.trials):
            kill_at = 1 + (i * max(1, total - 2)) // max(1, opts.trials - 1)
            db = Path(tmp) / f"t{i}.db"
            started = time.perf_counter()
            result = trial(source, db, kill_at, opts.seed, env)
            seconds = time.perf_counter() - started
            same = result["summary"] is not None and outcomes(result["summary"]) == expected
            matches += same
            lost += result["lost"]
            dups += result["duplicates"]
            print(
                f"trial {i + 1:2}: killed after {result['killed_at']:3} steps, {result['in_flight']} episodes in "
                f"flight; lost {result['lost']}, duplicated {result['duplicates']}, resumed run = clean run: {same} "
                f"({seconds:.2f} s, {seconds / baseline_s:.2f}x the clean run)"
            )
        print(
            f"sweep: {opts.trials} kills, {lost} recorded steps lost, {dups} duplicated, "
            f"{matches}/{opts.trials} resumed runs equal the clean run"
        )


if __name__ == "__main__":
    main()
