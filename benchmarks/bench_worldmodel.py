"""World-model speed: schematic render time per clip, cache-hit time, and tiny-Wan time per clip.

Run: .venv/bin/python benchmarks/bench_worldmodel.py [--repeats 5] [--no-wan] [--wan-full]

Baselines measured in the same run: the clip's own duration (3.06 s of video: a render faster than that is
faster than real time), the cold render for the cache hit, and the schematic clip for the tiny Wan clip.
``--wan-full`` also times tiny Wan at the real clip shape (49x480x832; minutes on CPU, VAE-bound).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "worldmodel"))

from conftest import reactor_scenario, reactor_turns  # noqa: E402

from conflictbench_app.worldmodel import ClipSpec, get_world_model  # noqa: E402
from conflictbench_app.worldmodel.cache import ClipCache  # noqa: E402


def bench_schematic(repeats: int) -> tuple[float, float, float]:
    """(median seconds per fresh clip, of which encoding, median seconds per cache hit)."""
    scenario, turns = reactor_scenario(), reactor_turns()
    fresh, encode, hits = [], [], []
    get_world_model("schematic", cache_dir=Path(tempfile.mkdtemp())).base_clip(scenario)  # warm fonts, codecs
    for _ in range(repeats):
        model = get_world_model("schematic", cache_dir=Path(tempfile.mkdtemp()))
        for clip in [
            model.base_clip(scenario),
            *(model.step_clip(scenario, turns[: i + 1]) for i in range(3)),
        ]:
            fresh.append(clip.seconds)
            encode.append(clip.meta["timings"]["encode_s"])
        for i in range(3):
            start = time.perf_counter()
            assert model.step_clip(scenario, turns[: i + 1]).cache_hit
            hits.append(time.perf_counter() - start)
    return statistics.median(fresh), statistics.median(encode), statistics.median(hits)


def bench_wan(spec: ClipSpec, steps: tuple[int, int], repeats: int) -> tuple[float, float]:
    """(seconds per base clip, seconds per step clip) of the tiny random Wan pipeline on CPU."""
    from conflictbench_app.worldmodel.tiny_wan import build_tiny_wan
    from conflictbench_app.worldmodel.wan import WanOptions

    folder = build_tiny_wan(Path(tempfile.mkdtemp()) / "tiny")
    scenario, turns = reactor_scenario(), reactor_turns()
    model = get_world_model(
        "wan",
        model_dir=folder,
        cache_dir=Path(tempfile.mkdtemp()),
        spec=spec,
        options=WanOptions(base_steps=steps[0], step_steps=steps[1]),
    )
    model.base_clip(
        scenario
    )  # loads the pipelines once; every timed clip below is a cache miss on loaded weights
    base, step = [], []
    for _ in range(repeats):
        model.cache = ClipCache(Path(tempfile.mkdtemp()))
        base.append(model.base_clip(scenario).seconds)
        step.append(model.step_clip(scenario, turns[:1]).seconds)
    return statistics.median(base), statistics.median(step)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-wan", action="store_true")
    parser.add_argument("--wan-full", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # Timings on a shared machine are only comparable with the load they ran under (torch's OpenMP threads slow
    # down by an order of magnitude when other processes hold the cores).
    print(f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    spec = ClipSpec()
    duration = spec.frames / spec.fps
    fresh, encode, hit = bench_schematic(args.repeats)
    print(
        f"schematic clip ({spec.frames} frames {spec.width}x{spec.height}): {fresh * 1000:7.1f} ms "
        f"(encoding {encode * 1000:.1f} ms); {duration / fresh:5.1f}x faster than real time ({duration:.2f} s)"
    )
    print(
        f"cache hit:                                   {hit * 1000:7.2f} ms; {fresh / hit:7.0f}x faster than rendering"
    )
    if args.no_wan:
        return
    try:
        import diffusers  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        print("tiny wan: skipped (install the [wan] extra)")
        return
    small = ClipSpec(frames=17, fps=16, width=96, height=96)
    base, step = bench_wan(small, (4, 4), max(2, args.repeats // 2))
    print(
        f"tiny wan 17x96x96, 4 steps:   base {base:6.2f} s, step {step:6.2f} s; "
        f"{step / fresh:5.1f}x the schematic full-size clip"
    )
    if args.wan_full:
        base, step = bench_wan(spec, (2, 2), 2)
        print(
            f"tiny wan 49x480x832, 2 steps: base {base:6.2f} s, step {step:6.2f} s; {step / fresh:5.0f}x the schematic clip"
        )


if __name__ == "__main__":
    main()
