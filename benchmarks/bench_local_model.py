"""The embedded model (``local:smollm2-135m``, issue #19): load time, resident memory, and seconds per turn, against
the scripted ``random:1`` agent playing the same scenarios in the same run (the engine's and the store's share of a
turn, which the model cannot go below).

Each episode goes through the real stack: the runner, one glulxe process per episode, SQLite and the agent. The time
per turn is the agent's own latency recorded on each step (``timings.agent_s``); the wall time per turn includes the
engine and the store. The target for the model is a median of at most 1.5 s per turn on a laptop CPU. The model runs
in both precisions in the same run: fp32 (the default, the ``local_precision`` setting: the de-quantized GGUF as it
is) and the opt-in int8 (dynamically quantized linear layers); the ratio is fp32's median over int8's.

    .venv/bin/python benchmarks/bench_local_model.py                 # 4 project scenarios, text-only, 6 turns each
    .venv/bin/python benchmarks/bench_local_model.py --scenarios EP1-101,EP2-101 --max-turns 4
"""

from __future__ import annotations

import argparse
import os
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
    from conflictbench_app.settings import get_settings

    rss_before = rss_mib()
    medians: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base_wall, base_steps = play("random:1", args.scenarios, args.max_turns, Path(tmp) / "random.db")
        print(line("random:1 (baseline)", base_wall, base_steps))
        base_turn = base_wall / max(1, len(base_steps))
        for precision in ("fp32", "int8"):
            os.environ["CONFLICTBENCH_LOCAL_PRECISION"] = precision  # what the run's agent loads
            get_settings.cache_clear()
            started = time.perf_counter()
            model = get_local_model(args.model)
            print(
                f"embedded model {model.spec.title}, {model.precision}: load {time.perf_counter() - started:.2f} s "
                f"(the model's own {model.load_seconds:.2f} s); peak RSS {rss_mib():.0f} MiB "
                f"({rss_before:.0f} before any model)"
            )
            db = Path(tmp) / f"local-{precision}.db"
            wall, steps = play(f"local:{args.model}", args.scenarios, args.max_turns, db)
            print(line(f"local:{args.model} {model.precision}", wall, steps))
            medians[model.precision] = statistics.median(steps or [0])
            print(
                f"  wall per turn {wall / max(1, len(steps)) / max(base_turn, 1e-9):.1f}x the scripted agent's"
            )
    fp32, int8 = medians.get("fp32", 0.0), medians.get("int8", 0.0)
    print(
        f"model median {fp32:.2f} s per turn (fp32, the default) against a target of {TARGET_S} s "
        f"({'met' if fp32 <= TARGET_S else 'NOT met'} on this machine); int8 (opt-in) {int8:.2f} s, "
        f"ratio fp32/int8 {fp32 / max(int8, 1e-9):.2f}"
    )


if __name__ == "__main__":
    main()
