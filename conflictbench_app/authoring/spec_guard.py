"""Checks on a spec's raw text and data that must come before the schema and before the compiler.

Each problem names its field, as the schema's do, so that nothing fails later inside Inform with no field named:

- duplicate keys in the YAML (a plain YAML loader keeps the last one silently);
- integers outside the story's range: Glulx words are signed 32-bit, so a larger value wraps in the game, and an
  effect ``x += n`` must not overflow between the variable's bound and its clamp;
- characters the compiler cannot take: Inform 6 escapes text as ``@{XXXX}``, at most four hex digits, so nothing
  above U+FFFF (emoji), and no control characters other than a newline or a tab;
- texts too long to be prose, and spec files too large to be specs.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from conflictbench_app.errors import ScenarioError

INT_MIN, INT_MAX = -(2**31), 2**31 - 1  # a Glulx word
MAX_TEXT_CHARS = 20_000  # per text field; the longest of ours is < 1,000, and 20,000 compiles in ~1 s
MAX_SPEC_BYTES = 1_000_000
_BAD_CHAR = re.compile(r"[\U00010000-\U0010FFFF\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?![\w.])")


def read_spec_text(path: Path) -> str:
    """The spec file's text, or a :class:`ScenarioError` that says what is wrong with the file."""
    try:
        size = path.stat().st_size
        if size > MAX_SPEC_BYTES:
            raise ScenarioError(
                f"{path}: the file is {size:,} bytes; a spec is at most {MAX_SPEC_BYTES:,}. Shorten its texts."
            )
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise ScenarioError(
            f"{path}: line {line} is not valid UTF-8 ({exc.reason}); save the file as UTF-8."
        ) from None
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read the file ({exc.strerror or exc}).") from exc


@lru_cache(maxsize=4)
def unique_key_loader(base: type) -> type:
    """A YAML loader class (on ``base``) that refuses a key repeated in one mapping."""
    import yaml

    class UniqueKeyLoader(base):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: dict[Any, int] = {}
            for key_node, _value in node.value:
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"duplicate key {key!r} at line {line} (first at line {seen[key]}); YAML would keep only "
                        "the last: delete one",
                        key_node.start_mark,
                    )
                seen[key] = line
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def raw_problems(raw: Any, where: str = "") -> list[str]:
    """Problems of the loaded data before the schema: out-of-range integers, unusable characters, huge texts."""
    problems: list[str] = []
    if isinstance(raw, dict):
        for key, value in raw.items():
            problems += raw_problems(value, f"{where}.{key}" if where else str(key))
    elif isinstance(raw, list | tuple):
        for i, value in enumerate(raw):
            problems += raw_problems(value, f"{where}[{i}]")
    elif isinstance(raw, bool):
        pass
    elif isinstance(raw, int):
        problems += _int_problem(raw, where)
    elif isinstance(raw, float) and raw != raw:  # NaN
        problems.append(f"{where}: not a number")
    elif isinstance(raw, str):
        problems += _text_problems(raw, where)
    return problems


def _int_problem(value: int, where: str) -> list[str]:
    if INT_MIN <= value <= INT_MAX:
        return []
    return [f"{where}: {value} is outside the story's 32-bit range {INT_MIN}..{INT_MAX}"]


def _text_problems(text: str, where: str) -> list[str]:
    if len(text) > MAX_TEXT_CHARS:
        return [f"{where}: the text is {len(text):,} characters; keep it under {MAX_TEXT_CHARS:,}"]
    bad = _BAD_CHAR.search(text)
    if bad:
        char = bad.group(0)
        return [
            f"{where}: the character U+{ord(char):04X} at position {bad.start() + 1} cannot be compiled "
            "(Inform takes characters up to U+FFFF and no control characters); replace it"
        ]
    if not _looks_like_expression(where):
        return []
    # A number written inside a condition or effect (``power > 99999999999``) must fit the story too.
    return [
        f"{where}: {n} in {text!r} is outside the story's 32-bit range {INT_MIN}..{INT_MAX}"
        for n in _NUMBER.findall(text)
        if not INT_MIN <= int(n) <= INT_MAX
    ]


def _looks_like_expression(where: str) -> bool:
    return bool(re.search(r"(preconditions\[\d+\]\.check|effects\[\d+\]|\.when\[\d+\])$", where))


def effect_overflow(var_min: int, var_max: int, op: str, amount: int) -> str:
    """Why ``x += amount`` (or ``-=``) could leave the 32-bit range before the story clamps it; empty if safe."""
    low, high = (var_min + amount, var_max + amount) if op == "+=" else (var_min - amount, var_max - amount)
    if low >= INT_MIN and high <= INT_MAX:
        return ""
    return (
        f"{op} {amount} on bounds {var_min}..{var_max} can leave the story's 32-bit range before the bound is "
        "applied; use smaller bounds or a smaller step"
    )
