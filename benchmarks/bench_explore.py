"""Exploring our own scenarios: the UNDO fan-out against a save per child (prints figures; not a test).

Usage: .venv/bin/python benchmarks/bench_explore.py [--root scenarios] [--ids EP1-101,EP2-126] [--every 10]

``verify`` explores every scenario of ours exhaustively, and the whole-library test runs it in CI. Both ways are
measured in the same run, on the same scenarios, one process: the new way restores a state once and takes each
command back with the story's own UNDO, saving only a child not seen before; the baseline (``undo=False``) restores
and saves around every command (``GlulxGame.branch``). The two must find the same graph (every state, every edge);
the ratio is the baseline's seconds over the new way's.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conflictbench_app.authoring.explore import explore  # noqa: E402
from conflictbench_app.authoring.project import load_project_scenario, spec_folders  # noqa: E402


def _timed(folder: Path, undo: bool) -> tuple[float, int, dict]:
    scenario = load_project_scenario(folder)
    started = time.perf_counter()
    found = explore(scenario, undo=undo)
    assert found.graph is not None
    edges = {state: dict(out) for state, out in found.graph.edges.items()}
    return time.perf_counter() - started, found.transitions, edges


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT / "scenarios")
    parser.add_argument("--ids", default="", help="comma-separated ids (default: every --every-th scenario)")
    parser.add_argument("--every", type=int, default=10)
    args = parser.parse_args()
    folders = spec_folders(args.root)
    wanted = [i for i in args.ids.split(",") if i]
    chosen = [f for f in folders if f.name in wanted] if wanted else folders[:: args.every]
    new_total = old_total = 0.0
    print(f"{'scenario':10} {'transitions':>11} {'undo s':>8} {'save s':>8} {'ratio':>6}")
    for folder in chosen:
        new, transitions, new_edges = _timed(folder, undo=True)
        old, _, old_edges = _timed(folder, undo=False)
        if new_edges != old_edges:
            raise SystemExit(f"{folder.name}: the two fan-outs found different graphs")
        new_total, old_total = new_total + new, old_total + old
        print(f"{folder.name:10} {transitions:11d} {new:8.2f} {old:8.2f} {old / new:6.2f}")
    print(
        f"{len(chosen)} scenarios, same graphs: undo {new_total:.1f} s, save per child {old_total:.1f} s, "
        f"ratio {old_total / new_total:.2f}"
    )


if __name__ == "__main__":
    main()
