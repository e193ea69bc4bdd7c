"""Ray against local: episodes per second at concurrency 16 with 200 ms replies from the loopback server, and
render-cache throughput with 2 render actors against 1.

The same episodes (seeded random valid actions) are played by the local thread pool and by Ray tasks on a local
Ray instance started once beforehand (its start-up, printed apart, is not in the timed runs; a cluster is
long-lived). Target: ray within 1.2x of local's wall time on one machine.

    .venv/bin/python benchmarks/bench_ray.py --scenarios EP1
    .venv/bin/python benchmarks/bench_ray.py --renders --render-backend schematic
    .venv/bin/python benchmarks/bench_ray.py --renders --render-backend wan --wan-model DIR --scenarios EP1-001,EP1-002,...
      (DIR: a tiny random-weight pipeline from conflictbench_app.worldmodel.tiny_wan.build_tiny_wan; 2+2 steps)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from conflictbench_app.agents.fake_server import FakeLLMServer
from conflictbench_app.executors import get_executor
from conflictbench_app.runner import RunConfig, Runner
from conflictbench_app.scenarios.library import load_library

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT.parent / "shared" / "paper-corpus" / "results"


def run_once(
    source: Path, which: str, executor: str, args: argparse.Namespace, db: Path
) -> tuple[float, int]:
    """(wall seconds, episodes) for one run."""
    scenarios = load_library(source).select(which)
    with FakeLLMServer(latency=args.latency, seed=1) as server:
        config = RunConfig(
            agent="compat:bench",
            source=str(source),
            concurrency=args.concurrency,
            agent_options={"base_url": server.base_url},
        )
        started = time.perf_counter()
        result = Runner(db, executor=get_executor(executor)).start(config, scenarios)
        wall = time.perf_counter() - started
    unfinished = [e for e in result.episodes if e.status != "finished"]
    if unfinished:
        print(f"warning: {len(unfinished)} episodes did not finish: {unfinished[0].error}", file=sys.stderr)
    return wall, len(result.episodes)


def bench_runs(args: argparse.Namespace, tmp: Path) -> None:
    print(
        f"source {args.source}  scenarios {args.scenarios}  concurrency {args.concurrency}  "
        f"reply latency {args.latency * 1000:.0f} ms"
    )
    local, episodes = run_once(args.source, args.scenarios, "local", args, tmp / "local.db")
    run_once(args.source, args.warmup or args.scenarios, "ray", args, tmp / "warm.db")  # starts the workers
    ray_wall, _ = run_once(args.source, args.scenarios, "ray", args, tmp / "ray.db")
    print(f"{'executor':>8} {'episodes':>8} {'wall s':>8} {'ep/s':>7}")
    for name, wall in (("local", local), ("ray", ray_wall)):
        print(f"{name:>8} {episodes:>8} {wall:>8.2f} {episodes / wall:>7.3f}")
    print(f"ray / local wall time: {ray_wall / local:.2f}x (target <= 1.2x)")


def bench_renders(args: argparse.Namespace, tmp: Path) -> None:
    from click.testing import CliRunner

    from conflictbench_app.cli import cli

    base = ["render-cache", args.scenarios, "--source", str(args.source), "--backend", args.render_backend]
    base += ["--executor", "ray", "--json"] + (["--wan-model", str(args.wan_model)] if args.wan_model else [])
    base += ["--steps", *map(str, args.steps)] if args.render_backend == "wan" else []
    walls = {}
    for actors in (1, 2):
        cache = tmp / f"cache{actors}"
        started = time.perf_counter()
        result = CliRunner().invoke(cli, [*base, "--cache-dir", str(cache), "--actors", str(actors)])
        walls[actors] = time.perf_counter() - started
        if result.exit_code != 0:
            sys.exit(result.output)
        data = json.loads(result.stdout)  # warnings (diffusers, Ray) go to stderr
        print(
            f"render-cache {args.render_backend}: {actors} actor(s) {walls[actors]:.2f} s, {data['clips']} clips "
            f"({data['rendered']} rendered), {data['clips'] / walls[actors]:.2f} clips/s"
        )
    print(f"2 actors vs 1: {walls[1] / walls[2]:.2f}x the throughput")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--source", type=Path, default=PAPER if PAPER.is_dir() else None)
    parser.add_argument("--scenarios", default="all", help="which scenarios (default all)")
    parser.add_argument(
        "--warmup", default=None, help="scenarios of the untimed warm-up run (default: the same)"
    )
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--renders", action="store_true", help="benchmark render-cache actors instead")
    parser.add_argument(
        "--render-backend", default="schematic", help="schematic, or wan with --wan-model (tiny)"
    )
    parser.add_argument("--wan-model", type=Path, default=None)
    parser.add_argument(
        "--steps",
        type=int,
        nargs=2,
        default=(2, 2),
        help="wan: denoising steps, base and step clips (default 2 2)",
    )
    args = parser.parse_args()
    if args.source is None:
        sys.exit("No scenarios: give --source (the paper corpus at ../shared is absent).")
    import ray

    started = time.perf_counter()
    # Logical CPUs for the episodes in flight, as `--executor ray` declares for an instance it starts (they wait on
    # the API): Ray keeps that many idle workers warm.
    ray.init(num_cpus=max(args.concurrency, 2), include_dashboard=False, logging_level="WARNING")
    print(f"ray start-up {time.perf_counter() - started:.1f} s (not in the timed runs)")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            (bench_renders if args.renders else bench_runs)(args, Path(tmp))
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
