"""The world model's public contract: import-light, and the names the episode runner and the app call."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.worldmodel import TurnVisual, clip_bytes, frame_data_urls, get_world_model


def test_import_and_schematic_lookup_load_no_heavy_modules() -> None:
    code = (
        "import sys, conflictbench_app.worldmodel as wm; wm.get_world_model('schematic');"
        "print(sorted(m for m in ('cv2', 'torch', 'diffusers', 'PySide6', 'openai') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_agent_inputs(tmp_path: Path, reactor: Scenario, turns: list[TurnVisual]) -> None:
    clip = get_world_model("schematic", cache_dir=tmp_path).step_clip(reactor, turns[:1])
    urls = frame_data_urls(clip, 1.0, max_side=416)
    assert len(urls) == 4 and urls[0].startswith("data:image/jpeg;base64,")
    assert base64.b64decode(urls[0].split(",", 1)[1])[:2] == b"\xff\xd8"
    video = clip_bytes(clip)
    assert video[4:8] == b"ftyp"  # an MP4 container
