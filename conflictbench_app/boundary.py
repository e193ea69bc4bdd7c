"""What crosses into a recorded step: text made storable, and replies cut to a size worth keeping and re-sending.

A model's reply or a typed line can hold text that is not valid Unicode (a lone surrogate from a model, a line of
invalid UTF-8 from a terminal, which Python carries as surrogate escapes). SQLite's UTF-8 encoder refuses it, so the
step would be lost after the game had already played it. Everything is made storable here, before the game sees
it; an action that held such text is an unusable reply (a failed action), never a guess at what was meant.

Replies are also capped: a model that answers with megabytes would otherwise be stored whole and sent back to it on
every later turn. What is cut is said in the kept text and in the step's ``meta["capped"]``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the store uses this module too: keep it free of imports
    from conflictbench_app.agents.base import Decision

MAX_KEPT_CHARS = 16_000  # per text field of a reply: ~4,000 tokens, far above any real thought
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def storable(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, so that it encodes as UTF-8."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def is_valid_text(text: str) -> bool:
    return _SURROGATE.search(text) is None


def cap(text: str, limit: int = MAX_KEPT_CHARS) -> tuple[str, int]:
    """``text`` cut to ``limit`` characters with a note saying so, and how many characters were cut."""
    if len(text) <= limit:
        return text, 0
    cut = len(text) - limit
    note = f"\n[{cut:,} more characters cut: replies are kept and re-sent up to {limit:,} characters.]"
    return text[:limit] + note, cut


def checked_decision(decision: Decision) -> Decision:
    """The decision as it may be played and recorded: storable, capped, and an action of invalid text refused."""
    invalid = not is_valid_text(decision.action)
    capped: dict[str, int] = {}
    fields: dict[str, Any] = {}
    for name in ("thought", "raw", "action"):
        kept, cut = cap(storable(getattr(decision, name)))
        fields[name] = kept
        if cut:
            capped[name] = cut
    meta = _checked_meta(decision.meta, capped)
    error = storable(decision.error) if decision.error else None
    if invalid and error is None:
        error = "the action is not valid text (it holds invalid Unicode)"
    if capped:
        meta["capped"] = capped
    return replace(decision, **fields, meta=meta, error=error)


def _checked_meta(meta: dict[str, Any], capped: dict[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in meta.items():
        if isinstance(value, str):
            value, cut = cap(storable(value))
            if cut:
                capped[f"meta.{key}"] = cut
        out[key] = value
    return out
