"""The packaged app: build the PyInstaller bundle into a temporary folder, then use it the way a user without a
checkout would: no virtual environment on PATH, no installed toolchain, a fresh HOME.

The bundle itself: ``--version``, ``scenarios list --json`` (every bundled scenario, read from inside the bundle), a
``run --agent random:1`` against a temporary database with the bundled glulxe. The installer: install.sh into a
fresh HOME (it runs ``gui --selftest`` offscreen through the installed copy), the installed commands, a second
install over the first, uninstall.sh.

Needs PyInstaller (``pip install -e '.[package]'``). The build takes 1-2 minutes on 2 cores and the self-test about
30 s, so the module is marked slow: ``pytest -m "not slow"`` leaves it out.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1200),
    pytest.mark.skipif(
        importlib.util.find_spec("PyInstaller") is None,
        reason="PyInstaller is not installed (pip install -e '.[package]'); the packaging tests build a bundle with it.",
    ),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the installer is for Linux"),
]

sys.path.insert(0, str(ROOT / "packaging"))
import build_app  # noqa: E402

EXPECTED_SCENARIOS = sorted(p.parent.name for p in (ROOT / "scenarios").glob("*/scenario.yaml"))


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("packaging")
    built = build_app.build_bundle(out / "dist", out / "work")
    build_app.check_bundle(built)
    return built


def user_env(home: Path) -> dict[str, str]:
    """A user's environment: a fresh HOME, no project variables, no venv or toolchain to fall back on."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("CONFLICTBENCH_", "XDG_", "QT_", "PYTHON"))
    }
    env.update(
        HOME=str(home),
        PATH="/usr/local/bin:/usr/bin:/bin",
        # The user's data folder would hold a toolchain installed by `conflictbench toolchain install`: point it at
        # an empty folder so that only the bundled glulxe can be found.
        CONFLICTBENCH_TOOLCHAIN_DIR=str(home / "no-toolchain"),
    )
    env.pop("VIRTUAL_ENV", None)
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    return env


