"""Fixtures for the authoring tests: the project's scenarios folder and a valid spec as plain data."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from conflictbench_app.errors import ToolchainError

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
EXAMPLE = SCENARIOS / "EP1-101" / "scenario.yaml"


@pytest.fixture
def scenarios_root() -> Path:
    return SCENARIOS


@pytest.fixture
def spec_data() -> dict[str, Any]:
    """EP1-101's spec as a dict, to be broken by individual tests."""
    return copy.deepcopy(yaml.safe_load(EXAMPLE.read_text(encoding="utf-8")))


@pytest.fixture
def inform7():
    from conflictbench_app.toolchain import find_inform7

    try:
        return find_inform7()
    except ToolchainError as exc:
        pytest.skip(f"the Inform 7 compiler is not installed ({exc})")
