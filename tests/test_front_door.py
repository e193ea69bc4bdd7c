"""The README's two commands stay true, and the architecture rules hold."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## Setup: two commands", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.strip().splitlines()]


def test_readme_has_the_two_commands_and_ci_runs_the_test_one() -> None:
    app, test = _readme_commands()
    assert app == "bash packaging/bootstrap.sh app"
    assert test == "bash packaging/bootstrap.sh test"
    assert test in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_app_command_installs_and_starts(tmp_path: Path) -> None:
    """Run the README's app command for real (the venv is already there, so install is quick), asking for help."""
    if not (ROOT / ".venv" / "bin" / "python").exists():
        pytest.skip("no .venv: the test suite was not started through the README's command")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.run(
        ["bash", "packaging/bootstrap.sh", "app", "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Usage: conflictbench" in proc.stdout and "scenarios" in proc.stdout


def test_cli_help_imports_neither_qt_nor_torch() -> None:
    code = (
        "import sys\n"
        "from conflictbench_app.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('PySide6', 'torch', 'diffusers', 'cv2', 'openai', 'matplotlib') if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert re.search(r"^HEAVY=$", out, re.M), out


def test_core_never_imports_qt() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    if not lint.exists():
        pytest.skip("import-linter is not installed (it comes with the [test] extra)")
    proc = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "KEPT" in proc.stdout and "BROKEN" not in proc.stdout


def test_no_shared_test_data_is_committed() -> None:
    shared = ROOT.parent / "shared"
    if not shared.is_dir():
        pytest.skip("../shared is absent")
    import hashlib

    def digests(paths):
        return {hashlib.sha1(p.read_bytes()).hexdigest(): p for p in paths if p.is_file()}

    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    ours = digests(ROOT / t for t in tracked)
    theirs = digests(list((shared / "paper-corpus").rglob("*")) + list((shared / "pacifaist").rglob("*")))
    leaked = [str(ours[d]) for d in set(ours) & set(theirs)]
    assert not leaked, f"files copied from ../shared: {leaked}"


def test_every_command_the_readme_names_exists() -> None:
    from conflictbench_app.cli import COMMANDS

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"conflictbench ([a-z][a-z-]+)", text))
    unknown = sorted(n for n in named if n not in COMMANDS)
    assert not unknown, f"README names commands that do not exist: {unknown}"


def test_lint_and_format_are_clean() -> None:
    ruff = Path(sys.executable).parent / "ruff"
    if not ruff.exists():
        pytest.skip("ruff is not installed (it comes with the [test] extra)")
    for args in (["check", "."], ["format", "--check", "."]):
        proc = subprocess.run([str(ruff), *args], cwd=ROOT, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-1000:]
