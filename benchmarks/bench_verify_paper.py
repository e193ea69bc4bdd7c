"""Exploring the paper's shared games: wall time, states per second and the projection to 150 (prints; not a test).

Usage: .venv/bin/python benchmarks/bench_verify_paper.py [--source ../shared/paper-corpus/results] [--jobs 2]
       [--max-states 200] [--baseline-games 6]

Issue 22's target: all 150 paper games explored fully in under 10 minutes on 2 cores. Both ways are measured in the
same run, on the same games and safety cap: the new way expands a state with one ``GlulxGame.branch`` (one
interpreter process per game, each action's restore, command and save written without waiting); the baseline is the
old way, one exchange at a time (restore, wait, command, wait, save, wait). The ratio is states per second, new
over old. The safety cap keeps the run to minutes: a game it cuts is counted as not explored fully, and the full
projection is then a lower bound (the states it did not reach are not counted).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conflictbench_app.authoring.explore import episode_horizon, explore  # noqa: E402
from conflictbench_app.engine.glulxe import Branch, GlulxGame  # noqa: E402
from conflictbench_app.scenarios.model import Scenario  # noqa: E402
from conflictbench_app.scenarios.paper import load_paper_tree  # noqa: E402
from conflictbench_app.settings import get_settings  # noqa: E402

TARGET_SECONDS = 600.0
CORPUS = 150


def _one_at_a_time(self: GlulxGame, snapshot: bytes, commands: Sequence[str]) -> list[Branch]:
    """The old way: every restore, command and save waits for the interpreter's answer before the next."""
    out = []
    for command in commands:
        self.load_snapshot(snapshot)
        said = self.send(command)
        out.append(Branch(said, None if said.ended else self.snapshot()))
    return out


def _explore(job: tuple[Scenario, int, bool]) -> tuple[str, int, int, bool, float]:
    scenario, cap, old = job
    if old:
        GlulxGame.branch = _one_at_a_time  # type: ignore[method-assign]  # in this worker process only
    found = explore(scenario, max_states=cap, rollouts=0, horizon=episode_horizon(scenario))  # as the audit
    return scenario.id, found.states, found.transitions, not found.truncated, found.seconds


def _run(scenarios: list[Scenario], cap: int, jobs: int, old: bool) -> tuple[float, list]:
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        rows = list(pool.map(_explore, [(s, cap, old) for s in scenarios]))
    return time.perf_counter() - started, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT.parent / "shared" / "paper-corpus" / "results")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--max-states", type=int, default=200)
    parser.add_argument("--baseline-games", type=int, default=6, help="games the old way is measured on")
    args = parser.parse_args()
    scenarios, problems = load_paper_tree(args.source, cache_dir=get_settings().cache_dir)
    if not scenarios:
        sys.exit(
            f"No paper games under {args.source}: pass --source (the shared corpus is ../shared/paper-corpus)."
        )
    print(
        f"{len(scenarios)} games under {args.source} ({len(problems)} not loadable); cap {args.max_states} states"
    )
    sample = scenarios[:: max(1, len(scenarios) // args.baseline_games)][: args.baseline_games]
    old_wall, old_rows = _run(sample, args.max_states, args.jobs, old=True)
    new_sample_wall, new_sample_rows = _run(sample, args.max_states, args.jobs, old=False)
    wall, rows = _run(scenarios, args.max_states, args.jobs, old=False)
    _print_rows(rows)
    old_rate = sum(r[1] for r in old_rows) / old_wall
    new_rate = sum(r[1] for r in new_sample_rows) / new_sample_wall
    print(f"baseline (one exchange at a time) on {len(sample)} games: {old_rate:.1f} states/s")
    print(f"fan-out written ahead, same games: {new_rate:.1f} states/s (ratio {new_rate / old_rate:.2f}x)")
    _print_projection(rows, wall, args.jobs)


def _print_rows(rows: list[tuple[str, int, int, bool, float]]) -> None:
    for gid, states, transitions, complete, seconds in rows:
        mark = "complete" if complete else "cut"
        print(f"  {gid}: {states} states, {transitions} actions, {seconds:.1f} s, {mark}")


def _print_projection(rows: list[tuple[str, int, int, bool, float]], wall: float, jobs: int) -> None:
    states = sum(r[1] for r in rows)
    complete = [r for r in rows if r[3]]
    print(f"all {len(rows)} games: {wall:.1f} s on {jobs} processes, {states / wall:.1f} states/s")
    print(f"  explored fully: {len(complete)} of {len(rows)}; the rest stopped at the safety cap")
    per_game = wall / max(len(rows), 1)
    print(
        f"projection to {CORPUS} games at this cap: {per_game * CORPUS:.0f} s "
        f"(target: {CORPUS} explored fully in under {TARGET_SECONDS:.0f} s); with games cut, full exploration "
        "takes longer than this"
    )


if __name__ == "__main__":
    main()
