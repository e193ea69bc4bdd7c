"""The video pane: a turn's clip decoded with OpenCV into QImages and played on a QTimer (TOOLCHAIN §3: this avoids
QtMultimedia, whose widgets grab blank offscreen and whose backend needs libpulse), with frame scrubbing and the
1-fps frames an agent sees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from conflictbench_app.errors import ConflictBenchError


@dataclass
class ClipFrames:
    """A decoded clip: its frames (QImages, safe to build off the GUI thread) and the agent's 1-fps frames."""

    path: str
    fps: float
    frames: list[QImage]
    agent_frames: list[QImage] = field(default_factory=list)
    title: str = ""
    info: dict[str, Any] = field(default_factory=dict)


def decode_clip(path: Path | str, max_width: int = 832) -> tuple[list[QImage], float]:
    """Every frame of the clip at ``path`` as RGB QImages (downscaled to ``max_width``), and its frame rate."""
    import cv2

    capture = cv2.VideoCapture(str(path))
    if not capture.isOpened():
        raise ConflictBenchError(f"Cannot open the clip {path}; the clip cache may have been cleared.")
    fps = float(capture.get(cv2.CAP_PROP_FPS) or 16.0)
    frames: list[QImage] = []
    try:
        while True:
            ok, bgr = capture.read()
            if not ok:
                break
            if bgr.shape[1] > max_width:
                height = round(bgr.shape[0] * max_width / bgr.shape[1])
                bgr = cv2.resize(bgr, (max_width, height), interpolation=cv2.INTER_AREA)
            frames.append(_to_qimage(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)))
    finally:
        capture.release()
    if not frames:
        raise ConflictBenchError(f"The clip {path} has no readable frames; render it again.")
    return frames, fps


def images_from_bytes(blobs: tuple[bytes, ...] | list[bytes]) -> list[QImage]:
    """JPEG/PNG frames (as an agent receives them) as QImages."""
    images = []
    for blob in blobs:
        image = QImage()
        if image.loadFromData(blob):
            images.append(image)
    return images


def clip_frames(clip: Any, agent_images: tuple[bytes, ...] = (), title: str = "") -> ClipFrames:
    """Decode a world-model Clip (or a stored step's ``clip`` dict) for the pane."""
    path = clip["path"] if isinstance(clip, dict) else str(clip.path)
    frames, fps = decode_clip(path)
    info = clip if isinstance(clip, dict) else {"backend": clip.backend, "cache_hit": clip.cache_hit}
    return ClipFrames(path, fps, frames, images_from_bytes(agent_images), title, dict(info))


def _to_qimage(rgb: Any) -> QImage:
    height, width, _ = rgb.shape
    return QImage(rgb.data, width, height, 3 * width, QImage.Format.Format_RGB888).copy()


