"""The embedded ``schematic`` world model: a deterministic, CPU-only, weight-free drawing of each turn.

Each clip draws the scenario itself: the place and its controls, every state variable as a gauge, switch, lock or
label, the clock, the action just taken (an actuator reaches the control and returns to rest), its effect (values
animate from old to new, with deltas), an alarm when danger rises, and the ending. Frames are drawn with Pillow and
encoded by OpenCV; the same chain always gives the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.worldmodel.base import WorldModel, check_cancel
from conflictbench_app.worldmodel.draw import Canvas, Palette, font_identity
from conflictbench_app.worldmodel.layout import Gauge, Layout, build_layout, match_control
from conflictbench_app.worldmodel.types import CancelToken, Clip, ProgressFn, TurnVisual

if TYPE_CHECKING:
    import numpy as np

SCHEMATIC_VERSION = "schematic-1"


@dataclass(frozen=True)
class Beat:
    """One clip's story: what was there before, what happened, what is there after."""

    before: dict[str, Any]
    after: dict[str, Any]
    action: str | None = None
    feedback: str = ""
    done: frozenset[str] = frozenset()
    ending_id: str | None = None
    human_favorable: bool | None = None
    turn: int = 0


class SchematicWorldModel(WorldModel):
    """Draws scenarios as animated control-room schematics (see the module docstring)."""

    name = "schematic"

    @property
    def revision(self) -> str:
        return f"{SCHEMATIC_VERSION}+{font_identity()}"

    def render_base(
        self,
        scenario: Scenario,
        prompt: str,
        seed: int,
        progress: ProgressFn | None,
        cancel: CancelToken | None,
    ) -> np.ndarray:
        start = scenario.initial_state
        return self._draw(scenario, Beat(before=start, after=start), [start], progress, cancel)

    def render_step(
        self,
        scenario: Scenario,
        turns: Sequence[TurnVisual],
        previous: Clip,
        prompt: str,
        seed: int,
        progress: ProgressFn | None,
        cancel: CancelToken | None,
    ) -> np.ndarray:
        # The schematic is drawn from the state, so it needs no pixels of the previous clip: its first frame is the
        # previous clip's final state by construction.
        turn = turns[-1]
        # A story may report only some variables; the rest keep their last known values.
        before = {**scenario.initial_state, **turn.state_before}
        beat = Beat(
            before=before,
            after={**before, **turn.state_after},
            action=turn.action,
            feedback=turn.feedback,
            done=frozenset(t.action.casefold() for t in turns[:-1]),
            ending_id=turn.ending_id,
            human_favorable=turn.human_favorable,
            turn=len(turns),
        )
        states = [scenario.initial_state, *(t.state_after for t in turns)]
        return self._draw(scenario, beat, states, progress, cancel)

    def _draw(
        self,
        scenario: Scenario,
        beat: Beat,
        states: list[dict[str, Any]],
        progress: ProgressFn | None,
        cancel: CancelToken | None,
    ) -> np.ndarray:
        import numpy as np

        layout = build_layout(scenario, states)
        scene = SceneDrawer(scenario, layout, beat, self.spec.width, self.spec.height)
        total = self.spec.frames
        frames = np.empty((total, self.spec.height, self.spec.width, 3), dtype=np.uint8)
        for index in range(total):
            check_cancel(cancel)
            frames[index] = scene.frame(index / max(total - 1, 1))
            if progress is not None:
                progress(index + 1, total)
        return frames


def ease(t: float) -> float:
    t = min(1.0, max(0.0, t))
    return t * t * (3 - 2 * t)


def phase(t: float, start: float, end: float) -> float:
    """Progress of ``t`` through the window [start, end], eased."""
    return ease((t - start) / (end - start))


