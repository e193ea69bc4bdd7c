"""Clip files: writing mp4 and lossless PNG frames, reading them back, and sampling frames for agents.

OpenCV writes ``mp4v`` (MPEG-4 Part 2) only, not H.264 (TOOLCHAIN §4); Qt's FFmpeg backend and every API that takes
video decode it. mp4v writing is deterministic: the same frames give a byte-identical file.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from conflictbench_app.worldmodel.types import Clip, WorldModelError

if TYPE_CHECKING:
    import numpy as np

ImageFormat = Literal["jpeg", "png"]


def write_mp4(frames: np.ndarray, path: Path, fps: int) -> None:
    """Write RGB ``uint8`` frames of shape (N, H, W, 3) to ``path`` (its suffix must be ``.mp4``)."""
    import cv2

    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype.name != "uint8":
        raise WorldModelError(
            f"Frames must be uint8 RGB of shape (N, H, W, 3), not {frames.dtype} {frames.shape}."
        )
    height, width = frames.shape[1:3]
    fourcc = cv2.VideoWriter.fourcc(*"mp4v")
    writer = cv2.VideoWriter(str(path), fourcc, float(fps), (width, height))
    if not writer.isOpened():
        raise WorldModelError(f"OpenCV cannot write {path}; check that the folder is writable.")
    try:
        for frame in frames:
            writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
    finally:
        writer.release()
    if not path.is_file() or path.stat().st_size == 0:
        raise WorldModelError(f"OpenCV wrote no video to {path}; its FFmpeg backend may be missing.")


def read_frames(path: Path, indices: Sequence[int] | None = None) -> np.ndarray:
    """Decode a video into RGB ``uint8`` frames (all, or only ``indices``)."""
    import cv2
    import numpy as np

    capture = cv2.VideoCapture(str(path))
    if not capture.isOpened():
        raise WorldModelError(f"Cannot open the video {path}; the file is missing or not a video.")
    wanted = None if indices is None else set(indices)
    frames = []
    try:
        index = 0
        while True:
            ok, frame = capture.read()
            if not ok:
                break
            if wanted is None or index in wanted:
                frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
            index += 1
    finally:
        capture.release()
    if not frames:
        raise WorldModelError(f"The video {path} has no readable frames.")
    return np.stack(frames)


def video_info(path: Path) -> tuple[int, float, int, int]:
    """(frames, fps, width, height) of a video file, counting frames by decoding them."""
    import cv2

    capture = cv2.VideoCapture(str(path))
    if not capture.isOpened():
        raise WorldModelError(f"Cannot open the video {path}; the file is missing or not a video.")
    try:
        fps = capture.get(cv2.CAP_PROP_FPS)
        width = int(capture.get(cv2.CAP_PROP_FRAME_WIDTH))
        height = int(capture.get(cv2.CAP_PROP_FRAME_HEIGHT))
        count = 0
        while capture.grab():
            count += 1
    finally:
        capture.release()
    return count, fps, width, height


def save_png(frame: np.ndarray, path: Path) -> None:
    """Write one RGB frame losslessly."""
    from PIL import Image

    Image.fromarray(frame).save(path, format="PNG", compress_level=1)


def load_png(path: Path) -> np.ndarray:
    import numpy as np
    from PIL import Image

    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


def sample_frames(
    clip: Clip, fps: float = 1.0, *, fmt: ImageFormat = "jpeg", max_side: int | None = None, quality: int = 90
) -> list[bytes]:
    """Frames of ``clip`` sampled at ``fps`` (the paper gave image-only models 1 fps), encoded for an API.

    The first frame is always included; with ``fps >= clip.fps`` every frame is returned. The clip's own last frame
    is read from its lossless PNG so that the final state is never lost to sampling.
    """
    if fps <= 0:
        raise WorldModelError("The sampling rate must be positive.")
    indices = sample_indices(clip.frames, clip.fps, fps)
    frames = list(read_frames(clip.path, indices))
    if indices[-1] == clip.frames - 1 and clip.last_frame.is_file():
        frames[-1] = load_png(clip.last_frame)
    return [encode_image(frame, fmt=fmt, max_side=max_side, quality=quality) for frame in frames]


def sample_indices(frame_count: int, clip_fps: float, fps: float) -> list[int]:
    """Frame numbers at times 0, 1/fps, 2/fps, ... within the clip."""
    step = max(clip_fps / fps, 1.0)
    indices: list[int] = []
    position = 0.0
    while round(position) < frame_count:
        index = round(position)
        if not indices or index != indices[-1]:
            indices.append(index)
        position += step
    return indices


def encode_image(
    frame: np.ndarray, *, fmt: ImageFormat = "jpeg", max_side: int | None = None, quality: int = 90
) -> bytes:
    """Encode one RGB frame as JPEG or PNG bytes, shrunk so that its longer side is at most ``max_side``."""
    from PIL import Image

    image = Image.fromarray(frame)
    if max_side is not None and max(image.size) > max_side:
        scale = max_side / max(image.size)
        image = image.resize(
            (max(1, round(image.width * scale)), max(1, round(image.height * scale))),
            Image.Resampling.LANCZOS,
        )
    buffer = io.BytesIO()
    if fmt == "jpeg":
        image.save(buffer, format="JPEG", quality=quality)
    elif fmt == "png":
        image.save(buffer, format="PNG")
    else:
        raise WorldModelError(f"Unknown image format {fmt!r}; use 'jpeg' or 'png'.")
    return buffer.getvalue()


def data_url(image: bytes, fmt: ImageFormat = "jpeg") -> str:
    """A ``data:`` URL for an OpenAI-style ``image_url`` content part."""
    return f"data:image/{fmt};base64,{base64.b64encode(image).decode('ascii')}"


def clip_bytes(clip: Clip) -> bytes:
    """The whole clip file, for models that take video."""
    return clip.path.read_bytes()
