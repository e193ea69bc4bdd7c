"""Unsaved spec edits kept as a draft copy, so that a crash or a closed window never loses them.

The copy lives in the user's data folder (``$XDG_DATA_HOME/conflictbench/autosave/``), never beside the spec: a
checkout's ``scenarios/`` stays clean. One file per spec folder, named by the folder's id and a digest of its full
path, so two checkouts' EP1-101 do not share a draft. Saving the spec (a build) discards the copy.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from conflictbench_app.errors import ConflictBenchError

SUFFIX = ".scenario.yaml.autosave"


def autosave_dir() -> Path:
    from conflictbench_app.settings import user_data_dir

    return user_data_dir() / "autosave"


def autosave_path(folder: Path) -> Path:
    digest = hashlib.sha256(str(Path(folder).resolve()).encode()).hexdigest()[:12]
    return autosave_dir() / f"{Path(folder).name}-{digest}{SUFFIX}"


def write_autosave(folder: Path, text: str) -> Path:
    """Keep ``text`` as the draft of ``folder``'s spec (written whole, then renamed: never half a file)."""
    path = autosave_path(folder)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise ConflictBenchError(
            f"Could not keep a draft copy of your edits in {path.parent} ({exc.strerror or exc}); "
            "build to save them into the spec."
        ) from exc
    return path


def read_autosave(folder: Path) -> str | None:
    """The draft kept for ``folder``, or None when there is none."""
    path = autosave_path(folder)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConflictBenchError(f"The draft copy {path} cannot be read ({exc}); move it away.") from exc


def pending_autosave(folder: Path, spec_text: str) -> str | None:
    """The draft for ``folder`` when it differs from the spec's text (an older identical copy is removed)."""
    draft = read_autosave(folder)
    if draft is None or draft == spec_text:
        discard_autosave(folder)
        return None
    return draft


def discard_autosave(folder: Path) -> None:
    autosave_path(folder).unlink(missing_ok=True)
