"""wm-eval throughput: frames extracted and judged per second with a judge that takes 200 ms a reply (the loopback
OpenAI-compatible server), at concurrency 1 and 8.

The clips are rendered once beforehand (schematic, the paper's 49 frames at 832x480) into a cache that every run
shares, so what is timed is the judging stage: five frames decoded from each mp4 (once per clip, kept for its
other three dimensions) (the last from its PNG), encoded
as JPEG, sent over real HTTP with the real ``openai`` client, the reply parsed, the judgment stored in SQLite.
Printed per concurrency: wall time, judgments, frames/s, the speed-up over concurrency 1 measured in the same run,
and the efficiency against the API-bound ideal (judgments x latency / concurrency).

    .venv/bin/python benchmarks/bench_wm_eval.py
    .venv/bin/python benchmarks/bench_wm_eval.py --latency 0.2 --concurrency 1 8 --episodes 3
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from conflictbench_app.agents.chat import get_chat_client
from conflictbench_app.agents.fake_server import FakeLLMServer
from conflictbench_app.evaluation import wm_eval as wm
from conflictbench_app.evaluation.prompts import load_prompt
from conflictbench_app.records import StepRecord
from conflictbench_app.scenarios.library import load_library
from conflictbench_app.store import Store

ROOT = Path(__file__).resolve().parents[1]


def full_marks(body: dict[str, Any]) -> str:
    system = body["messages"][0]["content"]
    dimension = next(d for d in wm.DIMENSIONS if load_prompt(d.prompt).text == system)
    return json.dumps({**dimension.subs, "rationale": "benchmark"})


def record_run(store: Store, episodes: int) -> str:
    library = load_library(ROOT / "scenarios")
    run = store.create_run("bench:agent")
    for scenario in library.select("all")[:episodes]:
        episode = store.new_episode(run.id, scenario.id, scenario.category.value, status="finished")
        for idx, action in enumerate(a.command for a in scenario.actions[:2]):
            store.add_step(
                StepRecord(
                    episode_id=episode.id,
                    idx=idx,
                    player="bench",
                    observation="",
                    action_raw=action,
                    action=action,
                    result=f"You {action}.",
                    accepted=True,
                    state=dict(scenario.initial_state),
                )
            )
    return run.id


def judge_once(
    work_dir: Path, cache: Path, episodes: int, concurrency: int, latency: float
) -> tuple[float, int]:
    """(wall seconds of the judging stage, judgments) on a fresh database over the shared clip cache."""
    with (
        Store(work_dir / f"c{concurrency}.db") as store,
        FakeLLMServer(full_marks, latency=latency) as server,
    ):
        run_id = record_run(store, episodes)
        work = wm.plan(store, [run_id], ["schematic"], load_library(ROOT / "scenarios").get, sample=episodes)
        models = {"schematic": wm.build_renderer("schematic", cache_dir=cache)}
        client = get_chat_client("compat:bench-vlm", base_url=server.base_url, timeout=30, max_retries=0)
        wm.run_wm_eval(store, work, models, client, "compat:bench-vlm", concurrency=1)  # warms the cache
        store.database.execute("DELETE FROM eval_wm_judgments")
        wm.clip_frame_urls.cache_clear()  # every timed run extracts its frames itself
        started = time.perf_counter()
        result = wm.run_wm_eval(store, work, models, client, "compat:bench-vlm", concurrency=concurrency)
        return time.perf_counter() - started, result.count("judged")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--episodes", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work_dir = Path(tmp)
        baseline = None
        for concurrency in args.concurrency:
            wall, judgments = judge_once(
                work_dir, work_dir / "clips", args.episodes, concurrency, args.latency
            )
            frames = judgments * wm.FRAMES_PER_CLIP
            baseline = baseline or wall
            ideal = judgments * args.latency / concurrency
            print(
                f"concurrency {concurrency:>2}: {wall:6.2f} s, {judgments} judgments, {frames / wall:6.1f} frames/s, "
                f"{judgments / wall:5.2f} judgments/s, speed-up x{baseline / wall:.2f} over concurrency "
                f"{args.concurrency[0]}, efficiency {ideal / wall:.0%} of the API-bound ideal"
            )


if __name__ == "__main__":
    main()
