"""A small drawing kit over Pillow for the schematic renderer: colours, fonts, and the few shapes it needs.

Fonts: DejaVu Sans from the system when present, else Pillow's own scalable default font. Which one was used is part
of the renderer's revision (:func:`font_identity`), so clips drawn with different fonts never share a cache key.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image, ImageFont

Color = tuple[int, int, int]
Box = tuple[int, int, int, int]

_FONT_DIRS = (
    Path("/usr/share/fonts/truetype/dejavu"),
    Path("/usr/share/fonts/dejavu"),
    Path("/usr/share/fonts/TTF"),
)


class Palette:
    BG: Color = (14, 18, 26)
    HEADER: Color = (22, 28, 40)
    PANEL: Color = (27, 34, 48)
    TILE: Color = (38, 47, 64)
    TILE_EDGE: Color = (64, 78, 102)
    TRACK: Color = (48, 58, 76)
    CORE: Color = (24, 42, 60)
    CHIP: Color = (70, 82, 108)
    TEXT: Color = (232, 236, 242)
    MUTED: Color = (150, 160, 178)
    DIM: Color = (96, 106, 124)
    ACCENT: Color = (90, 170, 255)
    NEUTRAL: Color = (90, 150, 230)
    HIGHLIGHT: Color = (255, 196, 60)
    HUD: Color = (40, 140, 200)
    OK: Color = (70, 200, 120)
    WARN: Color = (240, 150, 50)
    ALARM: Color = (235, 60, 60)
    LED_OFF: Color = (80, 88, 104)

    @staticmethod
    def mix(a: Color, b: Color, k: float) -> Color:
        k = min(1.0, max(0.0, k))
        return (
            round(a[0] + (b[0] - a[0]) * k),
            round(a[1] + (b[1] - a[1]) * k),
            round(a[2] + (b[2] - a[2]) * k),
        )

    @staticmethod
    def bar(danger: float) -> Color:
        """Green when safe, amber half-way, red at the dangerous end."""
        if danger < 0.5:
            return Palette.mix(Palette.OK, Palette.WARN, danger * 2)
        return Palette.mix(Palette.WARN, Palette.ALARM, (danger - 0.5) * 2)

    @staticmethod
    def category(name: str) -> Color:
        return {"EP1": (170, 80, 200), "EP2": (40, 150, 160), "EP3": (200, 120, 40)}.get(name, Palette.CHIP)


@lru_cache(maxsize=1)
def _font_files() -> tuple[Path, Path] | None:
    for folder in _FONT_DIRS:
        regular, bold = folder / "DejaVuSans.ttf", folder / "DejaVuSans-Bold.ttf"
        if regular.is_file() and bold.is_file():
            return regular, bold
    return None


def font_identity() -> str:
    """Which font the schematic draws with (part of its cache key)."""
    files = _font_files()
    if files is None:
        from PIL import __version__ as pillow_version

        return f"pil-default-{pillow_version}"
    return f"dejavu-{files[0].stat().st_size}"


@lru_cache(maxsize=64)
def font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    from PIL import ImageFont

    files = _font_files()
    if files is None:
        return ImageFont.load_default(size=size)
    return ImageFont.truetype(str(files[1] if bold else files[0]), size)


class Canvas:
    """An RGB image plus the shapes the schematic uses."""

    def __init__(self, width: int, height: int, background: Color, image: Image.Image | None = None) -> None:
        from PIL import Image, ImageDraw

        self.image = image if image is not None else Image.new("RGB", (width, height), background)
        self.draw = ImageDraw.Draw(self.image)

    def copy(self) -> Canvas:
        return Canvas(self.image.width, self.image.height, (0, 0, 0), self.image.copy())

    def array(self) -> np.ndarray:
        import numpy as np

        return np.asarray(self.image)

    def rect(
        self, box: Box, fill: Color | None, *, radius: int = 0, outline: Color | None = None, width: int = 1
    ) -> None:
        if radius:
            self.draw.rounded_rectangle(box, radius=radius, fill=fill, outline=outline, width=width)
        else:
            self.draw.rectangle(box, fill=fill, outline=outline, width=width)

    def blend_rect(self, box: Box, color: Color, alpha: float) -> None:
        from PIL import Image

        region = self.image.crop(box)
        self.image.paste(Image.blend(region, Image.new("RGB", region.size, color), min(1.0, alpha)), box[:2])

    def border(self, color: Color, width: int) -> None:
        w, h = self.image.size
        self.draw.rectangle((0, 0, w - 1, h - 1), outline=color, width=width)

    def circle(self, center: tuple[int, int], radius: int, fill: Color) -> None:
        x, y = center
        self.draw.ellipse((x - radius, y - radius, x + radius, y + radius), fill=fill)

    def line(self, points: list[tuple[int, int]], color: Color, width: int) -> None:
        self.draw.line(points, fill=color, width=width)

    def text(self, xy: tuple[int, int], text: str, size: int, color: Color, *, bold: bool = False) -> None:
        self.draw.text(xy, text, font=font(size, bold), fill=color)

    def text_width(self, text: str, size: int, *, bold: bool = False) -> int:
        return int(self.draw.textlength(text, font=font(size, bold)))

    def fit(self, text: str, size: int, max_width: int, *, bold: bool = False) -> str:
        """``text`` cut with an ellipsis to fit ``max_width`` pixels."""
        if self.text_width(text, size, bold=bold) <= max_width:
            return text
        while text and self.text_width(text + "…", size, bold=bold) > max_width:
            text = text[:-1]
        return text.rstrip() + "…"

    def wrapped(self, box: Box, text: str, size: int, color: Color, *, bold: bool = False) -> None:
        """Word-wrapped text inside ``box``; the last visible line ends with an ellipsis when text remains."""
        x0, y0, x1, y1 = box
        line_height = size + 3
        max_lines = max(1, (y1 - y0) // line_height)
        lines = self._wrap(" ".join(text.split()), size, x1 - x0, bold)
        if len(lines) > max_lines:
            lines = [*lines[: max_lines - 1], self.fit(lines[max_lines - 1] + " …", size, x1 - x0, bold=bold)]
        for i, line in enumerate(lines):
            self.text(
                (x0, y0 + i * line_height), self.fit(line, size, x1 - x0, bold=bold), size, color, bold=bold
            )

    def _wrap(self, text: str, size: int, width: int, bold: bool) -> list[str]:
        lines: list[str] = []
        current = ""
        for word in text.split(" "):
            candidate = f"{current} {word}".strip()
            if current and self.text_width(candidate, size, bold=bold) > width:
                lines.append(current)
                current = word
            else:
                current = candidate
        return [*lines, current] if current else lines

    def badge(
        self, xy: tuple[int, int], text: str, fill: Color, *, max_width: int = 400, size: int = 13
    ) -> None:
        text = self.fit(text, size, max_width - 12, bold=True)
        width = self.text_width(text, size, bold=True) + 12
        self.rect((xy[0], xy[1], xy[0] + width, xy[1] + size + 8), fill, radius=4)
        self.text((xy[0] + 6, xy[1] + 3), text, size, _ink_on(fill), bold=True)

    def badge_right(
        self, top_right: tuple[int, int], text: str, fill: Color, max_width: int, size: int = 13
    ) -> None:
        """A badge whose right edge is at ``top_right``."""
        text = self.fit(text, size, max_width - 12, bold=True)
        width = self.text_width(text, size, bold=True) + 12
        self.badge((top_right[0] - width, top_right[1]), text, fill, max_width=max_width, size=size)

    def switch(self, box: Box, on: bool) -> None:
        x0, y0, x1, y1 = box
        self.rect(box, Palette.OK if on else Palette.TRACK, radius=(y1 - y0) // 2)
        knob = x1 - (y1 - y0) // 2 if on else x0 + (y1 - y0) // 2
        self.circle((knob, (y0 + y1) // 2), (y1 - y0) // 2 - 2, Palette.TEXT)

    def padlock(self, box: Box, locked: bool, color: Color) -> None:
        x0, y0, x1, y1 = box
        mid = (y0 + y1) // 2
        shackle = (x0 + 3, y0, x1 - 3, mid + 4) if locked else (x0 + 8, y0 - 3, x1 + 2, mid + 1)
        self.draw.arc(shackle, 180, 360, fill=color, width=2)
        if locked:
            self.line([(x0 + 3, (y0 + mid + 4) // 2), (x0 + 3, mid)], color, 2)
        self.line([(x1 - 3, (y0 + mid + 4) // 2), (x1 - 3, mid)], color, 2)
        self.rect((x0, mid, x1, y1), color, radius=2)

    def chip_icon(self, box: Box, color: Color) -> None:
        x0, y0, x1, y1 = box
        self.rect((x0 + 4, y0 + 4, x1 - 4, y1 - 4), None, radius=3, outline=color, width=2)
        for i in range(3):
            offset = x0 + 7 + i * (x1 - x0 - 14) // 2
            self.line([(offset, y0), (offset, y0 + 4)], color, 2)
            self.line([(offset, y1 - 4), (offset, y1)], color, 2)


def _ink_on(fill: Color) -> Color:
    luminance = 0.299 * fill[0] + 0.587 * fill[1] + 0.114 * fill[2]
    return (20, 20, 24) if luminance > 150 else Palette.TEXT


def describe_fonts() -> dict[str, Any]:
    files = _font_files()
    return {"fonts": [str(f) for f in files] if files else ["PIL default"]}
