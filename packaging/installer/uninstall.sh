#!/usr/bin/env bash
# Remove ConflictBench Studio as install.sh installed it (same locations and variables).
#   uninstall.sh           remove the app, its commands and its menu entry; keep your recorded runs and settings
#   uninstall.sh --purge   also delete recorded runs, clips and settings (~/.local/share/conflictbench,
#                          ~/.config/conflictbench)
set -euo pipefail

MARKER=".conflictbench-studio-install"
LAUNCHER_TAG="# Installed by ConflictBench Studio's install.sh"

prefix="${CONFLICTBENCH_PREFIX:-$HOME/.local/opt/conflictbench-studio}"
bindir="${XDG_BIN_HOME:-$HOME/.local/bin}"
datadir="${XDG_DATA_HOME:-$HOME/.local/share}"
configdir="${XDG_CONFIG_HOME:-$HOME/.config}"
purge=0

for arg in "$@"; do
  case "$arg" in
    --purge) purge=1 ;;
    -h|--help) sed -n '2,5p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) printf 'uninstall.sh: unknown option %s (use --purge or --help).\n' "$arg" >&2; exit 1 ;;
  esac
done

removed=0
remove() {
  if [ -e "$1" ] || [ -L "$1" ]; then
    rm -rf "$1"
    printf 'removed %s\n' "$1"
    removed=1
  fi
}

for name in conflictbench-studio conflictbench; do
  if [ -f "$bindir/$name" ] && grep -qF "$LAUNCHER_TAG" "$bindir/$name"; then
    remove "$bindir/$name"
  fi
done
remove "$datadir/applications/conflictbench-studio.desktop"
if command -v update-desktop-database > /dev/null 2>&1; then
  update-desktop-database "$datadir/applications" 2> /dev/null || true  # only refreshes the menu cache
fi
if [ -e "$prefix" ]; then
  if [ -e "$prefix/$MARKER" ]; then
    remove "$prefix"
  else
    printf 'uninstall.sh: %s was not made by install.sh; left it alone.\n' "$prefix" >&2
    exit 1
  fi
fi
if [ "$purge" = 1 ]; then
  remove "$datadir/conflictbench"
  remove "$configdir/conflictbench"
fi

if [ "$removed" = 1 ]; then
  echo "ConflictBench Studio is uninstalled."
  [ "$purge" = 1 ] || echo "Your recorded runs and settings are kept in $datadir/conflictbench and $configdir/conflictbench (--purge deletes them)."
else
  echo "ConflictBench Studio was not installed here (nothing removed)."
fi
