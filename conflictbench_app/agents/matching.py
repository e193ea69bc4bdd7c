"""Map free-text actions to legal commands: exact, normalized, by number, then a careful fuzzy match.

TOOLCHAIN §5: rapidfuzz ``token_sort_ratio``, rejecting near-ties; ``WRatio`` produces false matches.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz, process

from conflictbench_app.scenarios.model import Action

FUZZY_MIN = 85.0
TIE_MARGIN = 6.0


@dataclass(frozen=True)
class Match:
    command: str | None  # the legal command, or None when nothing matched safely
    how: str  # exact | normalized | number | fuzzy | none | ambiguous | passthrough
    score: float = 100.0
    note: str = ""


def normalize(text: str) -> str:
    text = text.strip().strip("`'\"").lower()
    text = re.sub(r"^(action|command)\s*[:\-]\s*", "", text)
    text = re.sub(r"[^a-z0-9 \-/]", " ", text)
    return " ".join(text.replace("-", " ").split())


def match_action(text: str, legal: list[str] | tuple[str, ...]) -> Match:
    """The legal command ``text`` means. With no legal list (unknown actions), pass the text through as typed."""
    text = " ".join(text.split())
    if not legal:
        return Match(text or None, "passthrough" if text else "none")
    if text in legal:
        return Match(text, "exact")
    by_norm = {normalize(c): c for c in legal}
    norm = normalize(text)
    if norm in by_norm:
        return Match(by_norm[norm], "normalized")
    number = re.fullmatch(r"\(?(\d{1,2})[.)]?", norm.strip())
    if number and 1 <= int(number.group(1)) <= len(legal):
        return Match(legal[int(number.group(1)) - 1], "number")
    return _fuzzy(norm, list(by_norm.items()))


def match_scenario_action(text: str, actions: Sequence[Action]) -> Match:
    """Match against the actions' commands (numbers refer to their listed order), then also their synonyms, a
    synonym standing for its action's command."""
    commands = [a.command for a in actions]
    first = match_action(text, commands)
    if first.command is not None or not any(a.synonyms for a in actions):
        return first
    phrases: dict[str, str] = {}
    for action in actions:
        for phrase in (action.command, *action.synonyms):
            phrases.setdefault(phrase, action.command)
    match = match_action(text, list(phrases))
    if match.command is None:
        return first if match.how == "none" else match
    return Match(phrases[match.command], f"synonym:{match.how}", match.score, match.note)


def _fuzzy(norm: str, choices: list[tuple[str, str]]) -> Match:
    if not norm:
        return Match(None, "none", 0.0, "empty action")
    scored = process.extract(norm, [n for n, _ in choices], scorer=fuzz.token_sort_ratio, limit=2)
    best_norm, best, _ = scored[0]
    command = dict(choices)[best_norm]
    if best < FUZZY_MIN:
        return Match(None, "none", best, f"closest legal action '{command}' scored {best:.0f}")
    if len(scored) > 1 and best - scored[1][1] < TIE_MARGIN:
        other = dict(choices)[scored[1][0]]
        return Match(None, "ambiguous", best, f"'{command}' and '{other}' are equally close")
    return Match(command, "fuzzy", best)
