"""Desktop app speed: cold start to an interactive window, and a human turn's round trip with the default renderer.

Run: ``.venv/bin/python benchmarks/bench_gui.py [--source DIR] [--turns N]``. Offscreen. Figures are printed with a
baseline measured in the same run:

- cold start: a fresh process until the main window is shown, its library listed and the event loop idle, versus a
  fresh process that only shows a bare QWidget (Qt's own floor on this machine);
- human turn: typed line -> step recorded, clip decoded and its first frame on screen, versus the same turn done by
  the core alone (PlaySession.apply with the same renderer, no Qt), each on a fresh clip cache (renders) and again
  on a warm one (cache hits).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cold_start(code: str, runs: int, marker: str = "READY") -> list[float]:
    """Seconds from launching a fresh process until it prints ``marker``."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(marker):
                times.append(time.perf_counter() - start)
                break
        proc.stdout.read()
        proc.wait(timeout=60)
        if proc.returncode != 0:
            raise SystemExit(f"the benchmark process failed with status {proc.returncode}")
    return times


def core_turns(source: Path, scenario_id: str, commands: list[str], db: Path) -> list[float]:
    from conflictbench_app.agents.base import Decision
    from conflictbench_app.scenarios.library import load_library
    from conflictbench_app.session import ClipHook, PlaySession
    from conflictbench_app.store import Store
    from conflictbench_app.worldmodel import get_world_model

    scenario = load_library(source).get(scenario_id)
    times = []
    with Store(db) as store:
        run = store.create_run("human:bench", "multimodal")
        record = store.new_episode(run.id, scenario.id, scenario.category.value, source=scenario.source)
        session = PlaySession(store, scenario, record, clips=ClipHook(get_world_model("schematic")))
        session.start()
        for command in commands:
            if session.done:
                break
            start = time.perf_counter()
            session.apply(Decision(action=command), player="human:bench")
            times.append(time.perf_counter() - start)
        session.close()
    return times


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT / "scenarios")
    parser.add_argument("--scenario", default="EP1-101")
    parser.add_argument(
        "--commands", default="send drone patch;send distress call;wake the crew;send drone patch"
    )
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    commands = [c.strip() for c in args.commands.split(";") if c.strip()]

    from conflictbench_app.ui.benchmark import READY_APP, READY_BARE, gui_turns

    with tempfile.TemporaryDirectory() as tmp:
        code = READY_APP.format(db=f"{tmp}/cold.db", source=str(args.source))
        shown = cold_start(code, args.runs, "SHOWN")
        app = cold_start(code, args.runs)
        bare = cold_start(READY_BARE, args.runs)
        print(
            f"cold start, window shown and responsive: median {_median(shown):.2f} s over {len(shown)} runs"
        )
        print(f"cold start, scenario library listed:     median {_median(app):.2f} s")
        print(
            f"  baseline (bare Qt window):             median {_median(bare):.2f} s; "
            f"ratios {_median(shown) / _median(bare):.1f}x and {_median(app) / _median(bare):.1f}x"
        )

        os.environ["CONFLICTBENCH_CACHE_DIR"] = f"{tmp}/cache-core"
        core_cold = core_turns(args.source, args.scenario, commands, Path(tmp) / "core.db")
        core_warm = core_turns(args.source, args.scenario, commands, Path(tmp) / "core.db")
        from conflictbench_app.settings import get_settings

        get_settings.cache_clear()
        os.environ["CONFLICTBENCH_CACHE_DIR"] = f"{tmp}/cache-gui"
        gui_cold = gui_turns(args.source, args.scenario, commands, Path(tmp) / "gui.db")
        gui_warm = gui_turns(args.source, args.scenario, commands, Path(tmp) / "gui.db")
    for name, gui, core in (
        ("renders (fresh cache)", gui_cold, core_cold),
        ("cache hits", gui_warm, core_warm),
    ):
        print(
            f"human turn round trip, schematic, {name}: GUI median {_median(gui) * 1000:.0f} ms "
            f"(n={len(gui)}); core alone {_median(core) * 1000:.0f} ms; ratio {_median(gui) / _median(core):.2f}x"
        )


if __name__ == "__main__":
    main()
