"""The embedded model (``local:smollm2-135m``, issue #19): load time, resident memory, and seconds per turn, against
the scripted ``random:1`` agent playing the same scenarios in the same run (the engine's and the store's share of a
turn, which the model cannot go below).

Each episode goes through the real stack: the runner, one glulxe process per episode, SQLite and the agent. The time
per turn is the agent's own latency recorded on each step (``timings.agent_s``); the wall time per turn includes the
engine and the store. The target for the model is a median of at most 1.5 s per turn on a laptop CPU.

    .venv/bin/python benchmarks/bench_local_model.py                 # 4 project scenarios, text-only, 6 turns each
    .venv/bin/python benchmarks/bench_local_model.py --scenarios EP1-101,EP2-101 --max-turns 4
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from conflictbench_app.runner import RunConfig, Runner
from conflictbench_app.scenarios.library import load_library
from conflictbench_app.store import Store

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 1.5


def rss_mib() -> float:
    """The peak resident set of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def play(agent: str, scenarios: str, max_turns: int, db: Path) -> tuple[float, list[float]]:
    """(wall seconds, the agent's seconds for every step) for one run of ``agent``."""
    library = load_library(ROOT / "scenarios")
    config = RunConfig(agent=agent, scenarios=scenarios, max_turns=max_turns, source=str(ROOT / "scenarios"))
    started = time.perf_counter()
    result = Runner(db).start(config, library.select(scenarios))
    wall = time.perf_counter() - started
    bad = [e for e in result.episodes if e.status != "finished"]
    if bad:
        sys.exit(f"{agent}: {len(bad)} episodes did not finish: {bad[0].error}")
    with Store(db) as store:
        per_step = [
            s.timings.get("agent_s", 0.0)
            for e in result.episodes
            for s in store.steps(e.id)
            if s.actor == "model"
        ]
    return wall, per_step


def line(name: str, wall: float, per_step: list[float]) -> str:
    turns = max(1, len(per_step))
    return (
        f"{name:<22} {len(per_step):>5} turns  wall {wall:7.1f} s  wall/turn {wall / turns:6.3f} s  "
        f"agent median {statistics.median(per_step or [0]):6.3f} s  p90 {_p90(per_step):6.3f} s"
    )


def _p90(values: list[float]) -> float:
    return sorted(values)[int(0.9 * (len(values) - 1))] if values else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scenarios", default="EP1-101,EP1-110,EP2-101,EP3-101")
    parser.add_argument("--max-turns", type=int, default=6)
    parser.add_argument("--model", default="smollm2-135m")
    args = parser.parse_args()

    from conflictbench_app.agents.local_model import available, get_local_model

    if not available(args.model):
        sys.exit(
            f"The embedded model {args.model} is not installed (bash packaging/bootstrap.sh app installs it)."
        )
    rss_before = rss_mib()
    started = time.perf_counter()
    model = get_local_model(args.model)
    load_s = time.perf_counter() - started
    print(f"embedded model {model.spec.title}")
    print(f"load {load_s:.2f} s in this process (of which the model's own load {model.load_seconds:.2f} s)")
    print(f"peak RSS {rss_before:.0f} MiB before loading, {rss_mib():.0f} MiB after")

    with tempfile.TemporaryDirectory() as tmp:
        base_wall, base_steps = play("random:1", args.scenarios, args.max_turns, Path(tmp) / "random.db")
        wall, steps = play(f"local:{args.model}", args.scenarios, args.max_turns, Path(tmp) / "local.db")
    print(line("random:1 (baseline)", base_wall, base_steps))
    print(line(f"local:{args.model}", wall, steps))
    median = statistics.median(steps or [0])
    base_turn = base_wall / max(1, len(base_steps))
    print(
        f"wall per turn: {wall / max(1, len(steps)) / max(base_turn, 1e-9):.1f}x the scripted agent's; "
        f"model median {median:.2f} s per turn against a target of {TARGET_S} s "
        f"({'met' if median <= TARGET_S else 'NOT met'} on this machine)"
    )
    print(f"peak RSS after both runs {rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
