"""Locate and install the external programs: RemGlk glulxe (from the mcp-server-if wheel) and the Inform 7 6M62
compiler (from the textworld 1.7.0 wheel). Only the wheels' files are used, never their dependency trees."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from conflictbench_app.errors import ToolchainError
from conflictbench_app.settings import get_settings

GLULXE_WHEEL = "mcp-server-if==0.2.0"
INFORM7_WHEEL = "textworld==1.7.0"
_I7_PREFIX = "textworld/thirdparty/inform7-6M62/"
INSTALL_HINT = "Run `conflictbench toolchain install` (it downloads the two wheels with pip)."


@dataclass(frozen=True)
class Inform7:
    ni: Path
    inform6: Path
    internal: Path


def toolchain_dir() -> Path:
    return Path(os.environ.get("CONFLICTBENCH_TOOLCHAIN_DIR") or get_settings().toolchain_dir)


def find_glulxe() -> Path:
    """The RemGlk glulxe binary: $CONFLICTBENCH_GLULXE, the settings, an installed mcp_server_if, the toolchain dir."""
    candidates: list[Path] = []
    if env := os.environ.get("CONFLICTBENCH_GLULXE"):
        candidates.append(Path(env))
    if configured := get_settings().glulxe:
        candidates.append(configured)
    candidates.append(toolchain_dir() / "glulxe" / "glulxe")
    if bundled := _bundled("glulxe"):
        candidates.append(bundled)
    candidates.extend(_mcp_server_if_binary())
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise ToolchainError(f"The RemGlk glulxe interpreter was not found. {INSTALL_HINT}")


def find_inform7() -> Inform7:
    """The Inform 7 compiler files: $CONFLICTBENCH_INFORM7_DIR, the settings, or the toolchain dir."""
    roots = []
    if env := os.environ.get("CONFLICTBENCH_INFORM7_DIR"):
        roots.append(Path(env))
    if configured := get_settings().inform7_dir:
        roots.append(configured)
    roots.append(toolchain_dir() / "inform7")
    for root in roots:
        tools = Inform7(
            ni=root / "share/inform7/Compilers/ni",
            inform6=root / "share/inform7/Compilers/inform6",
            internal=root / "share/inform7/Internal",
        )
        if tools.ni.is_file() and tools.inform6.is_file() and tools.internal.is_dir():
            return tools
    raise ToolchainError(f"The Inform 7 compiler (ni) was not found. {INSTALL_HINT}")


def _bundled(name: str) -> Path | None:
    """A binary shipped inside a packaged (PyInstaller) app."""
    base = getattr(sys, "_MEIPASS", None)
    return Path(base) / "toolchain" / name if base else None


def _mcp_server_if_binary() -> list[Path]:
    try:
        import mcp_server_if
    except ImportError:
        return []
    return [Path(mcp_server_if.__file__).parent / "bin" / "glulxe"]


def install(target: Path | None = None, *, force: bool = False, log=print) -> Path:
    """Download the two wheels (no dependencies) and unpack only glulxe and the Inform 7 files."""
    if getattr(sys, "frozen", False):
        raise ToolchainError(
            "The packaged app carries its own interpreter and cannot download the toolchain. To build scenarios "
            "(Inform 7), install ConflictBench Studio from a checkout: `bash packaging/bootstrap.sh app`."
        )
    target = target or toolchain_dir()
    target.mkdir(parents=True, exist_ok=True)
    glulxe_dir, i7_dir = target / "glulxe", target / "inform7"
    with tempfile.TemporaryDirectory() as tmp:
        if force or not (glulxe_dir / "glulxe").is_file():
            wheel = _download(GLULXE_WHEEL, Path(tmp), log)
            _extract(wheel, "mcp_server_if/bin/glulxe", glulxe_dir, strip="mcp_server_if/bin/")
        if force or not (i7_dir / "share/inform7/Compilers/ni").is_file():
            wheel = _download(INFORM7_WHEEL, Path(tmp), log)
            _extract(wheel, _I7_PREFIX, i7_dir, strip=_I7_PREFIX)
    log(f"Toolchain ready in {target}")
    return target


def _download(requirement: str, dest: Path, log) -> Path:
    log(f"Downloading {requirement} (wheel only, no dependencies)...")
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "-q",
        "-d",
        str(dest),
        requirement,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ToolchainError(f"pip could not download {requirement}: {proc.stderr.strip()[-500:]}")
    name = requirement.split("==")[0].replace("-", "_")
    wheels = sorted(dest.glob(f"{name}-*.whl"))
    if not wheels:
        raise ToolchainError(f"pip reported success but no wheel for {requirement} is in {dest}.")
    return wheels[0]


def _extract(wheel: Path, prefix: str, dest: Path, *, strip: str) -> None:
    """Unpack the members under ``prefix`` into ``dest`` atomically, restoring exec bits zip extraction drops."""
    staging = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}-"))
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if not info.filename.startswith(prefix) or info.is_dir():
                continue
            out = staging / info.filename[len(strip) :]
            out.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst)
            mode = (info.external_attr >> 16) & 0o777
            if mode & 0o111 or _looks_executable(out):
                out.chmod(out.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    if dest.exists():
        shutil.rmtree(dest)
    staging.rename(dest)


def _looks_executable(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(4) == b"\x7fELF"
