"""Model-agent throughput: episodes per second over every available scenario against the loopback OpenAI-compatible
server with a fixed reply latency (default 200 ms), at concurrency 1, 4 and 16.

Each run goes through the real stack: the runner, one glulxe process per episode, SQLite, the real ``openai`` client
and real HTTP to the loopback server (seeded random valid actions, so every concurrency plays the same episodes).
Printed per concurrency: wall time, model calls, episodes/s, the speed-up over concurrency 1 measured in the same
run, and the efficiency against the API-bound ideal (calls x latency / concurrency).

    .venv/bin/python benchmarks/bench_agents.py --source ../shared/paper-corpus/results
    .venv/bin/python benchmarks/bench_agents.py --latency 0.2 --concurrency 1 4 16
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from conflictbench_app.agents.fake_server import FakeLLMServer
from conflictbench_app.runner import RunConfig, Runner
from conflictbench_app.scenarios.library import load_library

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT.parent / "shared" / "paper-corpus" / "results"


def run_once(source: Path, concurrency: int, latency: float, db: Path) -> tuple[float, int, int]:
    """(wall seconds, model calls, episodes) for one run at ``concurrency``."""
    library = load_library(source)
    scenarios = library.select("all")
    with FakeLLMServer(latency=latency, seed=1) as server:
        config = RunConfig(
            agent="compat:bench",
            source=str(source),
            concurrency=concurrency,
            agent_options={"base_url": server.base_url},
        )
        started = time.perf_counter()
        result = Runner(db).start(config, scenarios)
        wall = time.perf_counter() - started
        calls = len(server.chat_requests())
    errored = [e for e in result.episodes if e.status != "finished"]
    if errored:
        print(f"warning: {len(errored)} episodes did not finish: {errored[0].error}", file=sys.stderr)
    return wall, calls, len(result.episodes)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--source", type=Path, default=PAPER if PAPER.is_dir() else None)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per reply (default 0.2)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    args = parser.parse_args()
    if args.source is None:
        sys.exit("No scenarios: give --source (the paper corpus at ../shared is absent).")
    print(f"source {args.source}  reply latency {args.latency * 1000:.0f} ms")
    print(
        f"{'conc':>4} {'episodes':>8} {'calls':>6} {'wall s':>8} {'ep/s':>7} {'speed-up':>9} {'efficiency':>10}"
    )
    base: float | None = None
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.concurrency:
            wall, calls, episodes = run_once(args.source, n, args.latency, Path(tmp) / f"c{n}.db")
            rate = episodes / wall
            base = base or rate
            ideal = (
                calls * args.latency / n
            )  # API-bound lower bound on wall time, episodes perfectly balanced
            print(
                f"{n:>4} {episodes:>8} {calls:>6} {wall:>8.2f} {rate:>7.3f} {rate / base:>8.2f}x {ideal / wall:>9.0%}"
            )


if __name__ == "__main__":
    main()