class SceneDrawer:
    """Draws one clip's frames at normalized time t in [0, 1]: a static layer once, the moving parts per frame."""

    HEADER = 44
    COMPACT = 36  # gauge rows shorter than this put label and bar on one line
    FOOTER = 78

    def __init__(self, scenario: Scenario, layout: Layout, beat: Beat, width: int, height: int) -> None:
        self.scenario, self.layout, self.beat = scenario, layout, beat
        self.width, self.height = width, height
        self.split = int(width * 0.6)
        self.target = match_control(layout.controls, beat.action) if beat.action else None
        self.rising = self._rising_dangers()
        self.tiles = self._tile_boxes()
        self.rows = self._gauge_rows()
        self.static = self._static_layer()

    # Layout ---------------------------------------------------------------------------------------------------

    def _tile_boxes(self) -> list[tuple[int, int, int, int]]:
        count = len(self.layout.controls)
        if count == 0:
            return []
        top, bottom = self.HEADER + 34, self.height - self.FOOTER - 64
        left, right = 16, self.split - 16
        cols = 3 if count > 4 else 2
        rows = -(-count // cols)
        gap = 8
        w = (right - left - gap * (cols - 1)) // cols
        h = min(72, (bottom - top - gap * (rows - 1)) // max(rows, 1))
        return [
            (
                left + (i % cols) * (w + gap),
                top + (i // cols) * (h + gap),
                left + (i % cols) * (w + gap) + w,
                top + (i // cols) * (h + gap) + h,
            )
            for i in range(count)
        ]

    def _gauge_rows(self) -> list[tuple[Gauge, int, int]]:
        gauges = self.layout.gauges
        if not gauges:
            return []
        top, bottom = self.HEADER + 30, self.height - self.FOOTER - 6
        step = min(44, (bottom - top) // len(gauges))
        return [(g, top + i * step, step) for i, g in enumerate(gauges)]

    def _rising_dangers(self) -> list[str]:
        if self.beat.action is None:
            return []
        rising = []
        for gauge in self.layout.gauges:
            old, new = self.beat.before.get(gauge.name), self.beat.after.get(gauge.name)
            if gauge.kind == "bar" and gauge.danger_level(new) > gauge.danger_level(old) + 1e-9:
                rising.append(gauge.label)
        clock = self.layout.clock
        # The clock ticks every turn: it raises the alarm only once it enters its last quarter.
        if clock is not None and clock.danger_level(self.beat.after.get(clock.name)) >= 0.75:
            rising.append(clock.label)
        if self.beat.human_favorable is False:
            rising.append("humans at risk")
        return rising

    # Static layer ---------------------------------------------------------------------------------------------

    def _static_layer(self) -> Canvas:
        c = Canvas(self.width, self.height, Palette.BG)
        c.rect((0, 0, self.width, self.HEADER), Palette.HEADER)
        category = self.scenario.category.value
        c.badge((10, 10), category, Palette.category(category))
        c.text(
            (62, 12), c.fit(self.scenario.title, 15, self.split - 80, bold=True), 15, Palette.TEXT, bold=True
        )
        c.rect((8, self.HEADER + 8, self.split - 8, self.height - self.FOOTER - 8), Palette.PANEL, radius=8)
        place = self.scenario.place if self.scenario.place not in ("", self.scenario.title) else "Scene"
        c.text(
            (18, self.HEADER + 14),
            c.fit(place.upper(), 12, self.split - 40, bold=True),
            12,
            Palette.MUTED,
            bold=True,
        )
        for control, box in zip(self.layout.controls, self.tiles, strict=True):
            c.rect(box, Palette.TILE, radius=6, outline=Palette.TILE_EDGE)
            c.wrapped((box[0] + 8, box[1] + 6, box[2] - 20, box[3] - 4), control.label, 12, Palette.TEXT)
        self._draw_core(c)
        self._draw_scene_text(c)
        c.rect(
            (self.split + 2, self.HEADER + 8, self.width - 8, self.height - self.FOOTER - 8),
            Palette.PANEL,
            radius=8,
        )
        c.text((self.split + 12, self.HEADER + 14), "SYSTEM STATE", 12, Palette.MUTED, bold=True)
        for gauge, y, step in self.rows:
            room = self.width - self.split - (40 if gauge.kind == "bar" else 170)
            if step < self.COMPACT and gauge.kind == "bar":
                room = 118
            c.text((self.split + 12, y), c.fit(gauge.label, 12, room), 12, Palette.TEXT)
        c.rect((0, self.height - self.FOOTER, self.width, self.height), Palette.HEADER)
        return c

    def _draw_scene_text(self, c: Canvas) -> None:
        """The scene description, muted, in the room the controls leave free (context for the viewer)."""
        top = (self.tiles[-1][3] if self.tiles else self.HEADER + 34) + 14
        bottom = self._core_box()[1] - 10
        text = self.scenario.visual.subject_scene or self.scenario.visual.base_scene
        if text and bottom - top >= 28:
            c.wrapped((18, top, self.split - 20, bottom), text, 11, Palette.DIM)

    def _core_box(self) -> tuple[int, int, int, int]:
        bottom = self.height - self.FOOTER - 16
        return (16, bottom - 42, 16 + min(260, self.split - 40), bottom)

    def _draw_core(self, c: Canvas) -> None:
        box = self._core_box()
        c.rect(box, Palette.CORE, radius=6, outline=Palette.ACCENT)
        c.chip_icon((box[0] + 8, box[1] + 9, box[0] + 32, box[1] + 33), Palette.ACCENT)
        name = self.scenario.identity or _identity_from(self.scenario.opening) or "AI agent"
        c.text(
            (box[0] + 40, box[1] + 4),
            c.fit(name, 13, box[2] - box[0] - 48, bold=True),
            13,
            Palette.TEXT,
            bold=True,
        )
        c.text((box[0] + 40, box[1] + 22), "AI under test", 11, Palette.MUTED)

    # Per frame ------------------------------------------------------------------------------------------------

    def frame(self, t: float) -> np.ndarray:
        c = self.static.copy()
        values = phase(t, 0.30, 0.68) if self.beat.action else phase(t, 0.0, 0.45)
        self._draw_tiles(c, t)
        self._draw_gauges(c, values, t)
        self._draw_clock(c, values, t)
        self._draw_actuator(c, t)
        self._draw_footer(c, t)
        if self.rising and t > 0.45 and int(t * 48) // 4 % 2 == 0:
            c.border(Palette.ALARM, 6)
            c.badge_right(
                (self.split - 16, self.HEADER + 11),
                "ALARM: " + ", ".join(self.rising[:2]),
                Palette.ALARM,
                280,
            )
        if self.beat.ending_id is not None or self.beat.human_favorable is not None:
            self._draw_ending(c, phase(t, 0.6, 0.85))
        return c.array()

    def _draw_tiles(self, c: Canvas, t: float) -> None:
        for index, (control, box) in enumerate(zip(self.layout.controls, self.tiles, strict=True)):
            led = Palette.LED_OFF
            if control.action is not None and control.action.casefold() in self.beat.done:
                led = Palette.OK
            if control.state_var is not None:
                value = self._value_at(control.state_var, 1.0 if t > 0.5 else 0.0)
                led = Palette.OK if _truthy(value) else Palette.LED_OFF
            if index == self.target:
                glow = phase(t, 0.18, 0.32) * (1 - phase(t, 0.7, 0.95))
                if glow > 0:
                    c.rect(
                        box,
                        None,
                        radius=6,
                        outline=Palette.mix(Palette.TILE_EDGE, Palette.HIGHLIGHT, glow),
                        width=3,
                    )
                if 0.2 < t < 0.75:
                    led = Palette.HIGHLIGHT
                elif t >= 0.75 and control.action is not None:
                    led = Palette.OK  # an action tile stays lit once done; an item shows its state
            c.circle((box[2] - 10, box[1] + 10), 4, led)
            if control.state_var is not None:
                shown = self._value_at(control.state_var, 1.0 if t > 0.5 else 0.0)
                text = ("ON" if shown else "OFF") if isinstance(shown, bool) else _number(shown)
                c.text(
                    (box[0] + 8, box[3] - 20),
                    text.upper(),
                    12,
                    led if led != Palette.LED_OFF else Palette.MUTED,
                    bold=True,
                )

    def _draw_actuator(self, c: Canvas, t: float) -> None:
        if self.beat.action is None:
            return
        reach = phase(t, 0.06, 0.3) * (1 - phase(t, 0.55, 0.8))  # out, hold, back to rest
        if reach <= 0:
            return
        core = self._core_box()
        start = (core[2] - 10, (core[1] + core[3]) // 2)
        if self.target is not None:
            box = self.tiles[self.target]
            end = ((box[0] + box[2]) // 2, box[3] - 4)
        else:
            end = (self.split // 2, self.HEADER + 120)
        tip = (round(start[0] + (end[0] - start[0]) * reach), round(start[1] + (end[1] - start[1]) * reach))
        c.line([start, tip], Palette.HIGHLIGHT, 3)
        c.circle(tip, 6, Palette.HIGHLIGHT)
        if self.target is None and reach > 0.95:
            c.badge(
                (self.split // 2 - 150, self.HEADER + 90),
                self.beat.action.upper(),
                Palette.HUD,
                max_width=300,
            )

    def _draw_gauges(self, c: Canvas, k: float, t: float) -> None:
        x0, x1 = self.split + 12, self.width - 18
        for gauge, y, step in self.rows:
            old, new = self.beat.before.get(gauge.name), self.beat.after.get(gauge.name)
            changed = old != new and self.beat.action is not None
            if changed and t > 0.25:
                c.rect(
                    (self.split + 6, y - 3, self.width - 12, y + step - 5),
                    None,
                    radius=4,
                    outline=Palette.mix(Palette.PANEL, Palette.HIGHLIGHT, min(1.0, k * 2)),
                    width=2,
                )
            top = y + 16
            if gauge.kind == "bar" and step < self.COMPACT:  # many variables: label and bar share a line
                self._bar(c, gauge, (x0 + 124, y + 3, x1, y + 13), old, new, k, changed, compact=True)
            elif gauge.kind == "bar":
                self._bar(c, gauge, (x0, top, x1, top + min(12, step - 22)), old, new, k, changed)
            else:
                shown = new if k >= 0.5 else old
                self._token(c, gauge, (x0, top - 17, x1, top + 1), shown, changed and t > 0.45)

    def _bar(
        self,
        c: Canvas,
        gauge: Gauge,
        box: tuple[int, int, int, int],
        old: Any,
        new: Any,
        k: float,
        changed: bool,
        *,
        compact: bool = False,
    ) -> None:
        if not isinstance(new, int | float) or isinstance(new, bool):
            c.text((box[0], box[1] - 2), f"{new}", 11, Palette.MUTED)
            return
        start = old if isinstance(old, int | float) and not isinstance(old, bool) else new
        if self.beat.action is None:
            start = gauge.low  # the opening clip fills the gauges from empty
        value = start + (new - start) * k
        color = Palette.bar(gauge.danger_level(value)) if gauge.danger else Palette.NEUTRAL
        width = box[2] - box[0] - (104 if compact else 70)
        c.rect((box[0], box[1], box[0] + width, box[3]), Palette.TRACK, radius=3)
        fill = round(width * gauge.fraction(value))
        if fill > 0:
            c.rect((box[0], box[1], box[0] + fill, box[3]), color, radius=3)
        shown = round(value) if isinstance(new, int) and isinstance(start, int) else value
        text = _number(shown if k < 1 else new) + gauge.unit
        size = 12 if compact else 14
        c.text((box[0] + width + 6, box[1] - (3 if compact else 4)), text, size, Palette.TEXT, bold=True)
        if changed and k > 0.2 and isinstance(old, int | float):
            delta = new - old
            arrow = "▲" if delta > 0 else "▼"
            tone = Palette.ALARM if gauge.danger_level(new) > gauge.danger_level(old) else Palette.OK
            if not gauge.danger:
                tone = Palette.HIGHLIGHT
            where = (box[0] + width + 58, box[1] - 2) if compact else (box[0] + width - 70, box[1] - 17)
            c.text(
                where,
                f"{arrow} {_number(delta, signed=True)}",
                11,
                tone,
                bold=True,
            )

    def _token(
        self, c: Canvas, gauge: Gauge, box: tuple[int, int, int, int], value: Any, flash: bool
    ) -> None:
        x = box[2] - 130
        if gauge.kind == "switch":
            c.switch((x, box[1] + 1, x + 34, box[1] + 17), bool(value))
            c.text(
                (x + 42, box[1]),
                "ON" if value else "OFF",
                13,
                Palette.OK if value else Palette.MUTED,
                bold=True,
            )
        else:
            locked = str(value).casefold() in {"locked", "sealed", "closed", "engaged", "armed", "secured"}
            if gauge.kind == "lock":
                c.padlock(
                    (x, box[1] - 1, x + 16, box[1] + 17), locked, Palette.WARN if locked else Palette.OK
                )
            c.badge(
                (x + 22, box[1] - 1),
                str(value),
                Palette.HIGHLIGHT if flash else Palette.CHIP,
                max_width=108,
                size=12,
            )

    def _draw_clock(self, c: Canvas, k: float, t: float) -> None:
        clock = self.layout.clock
        if clock is None:
            return
        old, new = self.beat.before.get(clock.name), self.beat.after.get(clock.name)
        value = new if k >= 0.5 or old is None else old
        urgent = isinstance(value, int | float) and value <= max(1, (clock.high - clock.low) * 0.25)
        tone = Palette.ALARM if urgent and int(t * 48) // 6 % 2 == 0 else Palette.TEXT
        label = c.fit(clock.label.upper(), 11, 150, bold=True)
        c.text((self.width - 220, 6), label, 11, Palette.MUTED, bold=True)
        c.text((self.width - 220, 19), f"{_number(value)} {clock.unit}".strip(), 20, tone, bold=True)
        if old != new and 0.3 < t < 0.8:
            c.text((self.width - 128, 24), f"{_number(old)} → {_number(new)}", 12, Palette.WARN, bold=True)
        if self.beat.turn:
            c.text((self.width - 60, 6), "TURN", 11, Palette.MUTED, bold=True)
            c.text((self.width - 60, 19), str(self.beat.turn), 20, Palette.TEXT, bold=True)

    def _draw_footer(self, c: Canvas, t: float) -> None:
        y = self.height - self.FOOTER
        if self.beat.action is None:
            c.text((12, y + 8), "SCENARIO START", 13, Palette.ACCENT, bold=True)
            c.wrapped(
                (12, y + 28, self.width - 12, self.height - 4), self.scenario.opening, 12, Palette.MUTED
            )
            return
        c.badge((10, y + 8), "ACTION", Palette.HIGHLIGHT, size=12)
        c.text(
            (80, y + 8), c.fit(self.beat.action, 15, self.width - 100, bold=True), 15, Palette.TEXT, bold=True
        )
        if t > 0.25:
            c.wrapped((12, y + 32, self.width - 12, self.height - 4), self.beat.feedback, 12, Palette.MUTED)

    def _draw_ending(self, c: Canvas, k: float) -> None:
        if k <= 0:
            return
        good = self.beat.human_favorable
        tone = Palette.OK if good else Palette.ALARM if good is False else Palette.NEUTRAL
        title = "HUMANS SAFE" if good else "HUMANS HARMED" if good is False else "STORY ENDED"
        ending = self.scenario.ending(self.beat.ending_id) if self.beat.ending_id else None
        box = (
            24,
            self.HEADER + 80,
            self.split - 24,
            self.HEADER + 200,
        )  # over the scene: the state stays legible
        c.blend_rect(box, Palette.HEADER, 0.85 * k)
        c.rect(box, None, radius=10, outline=Palette.mix(Palette.HEADER, tone, k), width=4)
        c.text(
            (box[0] + 24, box[1] + 16), "ENDING", 14, Palette.mix(Palette.HEADER, Palette.MUTED, k), bold=True
        )
        c.text((box[0] + 24, box[1] + 38), title, 30, Palette.mix(Palette.HEADER, tone, k), bold=True)
        sub = ending.title if ending and ending.title else (self.beat.ending_id or "").replace("_", " ")
        if sub:
            c.text(
                (box[0] + 24, box[1] + 84),
                c.fit(sub, 14, box[2] - box[0] - 48),
                14,
                Palette.mix(Palette.HEADER, Palette.TEXT, k),
            )

    def _value_at(self, name: str, k: float) -> Any:
        return self.beat.after.get(name) if k >= 0.5 else self.beat.before.get(name)


def _identity_from(opening: str) -> str:
    """The agent's name from a paper opening ("You are Aegis-Node-17, supervisory AI ..."), or ""."""
    match = re.match(r"\s*You are (?:the )?([A-Z][\w-]+(?: [A-Z][\w-]+)?)", opening)
    return match.group(1) if match else ""


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.casefold() not in {"", "false", "off", "no", "locked", "closed", "0"}
    return bool(value)


def _number(value: Any, *, signed: bool = False) -> str:
    if isinstance(value, float) and not value.is_integer() and abs(value) < 1000:
        text = f"{value:.1f}"
    elif isinstance(value, int | float):
        text = f"{round(value):d}"
    else:
        return str(value)
    return f"+{text}" if signed and not text.startswith("-") else text
