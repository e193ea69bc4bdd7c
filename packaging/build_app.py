"""Build the packaged app for non-programmers: a PyInstaller onedir bundle of ``conflictbench`` (GUI and CLI in one
binary) and a tar.gz around it with install.sh / uninstall.sh.

    .venv/bin/pip install -e '.[package]'
    .venv/bin/python packaging/build_app.py                # -> dist/conflictbench-studio-<version>-linux-x86_64.tar.gz
    .venv/bin/python packaging/build_app.py --no-archive   # the bundle only: dist/conflictbench-studio/

The bundle is checked after the build (glulxe, every scenario, Qt platform plugins, nothing from the Wan extra,
``--version`` runs); a failed check stops the build with one sentence saying what is wrong. See packaging/README.md.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SPEC = HERE / "pyinstaller" / "conflictbench.spec"
INSTALLER = HERE / "installer"
INSTALLER_FILES = (
    "install.sh",
    "uninstall.sh",
    "conflictbench-studio.desktop.in",
    "conflictbench-studio.svg",
    "README.txt",
)
# What the .deb asks the package manager for: the system libraries Qt's X11 plugin loads (cli.gui_cmd checks the
# same list at start), and fontconfig/EGL that even offscreen Qt needs.
DEB_DEPENDS = (
    "libc6 (>= {glibc})",
    "libxcb-icccm4",
    "libxcb-keysyms1",
    "libxcb-cursor0",
    "libxcb-image0",
    "libxcb-render-util0",
    "libxcb-randr0",
    "libxcb-shape0",
    "libxcb-xfixes0",
    "libxcb-xkb1",
    "libxkbcommon-x11-0",
    "libegl1",
    "libfontconfig1",
)
BUNDLE_NAME = "conflictbench-studio"
# Top-level folders of _internal that must never be in the bundle: the Wan extra and test tools.
FORBIDDEN = (
    "torch",
    "diffusers",
    "transformers",
    "accelerate",
    "onnxruntime",
    "pytest",
    "_pytest",
    "pytestqt",
    "mypy",
)
PLATFORM_PLUGINS = ("libqoffscreen.so", "libqxcb.so")


class BuildError(RuntimeError):
    """The build or a check of its result failed."""


def build_bundle(out: Path, work: Path) -> Path:
    """Run PyInstaller on the spec; return the onedir bundle folder (``out/conflictbench-studio``)."""
    cmd = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN"]
    cmd += ["--distpath", str(out), "--workpath", str(work), str(SPEC)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BuildError(
            f"PyInstaller failed (exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-4000:]}"
        )
    bundle = out / BUNDLE_NAME
    if not (bundle / "conflictbench").is_file():
        raise BuildError(f"PyInstaller reported success but {bundle / 'conflictbench'} is missing.")
    return bundle


def check_bundle(bundle: Path) -> list[str]:
    """Static checks of a built bundle, plus ``--version``. Returns what was checked; raises BuildError."""
    internal = bundle / "_internal"
    checks: list[str] = []
    glulxe = internal / "toolchain" / "glulxe"
    if not (glulxe.is_file() and os.access(glulxe, os.X_OK)):
        raise BuildError(f"The bundle has no executable glulxe at {glulxe}.")
    checks.append("glulxe at _internal/toolchain/glulxe")
    expected = sorted(p.parent.name for p in (ROOT / "scenarios").glob("*/scenario.yaml"))
    bundled_root = internal / "conflictbench_app" / "resources" / "scenarios"
    missing = [s for s in expected if not (bundled_root / s / "story.ulx").is_file()]
    if missing or not expected:
        raise BuildError(
            f"Scenarios missing from {bundled_root}: {missing or 'no scenarios in the checkout'}."
        )
    checks.append(f"{len(expected)} scenarios under conflictbench_app/resources/scenarios")
    plugins = internal / "PySide6" / "Qt" / "plugins" / "platforms"
    absent = [name for name in PLATFORM_PLUGINS if not (plugins / name).is_file()]
    if absent:
        raise BuildError(f"Qt platform plugins missing from {plugins}: {', '.join(absent)}.")
    checks.append("Qt platform plugins: " + ", ".join(sorted(p.name for p in plugins.iterdir())))
    present = [name for name in FORBIDDEN if (internal / name).exists()]
    if present:
        raise BuildError(
            f"The bundle carries excluded packages: {', '.join(present)}; add them to the spec's EXCLUDES."
        )
    checks.append("no " + ", ".join(FORBIDDEN))
    version = run_bundle(bundle, "--version").strip()
    checks.append(f"`conflictbench --version`: {version}")
    return checks


def run_bundle(bundle: Path, *args: str, timeout: float = 120) -> str:
    proc = subprocess.run(
        [str(bundle / "conflictbench"), *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if proc.returncode != 0:
        raise BuildError(
            f"`conflictbench {' '.join(args)}` failed in the bundle: {(proc.stdout + proc.stderr)[-2000:]}"
        )
    return proc.stdout


def glibc_needed(bundle: Path) -> str:
    """The newest glibc symbol version any ELF file of the bundle asks for: the oldest C library it can run on.

    The bundle carries its libraries but not glibc; its floor is the build machine's. Version-need names sit in
    each file's dynamic string table as ``GLIBC_2.NN``, so a byte scan finds them without binutils.
    """
    pattern = re.compile(rb"GLIBC_(2\.\d+(?:\.\d+)?)\x00")
    newest = (2, 0)
    for path in bundle.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        with open(path, "rb") as fh:
            if fh.read(4) != b"\x7fELF":
                continue
            fh.seek(0)
            data = fh.read()
        for match in pattern.finditer(data):
            newest = max(newest, tuple(int(part) for part in match.group(1).split(b".")))
    return ".".join(str(part) for part in newest)


def make_archive(bundle: Path, out: Path, version: str, *, compresslevel: int = 6) -> Path:
    """``conflictbench-studio-<version>-linux-<arch>.tar.gz``: install.sh, uninstall.sh, the menu entry, the icon,
    glibc-min.txt (read by install.sh) and the bundle as ``app/``, all under one top folder."""
    top = f"{BUNDLE_NAME}-{version}-linux-{platform.machine()}"
    archive = out / f"{top}.tar.gz"
    partial = archive.with_name(archive.name + ".partial")

    def normalize(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(partial, "w:gz", compresslevel=compresslevel) as tar:
        for name in INSTALLER_FILES:
            tar.add(INSTALLER / name, arcname=f"{top}/{name}", filter=normalize)
        glibc = (glibc_needed(bundle) + "\n").encode()
        info = normalize(tarfile.TarInfo(f"{top}/glibc-min.txt"))
        info.size, info.mode, info.mtime = len(glibc), 0o644, int(time.time())
        tar.addfile(info, io.BytesIO(glibc))
        tar.add(bundle, arcname=f"{top}/app", filter=normalize)
    partial.replace(archive)
    return archive


def deb_architecture() -> str:
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())


def make_deb(bundle: Path, out: Path, version: str, *, glibc: str | None = None) -> Path:
    """``conflictbench-studio_<version>_<arch>.deb``, built with Debian's own ``dpkg-deb``: the bundle under
    /opt/conflictbench-studio, ``conflictbench`` in /usr/bin, the menu entry and the icon where desktops look for
    them, and the system libraries the window needs as dependencies (so a software centre installs them too)."""
    if shutil.which("dpkg-deb") is None:
        raise BuildError("dpkg-deb is not installed (apt-get install dpkg); it builds the .deb package.")
    arch = deb_architecture()
    root = out / f"deb-root-{arch}"
    shutil.rmtree(root, ignore_errors=True)
    opt = root / "opt" / BUNDLE_NAME
    shutil.copytree(bundle, opt, symlinks=True)
    launcher = root / "usr" / "bin" / "conflictbench"
    launcher.parent.mkdir(parents=True)
    launcher.write_text(f'#!/bin/sh\nexec /opt/{BUNDLE_NAME}/conflictbench "$@"\n', encoding="utf-8")
    launcher.chmod(0o755)
    entry = (INSTALLER / "conflictbench-studio.desktop.in").read_text(encoding="utf-8")
    entry = entry.replace("@LAUNCHER@", "/usr/bin/conflictbench").replace("@ICON@", BUNDLE_NAME)
    _write(root / "usr/share/applications/conflictbench-studio.desktop", entry)
    icon = root / "usr/share/icons/hicolor/scalable/apps/conflictbench-studio.svg"
    icon.parent.mkdir(parents=True)
    shutil.copy2(INSTALLER / "conflictbench-studio.svg", icon)
    _write(root / f"usr/share/doc/{BUNDLE_NAME}/README.txt", (INSTALLER / "README.txt").read_text("utf-8"))
    size_kb = folder_size(root) // 1024
    depends = ", ".join(DEB_DEPENDS).format(glibc=glibc or glibc_needed(bundle))
    control = (
        f"Package: {BUNDLE_NAME}\nVersion: {version}\nArchitecture: {arch}\nSection: science\nPriority: optional\n"
        f"Maintainer: ConflictBench <conflictbench@localhost>\nInstalled-Size: {size_kb}\nDepends: {depends}\n"
        "Description: desktop app for the ConflictBench AI-safety benchmark\n"
        " Play, run and review the ConflictBench human-safety benchmark for AI agents: interactive-fiction\n"
        " scenarios played by models or people, recorded to a local database, judged and reported.\n"
    )
    _write(root / "DEBIAN" / "control", control)
    deb = out / f"{BUNDLE_NAME}_{version}_{arch}.deb"
    done = subprocess.run(
        ["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(root), str(deb)],
        capture_output=True,
        text=True,
        check=False,
    )
    shutil.rmtree(root, ignore_errors=True)
    if done.returncode != 0:
        raise BuildError(
            f"dpkg-deb could not build the package: {done.stderr.strip() or done.stdout.strip()}"
        )
    return deb


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def folder_size(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="output folder (default: dist/)")
    parser.add_argument(
        "--work", type=Path, default=None, help="PyInstaller work folder (default: build/pyinstaller)"
    )
    parser.add_argument("--no-archive", action="store_true", help="build and check the bundle only")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    work = (args.work or ROOT / "build" / "pyinstaller").resolve()
    sys.path.insert(0, str(ROOT))
    from conflictbench_app import __version__

    try:
        started = time.perf_counter()
        bundle = build_bundle(out, work)
        built = time.perf_counter() - started
        print(f"Bundle built in {built:.0f} s: {bundle} ({folder_size(bundle) / 1e6:.0f} MB)")
        for check in check_bundle(bundle):
            print(f"ok  {check}")
        print(f"Runs on Linux with glibc {glibc_needed(bundle)} or newer (the build machine's floor).")
        if not args.no_archive:
            started = time.perf_counter()
            archive = make_archive(bundle, out, __version__)
            print(
                f"Installer archive in {time.perf_counter() - started:.0f} s: {archive} "
                f"({archive.stat().st_size / 1e6:.0f} MB)"
            )
            print(f"Install: tar xzf {archive.name} && ./{archive.name.removesuffix('.tar.gz')}/install.sh")
            deb = make_deb(bundle, out, __version__)
            print(
                f"Debian package: {deb} ({deb.stat().st_size / 1e6:.0f} MB); install: sudo apt install ./{deb.name}"
            )
    except BuildError as exc:
        print(f"build_app: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
