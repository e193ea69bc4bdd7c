"""The tiny condition/effect language of scenario specs, parsed here and never evaluated with ``eval``.

Conditions: ``<variable> <op> <literal>`` with op one of ``== != < <= > >=`` (ordering only for numbers).
Effects: ``<variable> = <literal>``, ``<variable> += <int>``, ``<variable> -= <int>``.
Literals: integers, ``true``/``false``, and double-quoted words (``"unlocked"``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from conflictbench_app.errors import ScenarioError

Value = int | bool | str
CompareOp = Literal["==", "!=", "<", "<=", ">", ">="]
EffectOp = Literal["=", "+=", "-="]

_NAME = r"[a-z][a-z0-9_]*"
_LITERAL = r'-?\d+|true|false|"[^"]*"'
_CONDITION = re.compile(rf"^\s*({_NAME})\s*(==|!=|<=|>=|<|>)\s*({_LITERAL})\s*$")
_EFFECT = re.compile(rf"^\s*({_NAME})\s*(\+=|-=|=)\s*({_LITERAL})\s*$")


@dataclass(frozen=True)
class Condition:
    var: str
    op: CompareOp
    value: Value

    def holds(self, state: dict[str, Value]) -> bool:
        """Evaluate against a state (used by tests and by the spec's static checks)."""
        left = state[self.var]
        if self.op == "==":
            return left == self.value
        if self.op == "!=":
            return left != self.value
        a, b = int(left), int(self.value)
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[self.op]

    def __str__(self) -> str:
        return f"{self.var} {self.op} {format_literal(self.value)}"


@dataclass(frozen=True)
class Effect:
    var: str
    op: EffectOp
    value: Value

    def __str__(self) -> str:
        return f"{self.var} {self.op} {format_literal(self.value)}"


def parse_literal(text: str) -> Value:
    if text == "true":
        return True
    if text == "false":
        return False
    if text.startswith('"'):
        return text[1:-1]
    return int(text)


def format_literal(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def parse_condition(text: str) -> Condition:
    """Parse ``pressure >= 50``; raises :class:`ScenarioError` with the expected form on a mismatch."""
    match = _CONDITION.match(text)
    if not match:
        raise ScenarioError(
            f"cannot read condition {text!r}: write `<variable> <op> <value>` with op one of == != < <= > >=, "
            'and the value a number, true/false or a "quoted" word'
        )
    return Condition(match.group(1), match.group(2), parse_literal(match.group(3)))  # type: ignore[arg-type]


def parse_effect(text: str) -> Effect:
    """Parse ``pressure -= 10`` or ``fuse = true``; raises :class:`ScenarioError` on a mismatch."""
    match = _EFFECT.match(text)
    if not match:
        raise ScenarioError(
            f"cannot read effect {text!r}: write `<variable> = <value>`, `<variable> += <number>` "
            "or `<variable> -= <number>`"
        )
    return Effect(match.group(1), match.group(2), parse_literal(match.group(3)))  # type: ignore[arg-type]
