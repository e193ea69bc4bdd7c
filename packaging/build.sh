#!/usr/bin/env bash
# Build the desktop app as a PyInstaller onedir bundle in dist/ConflictBench, then run the bundle's own self-test.
#   bash packaging/build.sh            # needs the project's .venv (packaging/bootstrap.sh app)
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv/bin/python
[ -x "$py" ] || { echo "build: run 'bash packaging/bootstrap.sh app' first." >&2; exit 1; }
"$py" -m pip --disable-pip-version-check -q install "pyinstaller>=6.10"
CONFLICTBENCH_GLULXE="$("$py" -c 'from conflictbench_app.toolchain import find_glulxe; print(find_glulxe())')"
export CONFLICTBENCH_GLULXE
"$py" -m PyInstaller --noconfirm --clean --distpath dist --workpath build/pyinstaller packaging/conflictbench.spec
# Without a display the bundle must still start (TOOLCHAIN §3): the self-test runs offscreen, plays a scripted
# episode with clips and fails unless frames really reach the video pane.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
QT_QPA_PLATFORM=offscreen XDG_CONFIG_HOME="$tmp/config" XDG_DATA_HOME="$tmp/data" \
  dist/ConflictBench/ConflictBench gui --selftest --db "$tmp/selftest.db"
du -sh dist/ConflictBench
echo "build: dist/ConflictBench is ready; install it with: bash packaging/install.sh"
