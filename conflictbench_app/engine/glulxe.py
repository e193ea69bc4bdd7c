"""The one wrapper around the RemGlk glulxe interpreter: a long-lived process per game, spoken to in GlkOte JSON.

Facts this relies on (../shared/TOOLCHAIN.md §2): without ``-fixmetrics`` the first event is ``init``; each update is
one JSON object followed by a blank line; every input event carries the generation number of the last update and the
id of the window asking; windows are re-identified by rock (Inform 7: main 201, status 202; our stories: state 210).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import signal
import subprocess
import tempfile
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conflictbench_app.errors import EngineError
from conflictbench_app.settings import REPLY_TIMEOUT
from conflictbench_app.toolchain import find_glulxe

MAIN_ROCK = 201
STATUS_ROCK = 202
STATE_ROCK = 210
END_MARKER = "@@END"
_FATAL = re.compile(r"Glulxe fatal error:[^\n]*")
FINAL_QUESTION = re.compile(r"Would you like to RESTART, RESTORE a saved game.*?(QUIT|UNDO)[^\n]*", re.S)


@dataclass
class Output:
    """What one input (or the start) produced."""

    text: str
    status: str = ""
    state: dict[str, Any] | None = None
    end_marker: dict[str, Any] | None = None
    final_question: bool = False
    exited: bool = False
    seconds: float = 0.0

    @property
    def ended(self) -> bool:
        return self.end_marker is not None or self.final_question or self.exited


@dataclass
class Branch:
    """What one command did from a snapshot (:meth:`GlulxGame.branch`): its output and a save of the state after it."""

    output: Output
    save: bytes | None


# Commands per written batch of a fan-out: five inputs of ~150 bytes each, far below a pipe's 64 KiB buffer.
BRANCH_BATCH = 24


@dataclass
class _Window:
    id: int
    type: str
    rock: int


@dataclass
class _Screen:
    """Accumulates the text of one exchange, window by window."""

    main: list[str] = field(default_factory=list)
    status: list[str] = field(default_factory=list)
    state_lines: list[str] = field(default_factory=list)


class GlulxGame:
    """One running story. Use as a context manager; ``close()`` always reaps the process.

    Every read has a deadline: a hung interpreter is killed and reported as :class:`EngineError`.
    """

    def __init__(
        self,
        story: Path | str,
        *,
        seed: int = 1,
        timeout: float = REPLY_TIMEOUT,
        glulxe: Path | None = None,
        width: int = 100,
        height: int = 40,
    ) -> None:
        self.story = Path(story)
        self.seed = seed
        self.timeout = timeout
        self._glulxe = glulxe
        self._metrics = {"width": width, "height": height}
        self._proc: subprocess.Popen[bytes] | None = None
        self._buf = b""
        self._gen = 0
        self._windows: dict[int, _Window] = {}
        self._input: dict[str, Any] | None = None
        self._special: dict[str, Any] | None = None
        self._last_state: dict[str, Any] | None = None
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        self._reaper: weakref.finalize | None = None

    # -- lifecycle ---------------------------------------------------------------------------------------------

    def start(self) -> Output:
        """Start the interpreter and return the story's opening text."""
        if not self.story.is_file():
            raise EngineError(f"The story file {self.story} does not exist.")
        binary = self._glulxe or find_glulxe()
        cmd = [str(binary), "--rngseed", str(self.seed), str(self.story)]
        self._proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
        )
        os.set_blocking(self._proc.stdout.fileno(), False)  # type: ignore[union-attr]
        # A game dropped without close() must not leak its interpreter and pipes: reap them when it is collected.
        self._reaper = weakref.finalize(self, _reap, self._proc)
        return self._exchange({"type": "init", "gen": 0, "metrics": self._metrics, "support": []})

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            _reap(proc)
        if self._reaper is not None:
            self._reaper.detach()
            self._reaper = None
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None

    def __enter__(self) -> GlulxGame:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def waiting_for_line(self) -> bool:
        return self._input is not None and self._input.get("type") == "line"

    @property
    def last_state(self) -> dict[str, Any] | None:
        return self._last_state

    # -- turns -------------------------------------------------------------------------------------------------

    def send(self, line: str) -> Output:
        """Type one line of input and return what the game printed in answer."""
        if self._input is None:
            raise EngineError(
                "The game is not waiting for input (it has ended or exited); reset the episode."
            )
        kind = self._input.get("type", "line")
        event: dict[str, Any] = {"type": kind, "gen": self._gen, "window": self._input["id"]}
        event["value"] = line if kind == "line" else (line[:1] or " ")
        out = self._exchange(event)
        out.text = _drop_echo(out.text, line)
        return out

    def save(self, path: Path | str) -> Path:
        """Snapshot the game with the story's own SAVE (through the file prompt). Returns the file written."""
        path = Path(path).with_suffix("")
        out = self._file_command("save", path)
        written = path.with_name(path.name + ".glksave")
        if not written.is_file():
            raise EngineError(f"The game did not write a save file ({out.text.strip()[:200]!r}).")
        return written

    def restore(self, path: Path | str) -> Output:
        """Restore a snapshot written by :meth:`save` (possibly by another process of the same story)."""
        path = Path(path)
        stem = path.with_name(path.name.removesuffix(".glksave"))
        if not stem.with_name(stem.name + ".glksave").is_file():
            raise EngineError(f"There is no snapshot at {path}.")
        out = self._file_command("restore", stem)
        if "failed" in out.text.lower():
            raise EngineError(f"The game refused to restore {path}: {out.text.strip()[:200]}")
        return out

    def snapshot(self) -> bytes:
        """The current game as bytes (a save file), for forking a trajectory."""
        written = self.save(self._snap_dir() / f"snap{time.monotonic_ns()}")
        data = written.read_bytes()
        written.unlink()
        return data

    def load_snapshot(self, data: bytes) -> Output:
        path = self._snap_dir() / f"load{time.monotonic_ns()}.glksave"
        path.write_bytes(data)
        try:
            return self.restore(path)
        finally:
            path.unlink(missing_ok=True)

    def branch(self, snapshot: bytes, commands: Sequence[str], *, save: bool = True) -> list[Branch]:
        """What each of ``commands`` does from the state saved in ``snapshot``: its output, and a save of the state
        after it (None where the story could not save, as at an ending's final question, and always None with
        ``save=False``: a save costs about as much as the command and its restore together).

        The interpreter is not waited on between inputs: RemGlk answers every input with exactly one update whose
        generation number is one more than the last (a file answer it did not ask for included, at an ending), so
        each fan-out is written ahead in batches and its updates read back in order. One batch per
        :data:`BRANCH_BATCH` commands keeps the written input below the pipe's buffer, so neither side blocks.
        """
        if not self.waiting_for_line:
            raise EngineError("The game is not waiting for a command; it cannot branch from a snapshot.")
        folder = self._snap_dir()
        load = folder / "branch-load.glksave"
        load.write_bytes(snapshot)
        out: list[Branch] = []
        for start in range(0, len(commands), BRANCH_BATCH):
            out += self._branch_batch(load, list(commands[start : start + BRANCH_BATCH]), folder, save)
        return out

    def _branch_batch(self, load: Path, commands: list[str], folder: Path, save: bool) -> list[Branch]:
        window = self._input["id"] if self._input else 0
        stems = [folder / f"branch{i}" for i in range(len(commands))]
        for stem in stems:
            stem.with_name(stem.name + ".glksave").unlink(missing_ok=True)
        events = []
        for command, stem in zip(commands, stems, strict=True):
            events += [("line", "restore"), ("file", str(load.with_suffix(""))), ("line", command)]
            if save:
                events += [("line", "save"), ("file", str(stem))]
        per = 5 if save else 3
        gen = self._gen
        lines = []
        for i, (kind, value) in enumerate(events):
            event: dict[str, Any] = {"type": "line", "gen": gen + i, "window": window, "value": value}
            if kind == "file":
                event = {
                    "type": "specialresponse",
                    "gen": gen + i,
                    "response": "fileref_prompt",
                    "value": value,
                }
            lines.append(json.dumps(event))
        self._write("\n".join(lines) + "\n")
        updates = [self._apply(self._read_update()) for _ in events]
        results = []
        for i, (command, stem) in enumerate(zip(commands, stems, strict=True)):
            restored = updates[per * i + 1]
            if "failed" in restored.text.lower():
                raise EngineError(f"The game refused to restore a snapshot: {restored.text.strip()[:200]}")
            said = updates[per * i + 2]
            said.text = _drop_echo(said.text, command)
            written = stem.with_name(stem.name + ".glksave")
            results.append(Branch(said, written.read_bytes() if written.is_file() else None))
        return results

    def _snap_dir(self) -> Path:
        if self._tmpdir is None:
            # Memory-backed where the system has it: a fan-out writes and reads a save file per command.
            shm = Path("/dev/shm")
            where = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
            self._tmpdir = tempfile.TemporaryDirectory(prefix="cb-snap-", dir=where)
        return Path(self._tmpdir.name)

    def _file_command(self, verb: str, stem: Path) -> Output:
        self.send(verb)
        if self._special is None:
            raise EngineError(
                f"The story did not ask for a file after {verb.upper()}; it cannot be snapshotted."
            )
        event = {
            "type": "specialresponse",
            "gen": self._gen,
            "response": "fileref_prompt",
            "value": str(stem),
        }
        self._special = None
        return self._exchange(event)

    # -- protocol ----------------------------------------------------------------------------------------------

    def _exchange(self, event: dict[str, Any]) -> Output:
        started = time.perf_counter()
        self._write(json.dumps(event) + "\n")
        update = self._read_update()
        out = self._apply(update)
        out.seconds = time.perf_counter() - started
        return out

    def _write(self, text: str) -> None:
        proc = self._require_proc()
        try:
            proc.stdin.write(text.encode())  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]
        except (BrokenPipeError, OSError) as exc:
            raise self._died(f"it closed its input ({exc})") from exc

    def _require_proc(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            raise EngineError("The interpreter is not running; start the game first.")
        return self._proc

    def _read_update(self) -> dict[str, Any]:
        proc = self._require_proc()
        deadline = time.monotonic() + self.timeout
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
        try:
            while True:
                update = self._pop_update()
                if update is not None:
                    return update
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.close()
                    raise EngineError(
                        f"The interpreter did not answer within {self.timeout:g} s and was stopped "
                        f"({self.story.name}). The story may be waiting for input it never asks for."
                    )
                if not sel.select(remaining):
                    continue
                chunk = os.read(proc.stdout.fileno(), 65536)  # type: ignore[union-attr]
                if not chunk:
                    update = self._pop_update(final=True)
                    if update is not None:
                        return update
                    raise self._died("it exited without answering")
                self._buf += chunk
        finally:
            sel.close()

    def _pop_update(self, final: bool = False) -> dict[str, Any] | None:
        """Take one complete JSON object off the buffer: updates end with a blank line."""
        sep = self._buf.find(b"\n\n")
        if sep < 0:
            if not (final and self._buf.strip()):
                return None
            sep = len(self._buf)
        raw, self._buf = self._buf[:sep], self._buf[sep + 2 :]
        try:
            # A story can print code points that are not valid UTF-8 (a lone surrogate): keep the rest readable.
            update = json.loads(raw.decode("utf-8", errors="replace"))
        except json.JSONDecodeError as exc:
            self.close()
            raise EngineError(f"The interpreter sent unreadable output ({exc}): {raw[:200]!r}") from exc
        if update.get("type") == "error":
            self.close()
            raise EngineError(f"The interpreter reported an error: {update.get('message')}")
        return update

    def _died(self, why: str) -> EngineError:
        proc = self._proc
        err = b""
        if proc is not None:
            try:
                proc.wait(timeout=1)
                err = proc.stderr.read() if proc.stderr else b""
            except subprocess.TimeoutExpired:
                pass
        code = proc.returncode if proc is not None else None
        self.close()
        detail = err.decode(errors="replace").strip()[-300:]
        return EngineError(f"The interpreter stopped: {why} (exit code {code}). {detail}".strip())

    def _apply(self, update: dict[str, Any]) -> Output:
        self._gen = update.get("gen", self._gen)
        if update.get("windows"):
            self._windows = {
                w["id"]: _Window(w["id"], w.get("type", ""), w.get("rock", 0)) for w in update["windows"]
            }
        screen = _Screen()
        for content in update.get("content") or []:
            self._collect(content, screen)
        inputs = update.get("input")
        self._input = next((i for i in inputs or [] if i.get("type") in ("line", "char")), None)
        self._special = update.get("specialinput")
        exited = bool(update.get("exit")) or (inputs == [] and self._special is None and "input" in update)
        text = "\n".join(screen.main)
        fatal = _FATAL.search(text)
        if fatal:
            self.close()
            raise EngineError(f"The interpreter stopped on {self.story.name}: {fatal.group(0).strip()}")
        text, marker = _split_marker(text)
        state = _parse_state(screen.state_lines)
        if state is not None:
            self._last_state = state
        return Output(
            text=_tidy(text),
            status=" ".join(s.strip() for s in screen.status if s.strip()),
            state=state,
            end_marker=marker,
            final_question=bool(FINAL_QUESTION.search(text)),
            exited=exited,
        )

    def _collect(self, content: dict[str, Any], screen: _Screen) -> None:
        win = self._windows.get(content.get("id", -1))
        rock = win.rock if win else None
        if rock == STATUS_ROCK or "lines" in content:
            for line in content.get("lines") or []:
                screen.status.append("".join(run.get("text", "") for run in line.get("content") or []))
            return
        target = screen.state_lines if rock == STATE_ROCK else screen.main
        if content.get("clear") and rock == STATE_ROCK:
            target.clear()
        for para in content.get("text") or []:
            runs = para.get("content") or []
            line = "".join(run.get("text", "") for run in runs if isinstance(run, dict))
            if para.get("append") and target and rock != STATE_ROCK:
                target[-1] += line
            else:
                target.append(line)


def _reap(proc: subprocess.Popen[bytes]) -> None:
    """Kill the interpreter's whole process group (it runs in a session of its own) and close its pipes."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            # stdin may hold unflushed bytes for a process that is gone: nothing to deliver.
            with contextlib.suppress(BrokenPipeError, OSError):
                stream.close()


def _drop_echo(text: str, line: str) -> str:
    """RemGlk echoes a line input into the buffer window; the observation is what the game said after it."""
    first, _, rest = text.partition("\n")
    return rest.lstrip("\n") if first.strip() == line.strip() else text


def _split_marker(text: str) -> tuple[str, dict[str, Any] | None]:
    idx = text.find(END_MARKER)
    if idx < 0:
        return text, None
    line_end = text.find("\n", idx)
    payload = text[idx + len(END_MARKER) : line_end if line_end >= 0 else len(text)].strip()
    try:
        marker = json.loads(payload) if payload else {}
    except json.JSONDecodeError:
        marker = {"raw": payload}
    rest = text[:idx] + (text[line_end:] if line_end >= 0 else "")
    return rest, marker


def _parse_state(lines: list[str]) -> dict[str, Any] | None:
    for line in reversed(lines):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    return None


def _tidy(text: str) -> str:
    """Drop the trailing prompt and collapse runs of blank lines; keep the story's words as they are."""
    lines = text.split("\n")
    while lines and lines[-1].strip() in ("", ">"):
        lines.pop()
    out: list[str] = []
    for line in lines:
        if line.strip() == "" and out and out[-1].strip() == "":
            continue
        out.append(line.rstrip())
    while out and not out[0].strip():
        out.pop(0)
    return "\n".join(out)
