"""Engine overhead and whole-run speed.

Prints, in one run on the same machine:
- the median latency of one turn through the project's engine (GlulxGame.send + Episode.step) against a bare RemGlk
  round trip (raw JSON over the pipe, no parsing beyond finding the end of the update), and their ratio;
- the wall time of `conflictbench run --agent random:1` over every environment of a source folder.

Targets (issue #2): engine overhead under 1.5x the bare round trip; the 30 shared paper environments in under 10 s
on 2 cores.

    .venv/bin/python benchmarks/bench_engine.py --source ../shared/paper-corpus/results
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from conflictbench_app.engine.glulxe import GlulxGame
from conflictbench_app.episode import Episode
from conflictbench_app.scenarios.library import load_library
from conflictbench_app.toolchain import find_glulxe

ROOT = Path(__file__).resolve().parents[1]


def bare_round_trips(story: Path, commands: list[str], rounds: int) -> list[float]:
    """Send lines straight to glulxe and wait for each update's terminating blank line."""
    proc = subprocess.Popen(
        [str(find_glulxe()), "--rngseed", "1", str(story)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    out = proc.stdout
    assert out is not None and proc.stdin is not None

    def exchange(event: dict) -> dict:
        proc.stdin.write((json.dumps(event) + "\n").encode())  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        raw = b""
        while not raw.endswith(b"\n\n"):
            raw += out.readline()
        return json.loads(raw)

    update = exchange({"type": "init", "gen": 0, "metrics": {"width": 100, "height": 40}, "support": []})
    times = []
    for i in range(rounds):
        window = update["input"][0]["id"]
        started = time.perf_counter()
        update = exchange(
            {"type": "line", "gen": update["gen"], "window": window, "value": commands[i % len(commands)]}
        )
        times.append(time.perf_counter() - started)
    proc.kill()
    proc.wait()
    return times


def engine_round_trips(story: Path, commands: list[str], rounds: int) -> list[float]:
    times = []
    with GlulxGame(story) as game:
        for i in range(rounds):
            started = time.perf_counter()
            game.send(commands[i % len(commands)])
            times.append(time.perf_counter() - started)
    return times


def episode_steps(scenario, commands: list[str], rounds: int) -> list[float]:
    """Episode.step adds state parsing and ending detection on top of the engine."""
    times = []
    with Episode(scenario, max_turns=10**6) as ep:
        ep.reset()
        for i in range(rounds):
            started = time.perf_counter()
            ep.step(commands[i % len(commands)])
            times.append(time.perf_counter() - started)
    return times


def run_wall_time(source: Path) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "CONFLICTBENCH_CACHE_DIR": tmp}
        started = time.perf_counter()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "conflictbench_app",
                "run",
                "--agent",
                "random:1",
                "--source",
                str(source),
                "--db",
                f"{tmp}/bench.db",
                "--json",
            ],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        elapsed = time.perf_counter() - started
    return elapsed, len(json.loads(proc.stdout)["episodes"])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--source", type=Path, default=ROOT.parent / "shared" / "paper-corpus" / "results")
    parser.add_argument("--rounds", type=int, default=400)
    args = parser.parse_args()
    if not args.source.is_dir():
        sys.exit(f"No scenario folder at {args.source}; pass --source.")
    library = load_library(args.source)
    scenario = library.scenarios[0]
    # Commands that never end the story: `help`-like probes and a parser error keep the game running.
    commands = ["look", "xyzzy", "help"]
    bare = bare_round_trips(scenario.story_file, commands, args.rounds)
    engine = engine_round_trips(scenario.story_file, commands, args.rounds)
    steps = episode_steps(scenario, commands, args.rounds)
    med = lambda xs: statistics.median(xs) * 1000  # noqa: E731
    print(f"story: {scenario.id} ({scenario.story_file.name}), {args.rounds} turns each")
    print(f"bare RemGlk round trip   median {med(bare):6.3f} ms")
    print(
        f"engine (GlulxGame.send)  median {med(engine):6.3f} ms   ratio {med(engine) / med(bare):4.2f}x  (target < 1.5x)"
    )
    print(f"Episode.step             median {med(steps):6.3f} ms   ratio {med(steps) / med(bare):4.2f}x")
    elapsed, n = run_wall_time(args.source)
    print(
        f"run --agent random:1 over {n} environments: {elapsed:.2f} s wall (target < 10 s for 30), "
        f"cold (help probes included, empty cache)"
    )


if __name__ == "__main__":
    main()
