"""The typed core stays typed: mypy (configured in pyproject.toml, Qt views excluded) reports no error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_core_is_clean_under_mypy() -> None:
    pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
