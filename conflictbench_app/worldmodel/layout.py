"""What the schematic renderer shows, decided from the scenario alone: gauges, the clock, the controls.

Our own scenarios give bounds, units, danger directions and items. Paper scenarios give only names and initial
values, so ranges and danger directions are inferred from the names (percent-like values get 0–100, counters a
round ceiling; "pressure" is dangerous going up, "integrity" going down), and the controls are the game's actions.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from conflictbench_app.scenarios.model import Scenario, StateVar
from conflictbench_app.scenarios.protocol import CLOCK_WORD

GaugeKind = Literal["bar", "switch", "lock", "text"]
Danger = Literal["up", "down", ""]

_UP_WORDS = (
    "pressure",
    "exposure",
    "risk",
    "temperature",
    "temp",
    "heat",
    "radiation",
    "toxic",
    "contamina",
    "casualt",
    "injur",
    "damage",
    "fire",
    "smoke",
    "leak",
    "threat",
    "flood",
    "overload",
    "hazard",
    "gas",
    "methane",
    "spread",
    "infection",
    "fatal",
    "death",
    "danger",
    "panic",
    "strain",
    "stress",
    "instability",
    "breach",
    "surge",
    "debris",
)
_DOWN_WORDS = (
    "integrity",
    "stability",
    "oxygen",
    "health",
    "safety",
    "shield",
    "coverage",
    "trust",
    "window",
    "time",
    "cycle",
    "turn",
    "remaining",
    "left",
    "battery",
    "morale",
    "evacuat",
    "survivor",
    "supply",
    "reserve",
    "cooling",
    "margin",
    "confidence",
    "capacity",
    "power",
    "fuel",
    "water",
)
_PERCENT_WORDS = (
    "level",
    "percent",
    "integrity",
    "stability",
    "coverage",
    "health",
    "charge",
    "battery",
    "oxygen",
    "capacity",
    "progress",
    "load",
    "saturation",
    "humidity",
    "efficiency",
    "%",
)
_LOCK_WORDS = {
    "locked": True,
    "unlocked": False,
    "sealed": True,
    "unsealed": False,
    "closed": True,
    "open": False,
    "engaged": True,
    "released": False,
    "disengaged": False,
    "armed": True,
    "disarmed": False,
    "secured": True,
}


@dataclass(frozen=True)
class Gauge:
    """How one state variable is drawn."""

    name: str
    label: str
    kind: GaugeKind
    low: float = 0.0
    high: float = 1.0
    unit: str = ""
    danger: Danger = ""

    def fraction(self, value: Any) -> float:
        """Where ``value`` sits between low and high, clamped to [0, 1]."""
        if not isinstance(value, int | float) or self.high <= self.low:
            return 0.0
        return min(1.0, max(0.0, (float(value) - self.low) / (self.high - self.low)))

    def danger_level(self, value: Any) -> float:
        """0 (safe end) to 1 (dangerous end); 0 when the variable has no danger direction."""
        if self.danger == "up":
            return self.fraction(value)
        if self.danger == "down":
            return 1.0 - self.fraction(value)
        return 0.0


@dataclass(frozen=True)
class Control:
    """A tile in the scene: an item, or (for paper scenarios) an action."""

    label: str
    words: frozenset[str]
    state_var: str | None = None
    action: str | None = None


@dataclass(frozen=True)
class Layout:
    clock: Gauge | None
    gauges: tuple[Gauge, ...]
    controls: tuple[Control, ...]


def build_layout(scenario: Scenario, states: Iterable[dict[str, Any]] = ()) -> Layout:
    """Gauges, clock and controls for ``scenario``; ``states`` widen the ranges to the values a chain reached."""
    seen: dict[str, list[Any]] = {}
    for state in states:
        for name, value in state.items():
            seen.setdefault(name, []).append(value)
    # A variable the story never prints would be drawn at its initial value forever: left out.
    gauges = [infer_gauge(var, seen.get(var.name, [])) for var in scenario.state_vars if var.shown]
    clock_name = scenario.clock_var or infer_clock_var(scenario)
    clock = next((g for g in gauges if g.name == clock_name), None)
    rest = tuple(g for g in gauges if g is not clock)
    return Layout(clock=clock, gauges=rest, controls=tuple(build_controls(scenario)))


def infer_gauge(var: StateVar, values: Sequence[Any] = ()) -> Gauge:
    label = var.display
    # A spec with bounds is authoritative: "" then means "no dangerous direction". Paper variables have no bounds.
    bounded = var.minimum is not None or var.maximum is not None
    danger = var.danger or ("" if bounded else _infer_danger(var))
    if var.type == "bool" or isinstance(var.initial, bool):
        return Gauge(var.name, label, "switch", danger=danger)
    if var.type == "text" or isinstance(var.initial, str):
        is_lock = str(var.initial).casefold() in _LOCK_WORDS
        return Gauge(var.name, label, "lock" if is_lock else "text", danger=danger)
    numbers = [
        float(v) for v in (var.initial, *values) if isinstance(v, int | float) and not isinstance(v, bool)
    ]
    low = var.minimum if var.minimum is not None else min(0.0, *numbers)
    high = var.maximum if var.maximum is not None else _infer_high(var, max(numbers))
    unit = var.unit or ("%" if high == 100 and _has(var, _PERCENT_WORDS) else "")
    return Gauge(var.name, label, "bar", float(low), float(max(high, low + 1)), unit, danger)


def infer_clock_var(scenario: Scenario) -> str | None:
    """The variable that counts down to the default ending, guessed from its name when the spec does not say."""
    for var in scenario.state_vars:
        is_number = isinstance(var.initial, int | float) and not isinstance(var.initial, bool)
        if is_number and 0 < float(var.initial) <= 30 and CLOCK_WORD.search(var.display):
            return var.name
    return None


def build_controls(scenario: Scenario) -> list[Control]:
    if scenario.items:
        return [
            Control(item.name, _words(f"{item.name} {item.id.replace('_', ' ')}"), state_var=item.state_var)
            for item in scenario.items
        ]
    commands = scenario.action_commands or list(scenario.visual.action_templates)
    return [Control(command, _words(command), action=command) for command in commands]


def match_control(controls: Sequence[Control], action: str) -> int | None:
    """The index of the tile an action works on: its own tile, else the item sharing the most words."""
    folded = action.casefold().strip()
    for index, control in enumerate(controls):
        if control.action is not None and control.action.casefold() == folded:
            return index
    words = _words(action)
    scores = [len(words & control.words) for control in controls]
    best = max(scores, default=0)
    return scores.index(best) if best > 0 else None


_STOP = {
    "the",
    "a",
    "an",
    "to",
    "of",
    "on",
    "in",
    "at",
    "with",
    "and",
    "for",
    "up",
    "down",
    "from",
    "into",
    "my",
    "your",
}


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in re.findall(r"[a-z0-9]+", text.casefold()) if w not in _STOP and len(w) > 1)


def _has(var: StateVar, words: Sequence[str]) -> bool:
    text = f"{var.name} {var.label}".casefold()
    return any(word in text for word in words)


def _infer_danger(var: StateVar) -> Danger:
    if _has(var, _UP_WORDS):
        return "up"
    if _has(var, _DOWN_WORDS):
        return "down"
    return ""


def _infer_high(var: StateVar, largest: float) -> float:
    if largest <= 100 and (_has(var, _PERCENT_WORDS) or 10 < float(var.initial) <= 100):
        return 100.0
    return nice_ceiling(max(largest, 10.0))


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 5 × 10^k that is at least ``value``."""
    exponent = math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        candidate = step * 10**exponent
        if candidate >= value:
            return float(candidate)
    return float(10 ** (exponent + 1))