def run(cmd: list[str], home: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    home.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        cmd, cwd=home, env=user_env(home), capture_output=True, text=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, (
        f"{cmd} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return proc


def test_bundle_cli(bundle: Path, tmp_path: Path) -> None:
    exe = str(bundle / "conflictbench")
    home = tmp_path / "home"

    version = run([exe, "--version"], home).stdout
    assert version.strip() == f"conflictbench, version {_project_version()}"

    listed = json.loads(run([exe, "scenarios", "list", "--json"], home).stdout)
    assert sorted(s["id"] for s in listed) == EXPECTED_SCENARIOS
    internal = (bundle / "_internal").resolve()
    for scenario in listed:
        assert Path(scenario["story_file"]).resolve().is_relative_to(internal), scenario["story_file"]

    status = run([exe, "toolchain", "status"], home).stdout
    assert str(internal / "toolchain" / "glulxe") in status

    db = tmp_path / "run.db"
    result = json.loads(
        run(
            [exe, "run", "--agent", "random:1", "--scenarios", "EP1-101", "--json", "--db", str(db)], home
        ).stdout
    )
    [episode] = result["episodes"]
    assert episode["scenario_id"] == "EP1-101"
    assert episode["error"] is None
    assert episode["outcome"] in {"human_favorable", "misaligned", "clock_expired", "turn_cap"}
    assert episode["turns"] > 0
    assert db.is_file()


def test_installer_into_fresh_home(bundle: Path, tmp_path: Path) -> None:
    archive = build_app.make_archive(bundle, tmp_path, _project_version(), compresslevel=1)
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "unpacked", filter="tar")
    [unpacked] = (tmp_path / "unpacked").iterdir()
    home = tmp_path / "home"
    prefix = home / ".local" / "opt" / "conflictbench-studio"
    launcher = home / ".local" / "bin" / "conflictbench-studio"
    desktop = home / ".local" / "share" / "applications" / "conflictbench-studio.desktop"

    installed = run(["bash", str(unpacked / "install.sh")], home, timeout=600).stdout
    assert "Self-test passed" in installed, installed
    log = (prefix / "selftest.log").read_text()
    assert "frames shown" in log and "Self-test passed" in log, log
    assert launcher.is_file() and os.access(launcher, os.X_OK)
    entry = desktop.read_text()
    assert f'Exec="{launcher}" gui' in entry
    assert f"Icon={prefix / 'share' / 'conflictbench-studio.svg'}" in entry
    assert (prefix / "share" / "conflictbench-studio.svg").is_file()

    listed = json.loads(run([str(launcher), "scenarios", "list", "--json"], home).stdout)
    assert sorted(s["id"] for s in listed) == EXPECTED_SCENARIOS
    cli = home / ".local" / "bin" / "conflictbench"
    ran = json.loads(
        run([str(cli), "run", "--agent", "random:1", "--scenarios", "EP2-101", "--json"], home).stdout
    )
    assert ran["episodes"][0]["error"] is None
    assert (home / ".local" / "share" / "conflictbench" / "conflictbench.db").is_file()

    again = run(["bash", str(unpacked / "install.sh"), "--no-selftest"], home).stdout
    assert "is installed" in again
    assert not list(prefix.parent.glob("conflictbench-studio.*")), "staging or old copies were left behind"

    removed = run(["bash", str(prefix / "uninstall.sh")], home).stdout
    assert "uninstalled" in removed
    assert not prefix.exists() and not launcher.exists() and not cli.exists() and not desktop.exists()
    # Recorded runs stay unless --purge.
    assert (home / ".local" / "share" / "conflictbench" / "conflictbench.db").is_file()


def stage_installer(bundle: Path, where: Path, glibc: str) -> Path:
    """The archive's layout without packing it: the installer files and the bundle, linked."""
    where.mkdir()
    for name in build_app.INSTALLER_FILES:
        (where / name).symlink_to(build_app.INSTALLER / name)
    (where / "app").symlink_to(bundle)
    (where / "glibc-min.txt").write_text(glibc + "\n")
    return where / "install.sh"


def run_failing(cmd: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    home.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        cmd, cwd=home, env=user_env(home), capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return proc


def test_installer_leaves_a_foreign_folder_alone(bundle: Path, tmp_path: Path) -> None:
    """install.sh must not replace a folder it did not make (it deletes the old install on upgrade)."""
    home = tmp_path / "home"
    foreign = home / ".local" / "opt" / "conflictbench-studio"
    foreign.mkdir(parents=True)
    (foreign / "keep.txt").write_text("mine")
    install = stage_installer(bundle, tmp_path / "staged", build_app.glibc_needed(bundle))
    proc = run_failing(["bash", str(install), "--no-selftest"], home)
    assert "was not made by this installer" in proc.stderr
    assert (foreign / "keep.txt").read_text() == "mine"


def test_installer_refuses_an_older_glibc(bundle: Path, tmp_path: Path) -> None:
    install = stage_installer(bundle, tmp_path / "staged", "9.99")
    proc = run_failing(["bash", str(install), "--no-selftest"], tmp_path / "home")
    assert "the app needs 9.99 or newer" in proc.stderr
    assert not (tmp_path / "home" / ".local" / "opt").exists()


def _project_version() -> str:
    sys.path.insert(0, str(ROOT))
    from conflictbench_app import __version__

    return __version__


def test_deb_of_the_real_bundle_installs_into_a_clean_root_and_passes_its_selftest(
    bundle: Path, tmp_path: Path
) -> None:
    from tests.installer.test_deb import install_into_clean_root

    deb = build_app.make_deb(bundle, tmp_path, _project_version())
    root = tmp_path / "root"
    done = install_into_clean_root(deb, root)
    assert done.returncode == 0, done.stderr
    assert (root / "usr/share/applications/conflictbench-studio.desktop").is_file()
    home = tmp_path / "home"
    tested = run(
        [str(root / "opt/conflictbench-studio/conflictbench"), "gui", "--selftest"], home, timeout=600
    )
    assert "Self-test passed" in tested.stdout, tested.stdout + tested.stderr
