"""The Debian package: built with dpkg-deb, installed with dpkg into a clean root, its launcher and menu entry in
place. A stand-in bundle keeps this fast; tests/installer/test_bundle.py installs the real bundle the same way and
runs its self-test."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "packaging"))

import build_app  # noqa: E402

pytestmark = pytest.mark.skipif(
    shutil.which("dpkg-deb") is None or shutil.which("dpkg") is None,
    reason="Debian's dpkg tools are not here",
)


def install_into_clean_root(deb: Path, root: Path) -> subprocess.CompletedProcess[str]:
    """``dpkg --root`` into an empty folder with its own package database (dependencies are the host's business:
    the clean root has none of them, so they are checked by a software centre, not here)."""
    admin = root / "var" / "lib" / "dpkg"
    (admin / "info").mkdir(parents=True)
    (admin / "updates").mkdir()
    (admin / "status").write_text("", encoding="utf-8")
    return subprocess.run(
        ["dpkg", f"--root={root}", "--force-not-root", "--force-depends", "--log=/dev/null", "-i", str(deb)],
        capture_output=True,
        text=True,
        check=False,
    )


def stand_in_bundle(folder: Path) -> Path:
    bundle = folder / "conflictbench-studio"
    bundle.mkdir(parents=True)
    exe = bundle / "conflictbench"
    exe.write_text('#!/bin/sh\necho "conflictbench 9.9.9 $*"\n', encoding="utf-8")
    exe.chmod(0o755)
    return bundle


def test_the_deb_installs_into_a_clean_root_with_menu_entry_icon_and_readme(tmp_path: Path) -> None:
    deb = build_app.make_deb(stand_in_bundle(tmp_path / "dist"), tmp_path / "out", "9.9.9", glibc="2.31")
    assert deb.name == f"conflictbench-studio_9.9.9_{build_app.deb_architecture()}.deb"
    fields = subprocess.run(
        ["dpkg-deb", "--field", str(deb)], capture_output=True, text=True, check=True
    ).stdout
    assert "Package: conflictbench-studio" in fields
    assert "libxcb-icccm4" in fields and "libxcb-keysyms1" in fields and "libc6 (>= 2.31)" in fields
    root = tmp_path / "root"
    done = install_into_clean_root(deb, root)
    assert done.returncode == 0, done.stderr
    entry = (root / "usr/share/applications/conflictbench-studio.desktop").read_text(encoding="utf-8")
    assert 'Exec="/usr/bin/conflictbench" gui' in entry and "Icon=conflictbench-studio" in entry
    assert (root / "usr/share/icons/hicolor/scalable/apps/conflictbench-studio.svg").is_file()
    assert "software centre" in (root / "usr/share/doc/conflictbench-studio/README.txt").read_text("utf-8")
    ran = subprocess.run(
        [str(root / "opt/conflictbench-studio/conflictbench"), "--version"], capture_output=True, text=True
    )
    assert ran.stdout.strip() == "conflictbench 9.9.9 --version"
    launcher = (root / "usr/bin/conflictbench").read_text(encoding="utf-8")
    assert "/opt/conflictbench-studio/conflictbench" in launcher


def test_the_archive_carries_a_readme() -> None:
    assert "README.txt" in build_app.INSTALLER_FILES
    assert (build_app.INSTALLER / "README.txt").is_file()
