"""The clip cache: one folder per key, written atomically, safe with several processes at once.

Layout under the root (``settings.cache_dir / "clips"`` by default)::

    entries/<k[:2]>/<key>/clip.mp4, last.png, meta.json   one clip; meta.json is written last and marks it complete
    chains/<chain_key>/<key>.json                          which clips show a scenario + action chain (for replay)
    locks/<key>.lock                                       fcntl lock held while a key is being rendered

A reader serves an entry only when its ``meta.json`` exists; every file is written under a temporary name and moved
into place with ``os.replace``, so a half-written clip is never served, and a render that fails or is cancelled
leaves no entry behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conflictbench_app.worldmodel.types import CLIP_SCHEMA_VERSION, Clip, WorldModelError
from conflictbench_app.worldmodel.video import save_png, write_mp4

if TYPE_CHECKING:
    import numpy as np

CLIP_NAME = "clip.mp4"
LAST_NAME = "last.png"
META_NAME = "meta.json"


def default_cache_root() -> Path:
    from conflictbench_app.settings import get_settings

    return get_settings().cache_dir / "clips"


class ClipCache:
    """Clips on disk, addressed by key. See the module docstring for the layout and the atomicity rules."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_root()

    def entry_dir(self, key: str) -> Path:
        return self.root / "entries" / key[:2] / key

    def lookup(self, key: str) -> Clip | None:
        """The complete entry for ``key``, or None. Reads only small files: no video is decoded."""
        start = time.perf_counter()
        folder = self.entry_dir(key)
        try:
            meta = json.loads((folder / META_NAME).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, json.JSONDecodeError) as exc:
            raise WorldModelError(
                f"The cache entry {folder} is unreadable ({exc}); delete that folder."
            ) from exc
        if not (folder / CLIP_NAME).is_file() or not (folder / LAST_NAME).is_file():
            raise WorldModelError(
                f"The cache entry {folder} lost its files; delete that folder to render it again."
            )
        return clip_from_meta(folder, meta, cache_hit=True, seconds=time.perf_counter() - start)

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Hold the per-key lock: only one process renders a given key at a time."""
        locks = self.root / "locks"
        locks.mkdir(parents=True, exist_ok=True)
        with open(locks / f"{key}.lock", "a+b") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def store_frames(self, key: str, frames: np.ndarray, fps: int, meta: dict[str, Any]) -> Clip:
        """Encode ``frames`` (RGB uint8, N×H×W×3) as the entry for ``key``. Call while holding :meth:`lock`."""
        start = time.perf_counter()
        folder = self._fresh_dir(key)
        tag = f"{os.getpid()}.tmp"
        clip_tmp, last_tmp = folder / f"clip.{tag}.mp4", folder / f"last.{tag}.png"
        try:
            write_mp4(frames, clip_tmp, fps)
            save_png(frames[-1], last_tmp)
            os.replace(clip_tmp, folder / CLIP_NAME)
            os.replace(last_tmp, folder / LAST_NAME)
        finally:
            _unlink(clip_tmp, last_tmp)
        timings = dict(meta.get("timings", {}))
        timings["encode_s"] = round(time.perf_counter() - start, 4)
        timings["total_s"] = round(timings.get("render_s", 0.0) + timings["encode_s"], 4)
        return self._commit(key, folder, {**meta, "timings": timings})

    def store_file(self, key: str, video: Path, last_frame: np.ndarray, meta: dict[str, Any]) -> Clip:
        """Copy an existing video (an imported clip) in as the entry for ``key``. Call while holding :meth:`lock`."""
        folder = self._fresh_dir(key)
        tag = f"{os.getpid()}.tmp"
        clip_tmp, last_tmp = folder / f"clip.{tag}.mp4", folder / f"last.{tag}.png"
        try:
            shutil.copyfile(video, clip_tmp)
            save_png(last_frame, last_tmp)
            os.replace(clip_tmp, folder / CLIP_NAME)
            os.replace(last_tmp, folder / LAST_NAME)
        finally:
            _unlink(clip_tmp, last_tmp)
        return self._commit(key, folder, meta)

    def chain_entries(self, chain_key: str) -> list[dict[str, Any]]:
        """Pointers to every complete clip of a chain, newest first: ``{"key", "backend", "created"}``."""
        folder = self.root / "chains" / chain_key
        pointers = []
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            pointer = json.loads(path.read_text(encoding="utf-8"))
            if (self.entry_dir(pointer["key"]) / META_NAME).is_file():
                pointers.append(pointer)
        return sorted(pointers, key=lambda p: p.get("created", ""), reverse=True)

    def _fresh_dir(self, key: str) -> Path:
        folder = self.entry_dir(key)
        folder.mkdir(parents=True, exist_ok=True)
        # A previous writer may have died after moving its video in but before meta.json: that entry was never
        # served (no meta), and its files are overwritten below.
        return folder

    def _commit(self, key: str, folder: Path, meta: dict[str, Any]) -> Clip:
        meta = {**meta, "schema_version": CLIP_SCHEMA_VERSION, "key": key}
        meta.setdefault("created", datetime.now(UTC).isoformat(timespec="seconds"))
        _atomic_write(folder / META_NAME, json.dumps(meta, indent=2, ensure_ascii=False, sort_keys=True))
        chain_key = meta.get("chain_key")
        if chain_key:
            pointer = {"key": key, "backend": meta.get("backend", ""), "created": meta["created"]}
            chains = self.root / "chains" / chain_key
            chains.mkdir(parents=True, exist_ok=True)
            _atomic_write(chains / f"{key}.json", json.dumps(pointer, sort_keys=True))
        return clip_from_meta(
            folder, meta, cache_hit=False, seconds=float(meta.get("timings", {}).get("total_s", 0.0))
        )


def clip_from_meta(folder: Path, meta: dict[str, Any], *, cache_hit: bool, seconds: float) -> Clip:
    return Clip(
        path=folder / CLIP_NAME,
        last_frame=folder / LAST_NAME,
        frames=int(meta["frames"]),
        fps=round(float(meta["fps"])),
        width=int(meta["width"]),
        height=int(meta["height"]),
        prompt=str(meta.get("prompt", "")),
        seed=int(meta.get("seed", 0)),
        backend=str(meta["backend"]),
        cache_hit=cache_hit,
        seconds=seconds,
        key=str(meta["key"]),
        meta=meta,
    )


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        _unlink(tmp)


def _unlink(*paths: Path) -> None:
    for path in paths:
        path.unlink(missing_ok=True)
