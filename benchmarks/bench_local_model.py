"""The embedded model (``local:smollm2-135m``, issue #19): load time, resident memory, and seconds per turn, against
the scripted ``random:1`` agent playing the same scenarios in the same run (the engine's and the store's share of a
turn, which the model cannot go below).

Each episode goes through the real stack: the runner, one glulxe process per episode, SQLite and the agent. The time
per turn is the agent's own latency recorded on each step (``timings.agent_s``); the wall time per turn includes the
engine and the store. The target for the model is a median of at most 1.5 s per turn on 2 cores. The precisions run
one after the other in the same run: "onnx" (the default ``local_precision``: float32 on ONNX Runtime), and on torch
"mixed" (float32 prompts and action scores, bf16 weights for the thought's tokens), "fp32" (float32 throughout) and
"int8" (dynamically quantized linear layers); each is compared with the first one named. ``--protocols`` plays each precision under each play
protocol named: "paper" (the default: the reply-format instruction is appended to every turn's last user message, so
it runs again each turn) and "studio" (the format and the valid actions in the system prompt, earlier thoughts kept).

    .venv/bin/python benchmarks/bench_local_model.py                 # 4 project scenarios, text-only, 6 turns each
    .venv/bin/python benchmarks/bench_local_model.py --scenarios EP1-101,EP2-101 --max-turns 4
    .venv/bin/python benchmarks/bench_local_model.py --scenarios all --max-turns 0 --precisions onnx  # every
        # reviewed scenario of ours to its end or the text-only turn cap: the wall time of a whole run
    .venv/bin/python benchmarks/bench_local_model.py --protocols paper,studio --precisions onnx  # both protocols
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import resource
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from conflictbench_app.runner import RunConfig, Runner
from conflictbench_app.scenarios.library import load_library
from conflictbench_app.store import Store

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 1.5


def rss_mib() -> float:
    """The peak resident set of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def play(
    agent: str, scenarios: str, max_turns: int, db: Path, protocol: str = "paper"
) -> tuple[float, list[tuple[int, float]], str]:
    """(wall seconds, (step number, the agent's seconds) for every model step, where the turns went) for one run of
    ``agent``."""
    library = load_library(ROOT / "scenarios")
    config = RunConfig(
        agent=agent,
        scenarios=scenarios,
        max_turns=max_turns,
        source=str(ROOT / "scenarios"),
        protocol=protocol,
    )
    started = time.perf_counter()
    result = Runner(db).start(config, library.select(scenarios))
    wall = time.perf_counter() - started
    bad = [e for e in result.episodes if e.status != "finished"]
    if bad:
        sys.exit(f"{agent}: {len(bad)} episodes did not finish: {bad[0].error}")
    with Store(db) as store:
        steps = [s for e in result.episodes for s in store.steps(e.id) if s.actor == "model"]
    return wall, [(s.idx, s.timings.get("agent_s", 0.0)) for s in steps], parts_line(steps)


def parts_line(steps: list) -> str:
    """Where the embedded model's turns went (medians): the thought (its new prompt tokens, then the generated
    tokens) and the choice (one pass over every action's tokens), and the thought's length ("" for other agents)."""
    if not steps or "thought_s" not in steps[0].meta:
        return ""
    thought = [s.meta.get("thought_s", 0.0) for s in steps]
    choice = [s.meta.get("choice_s", 0.0) for s in steps]
    tokens = [s.usage.completion_tokens for s in steps]
    return (
        f"  medians: thought {statistics.median(thought):.2f} s ({statistics.median(tokens):.0f} tokens, p90 "
        f"{_p90(tokens):.0f}), choice {statistics.median(choice):.2f} s"
    )


def line(name: str, wall: float, steps: list[tuple[int, float]]) -> str:
    per_step = [seconds for _, seconds in steps]
    turns = max(1, len(per_step))
    return (
        f"{name:<22} {len(per_step):>5} turns  wall {wall:7.1f} s  wall/turn {wall / turns:6.3f} s  "
        f"agent median {statistics.median(per_step or [0]):6.3f} s  p90 {_p90(per_step):6.3f} s"
    )


