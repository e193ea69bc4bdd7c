"""The one wrapper around the Inform 7 compiler: ``ni`` (from the textworld 1.7.0 wheel's files) then ``inform6``.

TOOLCHAIN §1: ni wants ``<P>.inform/Source/story.ni`` and an empty ``uuid.txt``; on a source error it exits 1 and
prints the problem on stdout. Problems come back as :class:`CompileError` with readable text; for our generated
sources, :func:`explain_problem` maps generated names (``cbv_pressure``, ``CB_A3``) back to spec fields.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from conflictbench_app.errors import ScenarioError, ToolchainError
from conflictbench_app.toolchain import Inform7, find_inform7

COMPILE_TIMEOUT = 120.0


class CompileError(ScenarioError):
    """The source did not compile. ``problems`` holds one readable sentence per problem."""

    def __init__(self, message: str, problems: list[str]) -> None:
        super().__init__(message)
        self.problems = problems


@dataclass(frozen=True)
class CompileResult:
    story: Path
    seconds_ni: float
    seconds_inform6: float

    @property
    def seconds(self) -> float:
        return self.seconds_ni + self.seconds_inform6


def compile_source(
    source: str, out_file: Path, *, tools: Inform7 | None = None, label: str = "story"
) -> CompileResult:
    """Compile Inform 7 source text to a Glulx story at ``out_file`` (written only on success)."""
    tools = tools or find_inform7()
    with tempfile.TemporaryDirectory(prefix="cb-i7-") as tmp:
        project = Path(tmp) / "story.inform"
        (project / "Source").mkdir(parents=True)
        (project / "Source" / "story.ni").write_text(source, encoding="utf-8")
        (project / "uuid.txt").write_text("", encoding="utf-8")
        ni_cmd = [str(tools.ni), "--noprogress", "--internal", str(tools.internal), "--format=ulx"]
        ni_cmd += ["--project", str(project)]
        t0 = time.perf_counter()
        proc = _run(ni_cmd, cwd=Path(tmp))
        t1 = time.perf_counter()
        if proc.returncode != 0:
            problems = ni_problems(proc.stdout + proc.stderr)
            raise CompileError(_message(label, "Inform 7 (ni)", problems), problems)
        built = Path(tmp) / "out.ulx"
        i6_cmd = [str(tools.inform6), "-E2wSG", "-F0", str(project / "Build" / "auto.inf"), str(built)]
        proc = _run(i6_cmd, cwd=Path(tmp))
        t2 = time.perf_counter()
        if proc.returncode != 0 or not built.is_file():
            problems = inform6_problems(proc.stdout + proc.stderr)
            raise CompileError(_message(label, "Inform 6", problems), problems)
        out_file.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, out_file)
    return CompileResult(out_file, t1 - t0, t2 - t1)


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            cmd,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=COMPILE_TIMEOUT,
            check=False,
            errors="replace",
        )
    except FileNotFoundError as exc:
        raise ToolchainError(
            f"{cmd[0]} could not be started ({exc}); run `conflictbench toolchain install`."
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise ToolchainError(f"{Path(cmd[0]).name} did not finish within {COMPILE_TIMEOUT:g} s.") from exc


def _message(label: str, stage: str, problems: list[str]) -> str:
    listed = "\n".join(f"  - {p}" for p in problems) or "  - (the compiler printed no problem text)"
    return f"{label}: {stage} reported {len(problems)} problem(s):\n{listed}"


def ni_problems(output: str) -> list[str]:
    """The problem paragraphs ni printed (``Problem. ...`` / ``>--> ...``), whitespace collapsed."""
    text = output.replace("\r", "")
    blocks = re.split(r"\n\s*\n", text)
    problems = []
    for block in blocks:
        flat = " ".join(block.split())
        if re.search(r"problem|>-->", flat, re.I) and not re.match(
            r"^Inform 7 (has finished|v\d|build)", flat
        ):
            problems.append(re.sub(r"^>-->\s*", "", flat))
    return [p for p in problems if not p.startswith("Inform 7 has finished")] or (
        [" ".join(text.split())[-600:]] if text.strip() else []
    )


def inform6_problems(output: str) -> list[str]:
    """Inform 6 errors (``line N: Error: ...``), most useful first."""
    found = [" ".join(line.split()) for line in output.splitlines() if re.search(r"error", line, re.I)]
    return found or ([" ".join(output.split())[-600:]] if output.strip() else [])


def explain_problem(problem: str, names: dict[str, str]) -> str:
    """Append the spec field that a generated name in ``problem`` came from (``cbv_x`` → ``state[i]``)."""
    hits = [f"{name} comes from {field}" for name, field in names.items() if name in problem]
    return f"{problem} ({'; '.join(hits)})" if hits else problem
