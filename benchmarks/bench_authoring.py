"""Compile time and exploration time per project scenario (prints figures; not a test).

Usage: .venv/bin/python benchmarks/bench_authoring.py [--root scenarios] [--compile-only|--explore-only]

Compiles each spec's generated source into a temporary file (the committed stories are not touched) and explores
each committed story through the real interpreter, reporting states, transitions and seconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conflictbench_app.authoring.codegen import generate_source  # noqa: E402
from conflictbench_app.authoring.explore import explore  # noqa: E402
from conflictbench_app.authoring.inform7 import compile_source  # noqa: E402
from conflictbench_app.authoring.project import load_project_scenario, spec_folders  # noqa: E402
from conflictbench_app.authoring.spec import SPEC_FILE, load_spec  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT / "scenarios")
    parser.add_argument("--compile-only", action="store_true")
    parser.add_argument("--explore-only", action="store_true")
    args = parser.parse_args()
    folders = spec_folders(args.root)
    compile_times: list[float] = []
    explore_times: list[float] = []
    print(
        f"{'scenario':10} {'ni s':>6} {'i6 s':>6} {'total s':>8} {'states':>7} {'moves':>6} {'explore s':>10}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for folder in folders:
            row = f"{folder.name:10}"
            if not args.explore_only:
                spec = load_spec(folder / SPEC_FILE)
                result = compile_source(generate_source(spec), Path(tmp) / f"{folder.name}.ulx")
                compile_times.append(result.seconds)
                row += f" {result.seconds_ni:6.2f} {result.seconds_inform6:6.2f} {result.seconds:8.2f}"
            else:
                row += f" {'':6} {'':6} {'':8}"
            if not args.compile_only:
                started = time.perf_counter()
                found = explore(load_project_scenario(folder))
                explore_times.append(time.perf_counter() - started)
                row += f" {found.states:7d} {found.transitions:6d} {explore_times[-1]:10.2f}"
            print(row, flush=True)
    for name, values in (("compile", compile_times), ("explore", explore_times)):
        if values:
            print(
                f"{name}: {len(values)} scenarios, total {sum(values):.2f} s, mean {statistics.mean(values):.2f} s, "
                f"max {max(values):.2f} s"
            )


if __name__ == "__main__":
    main()
