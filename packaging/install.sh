#!/usr/bin/env bash
# Install the built app for the current user (no administrator rights needed):
#   bash packaging/install.sh [BUNDLE_DIR]     default BUNDLE_DIR: dist/ConflictBench (from packaging/build.sh)
# Puts the app in ~/.local/opt/ConflictBench, a `conflictbench` command in ~/.local/bin and a menu entry.
# Uninstall: bash packaging/install.sh --uninstall
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dest="${XDG_DATA_HOME:-$HOME/.local/share}/../opt/ConflictBench"
dest="$(realpath -m "$dest")"
bin="$HOME/.local/bin"
menu="${XDG_DATA_HOME:-$HOME/.local/share}/applications"

if [ "${1:-}" = "--uninstall" ]; then
  rm -rf "$dest" "$bin/conflictbench" "$menu/conflictbench-studio.desktop"
  echo "ConflictBench Studio was removed (your database and settings were kept)."
  exit 0
fi
src="${1:-$here/dist/ConflictBench}"
[ -x "$src/ConflictBench" ] || { echo "install: no app in $src; build it first: bash packaging/build.sh" >&2; exit 1; }

echo "Checking the app before installing it…"
QT_QPA_PLATFORM=offscreen "$src/ConflictBench" gui --selftest --db "$(mktemp -u).db" >/dev/null \
  || { echo "install: the app's self-test failed; it was not installed." >&2; exit 1; }
rm -rf "$dest"
mkdir -p "$(dirname "$dest")" "$bin" "$menu"
cp -a "$src" "$dest"
ln -sf "$dest/ConflictBench" "$bin/conflictbench"
cat >"$menu/conflictbench-studio.desktop" <<DESKTOP
[Desktop Entry]
Type=Application
Name=ConflictBench Studio
Comment=Play, watch, review and label the ConflictBench human-safety benchmark
Exec=$dest/ConflictBench
Terminal=false
Categories=Science;Education;
DESKTOP
echo "Installed. Open 'ConflictBench Studio' from your applications menu, or run: conflictbench"
case ":$PATH:" in *":$bin:"*) ;; *) echo "(Add $bin to your PATH to use the conflictbench command.)";; esac