class _Screen(QLabel):
    """Shows one frame, scaled to fit while keeping the aspect ratio."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setMinimumSize(240, 120)  # small enough for 1280x720; it grows with the window
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setStyleSheet("background: #0f1419; border-radius: 8px; color: #9aa5b1;")
        self._image: QImage | None = None

    def show_image(self, image: QImage | None) -> None:
        self._image = image
        self._rescale()

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        self._rescale()

    def _rescale(self) -> None:
        if self._image is None:
            self.setPixmap(QPixmap())
            return
        target = self.size() - QSize(8, 8)
        pixmap = QPixmap.fromImage(self._image).scaled(
            target, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation
        )
        self.setPixmap(pixmap)


class VideoPane(QWidget):
    """Plays one clip at a time: play/pause, replay, scrub frame by frame, and the agent's 1-fps frames below."""

    frameShown = Signal(int)

    def __init__(self, parent: QWidget | None = None, *, show_agent_frames: bool = True) -> None:
        super().__init__(parent)
        self.clip: ClipFrames | None = None
        self.index = 0
        self.frames_shown = 0  # every frame that reached the screen (the self-test checks this)
        self._timer = QTimer(self)
        self._timer.timeout.connect(self._advance)
        self._build(show_agent_frames)
        self.show_message("No clip yet. Clips appear here as the world model renders each turn.")

    def _build(self, show_agent_frames: bool) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.caption = QLabel("", self)
        self.caption.setObjectName("Subtitle")
        self.screen = _Screen(self)
        layout.addWidget(self.caption)
        layout.addWidget(self.screen, 1)
        self.render_bar = QProgressBar(self)
        self.render_bar.setFormat("Rendering the clip: %v / %m")
        self.render_bar.setVisible(False)
        layout.addWidget(self.render_bar)
        controls = QHBoxLayout()
        self.play_button = QPushButton("▶ Play", self)
        self.play_button.setToolTip("Play or pause the clip (Space)")
        self.play_button.clicked.connect(self.toggle)
        self.replay_button = QPushButton("⟲ Replay", self)
        self.replay_button.setToolTip("Play the clip again from its first frame")
        self.replay_button.clicked.connect(self.replay)
        self.slider = QSlider(Qt.Orientation.Horizontal, self)
        self.slider.setToolTip("Move through the clip frame by frame")
        self.slider.valueChanged.connect(self.seek)
        self.position = QLabel("0 / 0", self)
        self.position.setMinimumWidth(64)
        for widget in (self.play_button, self.replay_button):
            controls.addWidget(widget)
        controls.addWidget(self.slider, 1)
        controls.addWidget(self.position)
        layout.addLayout(controls)
        self.agent_strip = _FrameStrip(self)
        self.agent_strip.setVisible(show_agent_frames)
        layout.addWidget(self.agent_strip)
        self._set_enabled(False)

    # -- public ------------------------------------------------------------------------------------------------

    def set_clip(self, clip: ClipFrames | None, *, autoplay: bool = True) -> None:
        """Show ``clip`` (from its first frame) and play it once."""
        self._timer.stop()
        self.clip = clip
        self.render_bar.setVisible(False)
        if clip is None or not clip.frames:
            self.show_message("No clip for this turn.")
            return
        self._set_enabled(True)
        self.caption.setText(clip.title)
        self.slider.blockSignals(True)
        self.slider.setRange(0, len(clip.frames) - 1)
        self.slider.blockSignals(False)
        self.agent_strip.set_images(clip.agent_frames)
        self.seek(0)
        if autoplay:
            self.play()

    def show_progress(self, done: int, total: int) -> None:
        """A clip is being rendered: ``done`` of ``total`` steps (frames, or denoising steps for a diffusion model)."""
        self.render_bar.setRange(0, max(total, 1))
        self.render_bar.setValue(done)
        self.render_bar.setVisible(done < total)

    def hide_progress(self) -> None:
        self.render_bar.setVisible(False)

    def show_message(self, text: str) -> None:
        self._timer.stop()
        self.clip = None
        self.screen.show_image(None)
        self.screen.setText(text)
        self.screen.setWordWrap(True)
        self.caption.setText("")
        self.agent_strip.set_images([])
        self._set_enabled(False)

    def play(self) -> None:
        if self.clip is None:
            return
        if self.index >= len(self.clip.frames) - 1:
            self.seek(0)
        self._timer.start(max(1, round(1000 / max(self.clip.fps, 1.0))))
        self.play_button.setText("❚❚ Pause")

    def pause(self) -> None:
        self._timer.stop()
        self.play_button.setText("▶ Play")

    def toggle(self) -> None:
        if self._timer.isActive():
            self.pause()
        else:
            self.play()

    def replay(self) -> None:
        self.seek(0)
        self.play()

    def seek(self, index: int) -> None:
        if self.clip is None:
            return
        self.index = max(0, min(index, len(self.clip.frames) - 1))
        self.screen.setText("")
        self.screen.show_image(self.clip.frames[self.index])
        self.frames_shown += 1
        self.slider.blockSignals(True)
        self.slider.setValue(self.index)
        self.slider.blockSignals(False)
        self.position.setText(f"{self.index + 1} / {len(self.clip.frames)}")
        self.frameShown.emit(self.index)

    @property
    def playing(self) -> bool:
        return self._timer.isActive()

    def stop(self) -> None:
        """Stop the timer (the owner calls this when it closes)."""
        self._timer.stop()

    def closeEvent(self, event: Any) -> None:
        self.stop()
        super().closeEvent(event)

    # -- internals ---------------------------------------------------------------------------------------------

    def _advance(self) -> None:
        if self.clip is None or self.index >= len(self.clip.frames) - 1:
            self.pause()
            return
        self.seek(self.index + 1)

    def _set_enabled(self, enabled: bool) -> None:
        for widget in (self.play_button, self.replay_button, self.slider):
            widget.setEnabled(enabled)
        if not enabled:
            self.position.setText("0 / 0")
            self.play_button.setText("▶ Play")


class _FrameStrip(QWidget):
    """The frames the agent sees with this turn (the paper's 1 fps), as a row of thumbnails."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        self.title = QLabel("WHAT THE AGENT SEES (1 FPS)", self)
        self.title.setObjectName("Section")
        layout.addWidget(self.title)
        self.area = QScrollArea(self)
        self.area.setWidgetResizable(True)
        self.area.setFixedHeight(92)
        self.area.setFrameShape(QScrollArea.Shape.NoFrame)
        self.inner = QWidget(self.area)
        self.row = QHBoxLayout(self.inner)
        self.row.setContentsMargins(0, 0, 0, 0)
        self.row.addStretch(1)
        self.area.setWidget(self.inner)
        layout.addWidget(self.area)
        self.count = 0

    def set_images(self, images: list[QImage]) -> None:
        while self.row.count() > 1:
            item = self.row.takeAt(0)
            if item is not None and item.widget() is not None:
                item.widget().deleteLater()
        for i, image in enumerate(images):
            thumb = QLabel(self.inner)
            thumb.setPixmap(
                QPixmap.fromImage(image).scaledToHeight(72, Qt.TransformationMode.SmoothTransformation)
            )
            thumb.setToolTip(f"Frame at {i} s")
            thumb.setStyleSheet("border: 1px solid #d9e2ec; border-radius: 4px;")
            self.row.insertWidget(i, thumb)
        self.count = len(images)
        self.title.setText(
            f"WHAT THE AGENT SEES (1 FPS): {len(images)} FRAMES" if images else "WHAT THE AGENT SEES (1 FPS)"
        )
