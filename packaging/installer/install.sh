#!/usr/bin/env bash
# Install ConflictBench Studio for the current user (no root, no Python needed):
#   the app in ~/.local/opt/conflictbench-studio, the commands `conflictbench-studio` and `conflictbench` in
#   ~/.local/bin, and "ConflictBench Studio" in the application menu. Running it again upgrades or repairs the
#   install. At the end it runs the app's self-test (offscreen) and says whether it passed.
#
#   ./install.sh                 install, then self-test
#   ./install.sh --no-selftest   install only
#
# Locations follow CONFLICTBENCH_PREFIX, XDG_BIN_HOME and XDG_DATA_HOME when set. Remove with uninstall.sh.
set -euo pipefail

MARKER=".conflictbench-studio-install"
LAUNCHER_TAG="# Installed by ConflictBench Studio's install.sh"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
prefix="${CONFLICTBENCH_PREFIX:-$HOME/.local/opt/conflictbench-studio}"
bindir="${XDG_BIN_HOME:-$HOME/.local/bin}"
datadir="${XDG_DATA_HOME:-$HOME/.local/share}"
appsdir="$datadir/applications"
selftest=1

say() { printf '%s\n' "$*"; }
fail() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }

for arg in "$@"; do
  case "$arg" in
    --no-selftest) selftest=0 ;;
    -h|--help) sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) fail "unknown option '$arg' (use --no-selftest or --help)." ;;
  esac
done

