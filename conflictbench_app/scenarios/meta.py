"""Interpreter meta-commands: typed lines that would change the story behind the record's back.

Inform's out-of-world verbs (``undo``, ``restart``, ``save``, ``restore``, ``quit``, ``script``...) and the testing
verbs that the paper's non-release builds still carry (``purloin``, ``gonear``, ``random``, ``test``...) act on the
interpreter, not on the scenario: an ``undo`` rolls the clock back while the record counts a refused action, a
``restart`` starts the story over mid-episode, ``save``/``restore``/``script`` open a file prompt that ends the
episode with an error. :func:`meta_refusal` recognises them before anything reaches the game, for paper stories and
ours alike; the episode records a failed action with the reason. The app's own undo and fork are the way back.

A line that chains several commands (``look. open valve``, ``open valve then pull lever``) is refused too: Inform
would play each, and the record would show one step for several.

Kept, because the story answers them without side effects on the scenario: ``help``, ``look``, ``status``,
``wait``, ``score``, ``version``, ``verbose``/``brief``/``superbrief``, ``notify``, ``pronouns``, ``inventory``.
"""

from __future__ import annotations

import re

# Inform 7 6M62's Standard Rules and parser: verbs whose action changes the interpreter, not the scenario.
OUT_OF_WORLD = {
    "undo": "rolls the story back one turn without the record knowing",
    "restart": "starts the story over",
    "restore": "loads a saved game",
    "save": "writes a saved game",
    "quit": "ends the interpreter",
    "q": "ends the interpreter",
    "verify": "checks the story file",
    "script": "starts or stops a transcript file",
    "transcript": "starts or stops a transcript file",
    "unscript": "stops a transcript file",
    "noscript": "stops a transcript file",
    "again": "repeats the previous command under another name",
    "g": "repeats the previous command under another name",
    "oops": "re-runs the previous command with a word replaced",
    "o": "re-runs the previous command with a word replaced",
}
# The testing verbs of a non-release build (the paper's stories are built with them): they move objects, fix the
# random numbers, replay scripts or switch on tracing that then pollutes every later observation.
TESTING = {
    "purloin",
    "abstract",
    "gonear",
    "showme",
    "showverb",
    "showheap",
    "tree",
    "trace",
    "random",
    "test",
    "actions",
    "rules",
    "scenes",
    "relations",
    "responses",
    "scope",
    "glklist",
}
# Where Inform's parser starts a new command inside one typed line ("wait. undo", "look then restart"), and the
# "someone, do this" form that addresses a command to a character.
_SEPARATORS = re.compile(r"[.,;!?]|\bthen\b", re.I)
_CHAIN = re.compile(r"[.,;]\s*(?=\S)|\bthen\b", re.I)


def meta_refusal(command: str, listed: frozenset[str] | set[str] = frozenset()) -> str | None:
    """The failed-action message for a meta-command, or None for a line the story may see.

    ``listed`` holds the scenario's own commands and synonyms: a listed action is never refused, even when it
    starts with a word such as ``save`` or ``test``.
    """
    line = " ".join(command.lower().split())
    if line in listed or line.rstrip(".!? ") in listed:
        return None
    parts = _SEPARATORS.split(line)
    for part in parts:
        words = part.split()
        if not words or " ".join(words) in listed:
            continue
        verb = words[0]
        if verb in OUT_OF_WORLD:
            return _message(verb, f"is an interpreter command that {OUT_OF_WORLD[verb]}")
        if verb in TESTING:
            return _message(verb, "is an Inform testing command that changes the story outside the scenario")
    if len(_CHAIN.split(line.rstrip(".!? "))) > 1:
        # Inform plays each command of a chained line; the record would show one step for several.
        return (
            "[One command at a time: this line holds several (Inform reads '.', ',' and 'then' as a new command), so "
            "it was not sent to the game. This turn counts as a failed action.]"
        )
    return None


def _message(verb: str, reason: str) -> str:
    return (
        f"[`{verb}` {reason}; it was not sent to the game, so the story and its record stay the same. "
        "This turn counts as a failed action. To go back, use the app's Undo or fork an earlier turn.]"
    )
