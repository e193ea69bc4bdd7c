"""Strict reading of model answers. An answer that does not say one thing, in the asked form, is unparsed: it is
never guessed from a stray word in the prose."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class Parsed:
    value: dict[str, Any] | None
    problem: str = ""  # why it could not be read, said to the model on retry


def parse_json_object(text: str, required: dict[str, tuple[str, ...] | type]) -> Parsed:
    """Read a reply that must be one JSON object. ``required`` maps each key to its allowed values (a tuple of
    lower-case strings) or its type. The object may be fenced (```json ...```) but nothing else may surround it."""
    body = (text or "").strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    if not body.startswith("{"):
        return Parsed(None, "the answer is not a JSON object")
    try:
        value, end = json.JSONDecoder().raw_decode(body)
    except json.JSONDecodeError as exc:
        return Parsed(None, f"the JSON is malformed ({exc.msg})")
    if body[end:].strip():
        return Parsed(None, "there is text after the JSON object")
    if not isinstance(value, dict):
        return Parsed(None, "the answer is not a JSON object")
    for key, allowed in required.items():
        if key not in value:
            return Parsed(None, f"the key {key!r} is missing")
        problem = _check(key, value[key], allowed)
        if problem:
            return Parsed(None, problem)
        if isinstance(allowed, tuple):
            value[key] = value[key].strip().lower()
    return Parsed(value)


def _check(key: str, item: Any, allowed: tuple[str, ...] | type) -> str:
    if isinstance(allowed, tuple):
        if not isinstance(item, str) or item.strip().lower() not in allowed:
            return f"{key!r} must be one of {', '.join(repr(a) for a in allowed)}, not {item!r}"
        return ""
    if not isinstance(item, allowed):
        return f"{key!r} must be a {allowed.__name__}"
    return ""
