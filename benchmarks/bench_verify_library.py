"""``scenarios verify`` over the whole library: wall time on one and on N processes (prints figures; not a test).

Usage: .venv/bin/python benchmarks/bench_verify_library.py [--root scenarios] [--jobs 2]

The target (issues #13-#15) is the whole library in under 2 minutes on 2 cores. The baseline is the same
verification on one process, measured in the same run; the ratio is baseline / parallel wall time.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conflictbench_app.authoring.verify import verify_project  # noqa: E402

TARGET_SECONDS = 120.0


def _timed(root: Path, jobs: int) -> tuple[float, list]:
    started = time.perf_counter()
    reports = verify_project(root, jobs=jobs)
    return time.perf_counter() - started, reports


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT / "scenarios")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args()
    one, reports = _timed(args.root, 1)
    many, _ = _timed(args.root, args.jobs)
    by_category: dict[str, list[float]] = {}
    for report in reports:
        by_category.setdefault(report.id[:3], []).append(report.seconds)
    print(f"{len(reports)} scenarios under {args.root}; {sum(r.ok for r in reports)} pass verify")
    for category, seconds in sorted(by_category.items()):
        print(
            f"  {category}: {len(seconds)} scenarios, {sum(seconds):.1f} s exploring, max {max(seconds):.1f} s"
        )
    print(f"baseline, 1 process: {one:.1f} s")
    print(
        f"{args.jobs} processes: {many:.1f} s (ratio {one / many:.2f}x; target under {TARGET_SECONDS:.0f} s)"
    )
    per = many / max(len(reports), 1)
    print(f"at this rate 150 scenarios would take about {per * 150:.0f} s on {args.jobs} processes")


if __name__ == "__main__":
    main()
