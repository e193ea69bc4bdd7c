"""Shared fixtures: isolated settings, the project's test story, the paper corpus from ../shared when present."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DATA = Path(__file__).resolve().parent / "data"


def _real_toolchain_dir() -> str:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return os.environ.get("CONFLICTBENCH_TOOLCHAIN_DIR") or str(Path(base) / "conflictbench" / "toolchain")


_TOOLCHAIN = _real_toolchain_dir()


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Keep every test away from the user's settings, database and cache (the toolchain stays shared)."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("CONFLICTBENCH_TOOLCHAIN_DIR", _TOOLCHAIN)
    monkeypatch.setenv("CONFLICTBENCH_CACHE_DIR", str(home / "cache"))
    share_local_models(tmp_path_factory, home / "cache")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for key in list(os.environ):
        if key.startswith("CONFLICTBENCH_") and key not in (
            "CONFLICTBENCH_TOOLCHAIN_DIR",
            "CONFLICTBENCH_CACHE_DIR",
            "CONFLICTBENCH_GLULXE",
            "CONFLICTBENCH_INFORM7_DIR",
        ):
            monkeypatch.delenv(key)
    from conflictbench_app.settings import get_settings

    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def share_local_models(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> None:
    """The embedded model's converted copy and ONNX graph (1 GB, about 30 s to make) are made once per test session,
    shared by every test and xdist worker, instead of once in each test's own cache (the rest of it stays apart)."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "local-models"
    shared.mkdir(exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    if not (cache / "local-models").exists():
        (cache / "local-models").symlink_to(shared, target_is_directory=True)


@pytest.fixture
def shared_dir() -> Path:
    if not (SHARED / "paper-corpus").is_dir():
        pytest.skip(f"../shared/paper-corpus is absent ({SHARED}); the paper compatibility tests need it.")
    return SHARED


@pytest.fixture
def paper_root(shared_dir: Path) -> Path:
    return shared_dir / "paper-corpus" / "results"


@pytest.fixture
def tiny_story() -> Path:
    return DATA / "tiny" / "tiny.ulx"


@pytest.fixture
def paperlike_root(tmp_path: Path) -> Path:
    """The project's tiny story laid out in the paper's format (ulxEnv/EP1-900/env.json + a .ulx)."""
    folder = tmp_path / "results" / "ulxEnv" / "EP1-900"
    folder.mkdir(parents=True)
    shutil.copy(DATA / "tiny" / "env.json", folder / "env.json")
    shutil.copy(DATA / "tiny" / "tiny.ulx", folder / "tiny-test_11-13_1308_attempt1.ulx")
    return tmp_path / "results"


# Fixtures that read ../shared/paper-corpus (directly or through another fixture): a test that uses any of them
# carries the `paper` marker, so `-m "not paper"` runs exactly what works without shared/.
PAPER_FIXTURES = frozenset(
    {"shared_dir", "paper_root", "paper_source", "paper_library", "paper_ep1", "paper_run", "paper_scenarios"}
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if PAPER_FIXTURES & set(getattr(item, "fixturenames", ())) and not item.get_closest_marker("paper"):
            item.add_marker(pytest.mark.paper)
