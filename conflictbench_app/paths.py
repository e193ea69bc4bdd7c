"""Written paths stay where the user said: names taken from a database or a file are checked before they are used.

A crafted database can hold a scenario id such as ``../../.bashrc``; an export that joins it to ``--out`` would
write outside the folder. :func:`confined` accepts one plain name per part and checks the result stays inside.
"""

from __future__ import annotations

from pathlib import Path

from conflictbench_app.errors import ConflictBenchError


def confined(root: Path, *parts: str) -> Path:
    """``root / parts...``, refused unless every part is a plain file name and the result lies inside ``root``."""
    for part in parts:
        if not part or part in (".", "..") or "/" in part or "\\" in part or "\x00" in part:
            raise ConflictBenchError(
                f"Refusing to write under {root}: {part!r} is not a plain file name (the record holds an unsafe "
                "name; nothing was written for it)."
            )
    target = Path(root).joinpath(*parts)
    if not target.resolve().is_relative_to(Path(root).resolve()):
        raise ConflictBenchError(f"Refusing to write {target}: it lies outside {root} (through a link).")
    return target


def writable_file(out: Path, hint: str = "") -> Path:
    """``out`` as a file to write, or a sentence saying why it cannot be (a folder, a missing folder)."""
    if out.is_dir():
        raise ConflictBenchError(f"--out {out} is a folder; give a file name{hint}.")
    if not out.parent.is_dir():
        raise ConflictBenchError(
            f"--out {out}: the folder {out.parent} does not exist; create it or choose another."
        )
    return out


def writable_folder(out: Path) -> Path:
    """``out`` as a folder to write into (created when its parent exists), or a sentence saying why not."""
    if out.exists() and not out.is_dir():
        raise ConflictBenchError(f"--out {out} is a file; give a folder for this format.")
    if not out.exists():
        if not out.parent.is_dir():
            raise ConflictBenchError(
                f"--out {out}: the folder {out.parent} does not exist; create it or choose another."
            )
        out.mkdir()
    return out
