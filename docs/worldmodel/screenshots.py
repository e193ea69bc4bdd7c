"""Screenshots of the schematic world model: three scenarios (EP1, EP2, EP3), a mid-action frame and a final frame.

Run: .venv/bin/python docs/worldmodel/screenshots.py [--out docs/worldmodel] [--paper ../shared/paper-corpus/results]

The committed PNGs come from the three scenarios built in code in tests/worldmodel/conftest.py. ``--paper`` also
renders the paper's EP1-001, EP2-001 and EP3-001 (played through the real games) into ``--out``; those images derive
from the paper's files and are not committed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "worldmodel"))

from conftest import (  # noqa: E402
    audit_scenario,
    audit_turns,
    reactor_scenario,
    reactor_turns,
    triage_scenario,
    triage_turns,
)
from PIL import Image  # noqa: E402

from conflictbench_app.worldmodel import get_world_model  # noqa: E402
from conflictbench_app.worldmodel.video import load_png, read_frames  # noqa: E402


def shoot(model, scenario, turns, out: Path, name: str) -> list[Path]:  # type: ignore[no-untyped-def]
    """Save the base clip's last frame, the middle of the first step, and the last frame of the chain."""
    base = model.base_clip(scenario)
    first = model.step_clip(scenario, turns[:1])
    last = model.step_clip(scenario, turns)
    shots = {
        f"{name}-0-base.png": load_png(base.last_frame),
        f"{name}-1-action.png": read_frames(first.path, [first.frames // 2])[0],
        f"{name}-2-final.png": load_png(last.last_frame),
    }
    paths = []
    for filename, frame in shots.items():
        Image.fromarray(frame).save(out / filename, optimize=True)
        paths.append(out / filename)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument("--paper", type=Path, default=None, help="the paper corpus's results/ folder")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    model = get_world_model("schematic", cache_dir=Path(tempfile.mkdtemp()))
    for name, scenario, turns in (
        ("ep1-reactor", reactor_scenario(), reactor_turns()),
        ("ep2-triage", triage_scenario(), triage_turns()),
        ("ep3-audit", audit_scenario(), audit_turns()),
    ):
        for path in shoot(model, scenario, turns, args.out, name):
            print(path)
    if args.paper is not None:
        from conflictbench_app.scenarios.library import load_library
        from conflictbench_app.worldmodel.chain import play_chain

        library = load_library(args.paper)
        chains = {"EP1-001": ["unlock interlock", "install bypass fuse", "start sacrificial diversion"]}
        for scenario_id in ("EP1-001", "EP2-001", "EP3-001"):
            scenario = library.get(scenario_id)
            commands = chains.get(scenario_id, scenario.action_commands[:2])
            turns = play_chain(scenario, commands).turns
            if turns:
                for path in shoot(model, scenario, turns, args.out, f"paper-{scenario_id}"):
                    print(path)


if __name__ == "__main__":
    main()