def split_line(steps: list[tuple[int, float]]) -> str:
    """The first turn of an episode (its whole prompt runs from scratch) apart from the later ones (only the new
    turn's tokens run after the cached history), and the share of turns within the target."""
    first = [seconds for idx, seconds in steps if idx == 0] or [0.0]
    later = [seconds for idx, seconds in steps if idx > 0] or [0.0]
    within = sum(seconds <= TARGET_S for _, seconds in steps) / max(1, len(steps))
    return (
        f"  first turns median {statistics.median(first):.2f} s ({len(first)}), later turns median "
        f"{statistics.median(later):.2f} s ({len(later)}); {within:.0%} of turns within {TARGET_S} s"
    )


def _p90(values: list[float]) -> float:
    """The nearest-rank 90th percentile (the largest of fewer than ten values)."""
    return sorted(values)[max(0, math.ceil(0.9 * len(values)) - 1)] if values else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scenarios", default="EP1-101,EP1-110,EP2-101,EP3-101")
    parser.add_argument("--max-turns", type=int, default=6, help="0: the text-only turn cap of the settings")
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument(
        "--precisions", default="onnx,mixed,fp32", help="comma-separated, the first is the reference"
    )
    parser.add_argument(
        "--protocols",
        default="paper",
        help="comma-separated play protocols (paper, studio), each run with every precision",
    )
    args = parser.parse_args()

    from conflictbench_app.agents.local_model import available

    if not available(args.model):
        sys.exit(
            f"The embedded model {args.model} is not installed (bash packaging/bootstrap.sh app installs it)."
        )
    medians: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base_wall, base_steps, _ = play("random:1", args.scenarios, args.max_turns, Path(tmp) / "random.db")
        print(line("random:1 (baseline)", base_wall, base_steps))
        base_turn = base_wall / max(1, len(base_steps))
        for protocol in args.protocols.split(","):
            for precision in args.precisions.split(","):
                # A fresh process per run: its peak resident memory is what running that model costs.
                with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
                    medians[f"{precision}/{protocol}"] = pool.submit(
                        run_precision, args, precision, protocol, Path(tmp), base_turn
                    ).result()
    first, *others = list(medians)
    print(
        f"model median {medians[first]:.2f} s per turn ({first}, the reference) against a target of {TARGET_S} s "
        f"({'met' if medians[first] <= TARGET_S else 'NOT met'} on this machine)"
    )
    for other in others:
        print(
            f"  {other}: {medians[other]:.2f} s, {medians[other] / max(medians[first], 1e-9):.2f}x the reference's"
        )


def run_precision(
    args: argparse.Namespace, precision: str, protocol: str, tmp: Path, base_turn: float
) -> float:
    """Load the model in ``precision`` in this (fresh) process, play by ``protocol``, print; the median seconds per
    turn."""
    from conflictbench_app.agents.local_model import get_local_model
    from conflictbench_app.settings import get_settings

    os.environ["CONFLICTBENCH_LOCAL_PRECISION"] = precision  # what the run's agent loads
    get_settings.cache_clear()
    before, started = rss_mib(), time.perf_counter()
    model = get_local_model(args.model)
    print(
        f"embedded model {model.spec.title}, {model.precision}: load {time.perf_counter() - started:.2f} s "
        f"(the model's own {model.load_seconds:.2f} s)",
        flush=True,
    )
    db = tmp / f"local-{precision}-{protocol}.db"
    wall, steps, parts = play(f"local:{args.model}", args.scenarios, args.max_turns, db, protocol)
    print(line(f"local:{args.model} {model.precision} {protocol}", wall, steps))
    print(split_line(steps))
    print(parts)
    print(
        f"  wall per turn {wall / max(1, len(steps)) / max(base_turn, 1e-9):.1f}x the scripted agent's; "
        f"peak RSS of its process {rss_mib():.0f} MiB ({before:.0f} MiB before the model's runtime loaded)",
        flush=True,
    )
    return statistics.median([seconds for _, seconds in steps] or [0])


if __name__ == "__main__":
    main()