# -- checks before touching anything ---------------------------------------------------------------------------
[ -f "$here/glibc-min.txt" ] || fail "$here/glibc-min.txt is missing: unpack the whole archive and run install.sh from it."
[ -x "$here/app/conflictbench" ] || fail "$here/app/conflictbench is missing: unpack the whole archive and run install.sh from it."
[ "$(uname -s)" = Linux ] || fail "this package is for Linux; this machine runs $(uname -s)."
[ "$(uname -m)" = x86_64 ] || fail "this package is for x86_64 processors; this machine is $(uname -m)."
for path in "$prefix" "$bindir" "$appsdir"; do
  case "$path" in
    *[\"\`\$\\]*) fail "the path '$path' contains a quote, backquote, dollar or backslash; set a plainer one." ;;
  esac
done
# The bundle carries its own Python and libraries but uses the system's C library, which must be as new as the one
# it was built against (build_app.py measures it into glibc-min.txt).
need_glibc="$(cat "$here/glibc-min.txt")"
have_glibc="$(getconf GNU_LIBC_VERSION 2> /dev/null | awk '{print $2}')"
if [ -z "$have_glibc" ]; then
  fail "this system does not use the GNU C library (glibc); the app needs glibc $need_glibc or newer."
fi
if [ "$(printf '%s\n%s\n' "$need_glibc" "$have_glibc" | sort -V | head -n 1)" != "$need_glibc" ]; then
  fail "this system's C library is glibc $have_glibc; the app needs $need_glibc or newer (for example Debian 12, Ubuntu 24.04, Fedora 37 or later)."
fi
if [ -e "$prefix" ] && [ ! -e "$prefix/$MARKER" ]; then
  fail "$prefix exists but was not made by this installer; move it away or set CONFLICTBENCH_PREFIX to another folder."
fi

# -- the app: copied beside the old one, then swapped in, so a failed copy leaves the old install intact --------
say "Installing ConflictBench Studio into $prefix ..."
mkdir -p "$(dirname "$prefix")" "$bindir" "$appsdir"
staging="$prefix.new.$$"
rm -rf "$staging"
trap 'rm -rf "$staging"' EXIT
mkdir -p "$staging/share"
cp -a "$here/app" "$staging/app"
cp "$here/uninstall.sh" "$staging/uninstall.sh"
chmod +x "$staging/uninstall.sh"
cp "$here/conflictbench-studio.svg" "$staging/share/conflictbench-studio.svg"
if ! "$staging/app/conflictbench" --version > "$staging/$MARKER" 2> "$staging/start-error.txt"; then
  cat "$staging/start-error.txt" >&2
  fail "the bundled program does not start on this machine (see the message above)."
fi
rm -f "$staging/start-error.txt"
if [ -e "$prefix" ]; then
  mv "$prefix" "$prefix.old.$$"
  mv "$staging" "$prefix"
  rm -rf "$prefix.old.$$"
else
  mv "$staging" "$prefix"
fi
trap - EXIT
app="$prefix/app/conflictbench"

# -- commands in ~/.local/bin: ours are replaced, anyone else's are left alone ------------------------------------
write_launcher() {
  local path="$bindir/$1"
  if [ -e "$path" ] && ! grep -qF "$LAUNCHER_TAG" "$path"; then
    say "  kept the existing $path (not ours); run the app with $app"
    return
  fi
  printf '#!/bin/sh\n%s\nexec "%s" "$@"\n' "$LAUNCHER_TAG" "$app" > "$path.tmp"
  chmod 755 "$path.tmp"
  mv "$path.tmp" "$path"
  say "  command: $path"
}
write_launcher conflictbench-studio
write_launcher conflictbench

# -- the application menu entry ---------------------------------------------------------------------------------
template="$(cat "$here/conflictbench-studio.desktop.in")"
entry="${template//@LAUNCHER@/"$bindir/conflictbench-studio"}"
entry="${entry//@ICON@/"$prefix/share/conflictbench-studio.svg"}"
printf '%s\n' "$entry" > "$appsdir/conflictbench-studio.desktop.tmp"
mv "$appsdir/conflictbench-studio.desktop.tmp" "$appsdir/conflictbench-studio.desktop"
say "  menu entry: $appsdir/conflictbench-studio.desktop"
if command -v update-desktop-database > /dev/null 2>&1; then
  update-desktop-database "$appsdir" 2> /dev/null || say "  (update-desktop-database failed; the menu picks the entry up at next login)"
fi

# -- system libraries the desktop window needs (the bundle carries the rest) ------------------------------------
missing_libs() {
  local internal="$prefix/app/_internal"
  local libs=("$internal/PySide6/Qt/lib/libQt6Gui.so.6" "$internal/PySide6/Qt/plugins/platforms/libqxcb.so"
              "$internal/PySide6/Qt/plugins/platforms/libqoffscreen.so")
  command -v ldd > /dev/null 2>&1 || return 0
  for lib in "${libs[@]}"; do
    # ldd's exit status says nothing about missing libraries (it prints "not found"): read its output only.
    if [ -e "$lib" ]; then LD_LIBRARY_PATH="$internal:$internal/PySide6/Qt/lib" ldd "$lib" 2> /dev/null || true; fi
  done | awk '/not found/ {print $1}' | sort -u
}
package_hint() {
  case "$1" in
    libEGL.so*) echo libegl1 ;; libGL.so*|libGLX.so*) echo libgl1 ;; libOpenGL.so*) echo libopengl0 ;;
    libxkbcommon-x11.so*) echo libxkbcommon-x11-0 ;; libxkbcommon.so*) echo libxkbcommon0 ;;
    libxcb-cursor.so*) echo libxcb-cursor0 ;; libxcb-icccm.so*) echo libxcb-icccm4 ;;
    libxcb-keysyms.so*) echo libxcb-keysyms1 ;; libfontconfig.so*) echo libfontconfig1 ;;
    libdbus-1.so*) echo libdbus-1-3 ;; *) echo "(the package providing $1)" ;;
  esac
}
missing="$(missing_libs)"
if [ -n "$missing" ]; then
  say ""
  say "Warning: this system lacks libraries the app's window needs:"
  for lib in $missing; do say "  $lib   (Debian/Ubuntu package: $(package_hint "$lib"))"; done
  say "Install them with your package manager, e.g. sudo apt install $(for lib in $missing; do package_hint "$lib"; done | grep -v '^(' | tr '\n' ' ')"
fi

# -- self-test ------------------------------------------------------------------------------------------------------
status=0
if [ "$selftest" = 1 ]; then
  say ""
  say "Self-test: playing a scripted episode offscreen (under a minute) ..."
  log="$prefix/selftest.log"
  if QT_QPA_PLATFORM=offscreen "$app" gui --selftest > "$log" 2>&1; then
    say "  $(grep -E '^Self-test passed' "$log" || echo 'Self-test passed.')"
  else
    status=1
    say ""
    say "SELF-TEST FAILED: the app is installed but may not work on this machine. The last lines of $log:"
    tail -n 15 "$log" | sed 's/^/  | /'
  fi
fi

say ""
say "ConflictBench Studio $(awk '{print $NF}' "$prefix/$MARKER") is installed."
say "  Start it from the application menu (\"ConflictBench Studio\") or with: conflictbench-studio"
say "  Command line: conflictbench --help"
say "  Uninstall:    $prefix/uninstall.sh"
case ":$PATH:" in
  *":$bindir:"*) ;;
  *) say "  Note: $bindir is not on your PATH; log out and in again, or add it to PATH, to use the commands." ;;
esac
exit "$status"
