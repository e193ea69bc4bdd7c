"""Explore every sequence of listed actions of a compiled story through the real interpreter, exhaustively.

Breadth-first over the listed actions, forking with the story's own save/restore (one interpreter process per
story; ``GlulxGame.branch`` runs a state's whole fan-out of actions without waiting between inputs), so the first path found to an ending is a shortest one. States are deduplicated by an
exact key: for our stories ("marked" protocol) the JSON state window, which holds every variable the story has; for
the paper's stories ("text" protocol) a digest of the save file's memory (:mod:`quetzal`), which holds every hidden
variable. What a command did (its new state, acceptance, the ending and its outcome) is the story protocol's rule
(:mod:`conflictbench_app.scenarios.protocol`), the object the runtime Episode asks too, so the two agree. The search runs to every ending or the clock; ``max_states`` is only a
safety net, and a search it cuts says so and why (``Exploration.cut_reason``). After a cut, seeded random
continuations from the cut nodes look for endings the search could not reach.
"""

from __future__ import annotations

import random
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from conflictbench_app.authoring import stategraph
from conflictbench_app.authoring.quetzal import StateKeys
from conflictbench_app.authoring.stategraph import REFUSED, Outcome, StateGraph
from conflictbench_app.engine.glulxe import Branch, GlulxGame, Output
from conflictbench_app.errors import EngineError
from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.scenarios.protocol import Outcome as PlayOutcome
from conflictbench_app.scenarios.protocol import Position, StoryProtocol, story_protocol
from conflictbench_app.settings import REPLY_TIMEOUT
from conflictbench_app.settings import turn_cap as setting_cap

DEFAULT_MAX_STATES = 50_000  # a safety net: every story of ours and the shared paper games stay far below it
DEFAULT_ROLLOUTS = 60  # random continuations after a capped search (paper stories)
ROLLOUT_STEPS = 15


@dataclass
class EndingFound:
    """One reachable ending: its shortest path (accepted commands) and whether the clock had run out there."""

    ending: str
    human_favorable: bool
    shortest: list[str]
    by_clock: bool = False
    text: str = ""
    proven_shortest: bool = (
        True  # found by the breadth-first search (not by a random continuation after a cut)
    )


@dataclass
class Exploration:
    endings: dict[str, EndingFound] = field(default_factory=dict)
    unparsed: list[str] = field(default_factory=list)  # commands the parser rejected outright at the start
    states: int = 0
    transitions: int = 0
    truncated: bool = False
    cut_reason: str = ""  # why a limit stopped the search, when one did
    max_depth_seen: int = 0  # the most actions on any shortest path to an explored state
    per_depth: list[int] = field(
        default_factory=list
    )  # distinct states first reached at each depth (0: the start)
    horizon: int | None = None  # states this many actions out were not expanded: no episode goes on
    at_horizon: int = 0  # distinct states found at the horizon (left unexpanded; not a cut)
    state_key: str = (
        ""  # how states were told apart (the story's state window, or the save's digest and its mask)
    )
    seconds: float = 0.0
    start_state: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)
    # The explored graph: every expanded state and what each listed action did there (stategraph.py).
    graph: StateGraph | None = None
    turn_cap: int = 0  # the text-only turn cap the chance figure is computed for
    chance_tsr: float | None = None  # exact, or None when a limit left it undetermined (see chance_bounds)
    chance_bounds: tuple[float, float] = (0.0, 1.0)
    shape: dict[str, Any] = field(default_factory=dict)
    busy: list[str] = field(default_factory=list)  # the listed actions counted in shape["busy_actions"]


@dataclass
class _Node:
    snapshot: bytes
    path: list[str]
    position: Position
    depth: int
    key: str = ""


def explore(
    scenario: Scenario,
    *,
    commands: list[str] | None = None,
    max_states: int = DEFAULT_MAX_STATES,
    max_depth: int | None = None,
    timeout: float = REPLY_TIMEOUT,
    rollouts: int = DEFAULT_ROLLOUTS,
    turn_cap: int | None = None,
    undo: bool = True,
    horizon: int | None = None,
) -> Exploration:
    """Explore ``scenario``'s story. ``commands`` defaults to every action command (and, for ours, the synonyms are
    checked to parse too); ``turn_cap`` (default: the text-only setting) is the horizon of ``chance_tsr``.
    ``undo=False`` forks every command from a save even where the story's UNDO could take it back (the slower way,
    kept as the baseline of ``benchmarks/bench_explore.py``; a story that refuses UNDO falls back to it alone).

    ``horizon``: do not expand states that many accepted actions from the start. Every episode ends at the run's turn
    cap, and a state first reached after n accepted actions has used at least n turns, so with the turn cap as the
    horizon the search is complete for everything an episode can reach (endings, shortest paths, ``chance_tsr``)
    even where the story itself never runs out of states (a counter that an action without a clock cost keeps
    moving). States left at the horizon are counted (``at_horizon``); they are not a cut."""
    commands = commands or scenario.action_commands
    protocol = story_protocol(scenario)
    result = Exploration()
    started = time.perf_counter()
    game = GlulxGame(scenario.story_file, timeout=timeout)
    try:
        opening = game.start()
        first = game.last_state
        result.start_state = first.get("state") if first else None
        # The protocol's own key where it reads the state exactly (ours); else the save file's memory (the paper's).
        keys = None if protocol.exact_state else _learn_keys(game, _all_words(scenario, commands), commands)
        result.state_key = "the story's state window" if keys is None else keys.describe()
        root = _Node(game.snapshot(), [], protocol.start(opening), 0)
        root.key = _key(protocol, root, keys)
        result.unparsed = _unparsed(game, root, _all_words(scenario, commands))
        result.graph = StateGraph(root.key, list(commands), inspect=_inspect_commands(scenario))
        result.horizon = horizon
        cut = _bfs(game, protocol, commands, root, result, max_states, max_depth, keys, undo)
        if cut and rollouts:
            _rollouts(game, protocol, commands, cut, result, rollouts)
    finally:
        game.close()
    _figures(result, turn_cap)
    result.seconds = time.perf_counter() - started
    return result


def episode_horizon(scenario: Scenario) -> int | None:
    """How far to search a story: the paper's to the text-only turn cap (an episode never plays further, and some
    of them never run out of states); ours in full (each is proven to end well inside it)."""
    return None if story_protocol(scenario).exact_state else setting_cap("text")


def _inspect_commands(scenario: Scenario) -> frozenset[str]:
    # ``inspect`` is a spec field that is being added to Action; read it defensively until every model has it.
    return frozenset(a.command for a in scenario.actions if getattr(a, "inspect", False))


def _figures(result: Exploration, cap: int | None) -> None:
    """chance_tsr and shape from the explored graph (exact arithmetic, no replay)."""
    graph = result.graph
    assert graph is not None
    result.turn_cap = cap if cap is not None else setting_cap("text")
    result.chance_bounds = stategraph.chance_bounds(graph, result.turn_cap)
    low, high = result.chance_bounds
    result.chance_tsr = low if high - low < stategraph.EXACT else None
    result.shape = stategraph.shape(graph)
    result.busy = stategraph.busy_actions(graph)  # their names, for the report's wording


def _learn_keys(game: GlulxGame, words: list[str], commands: list[str]) -> StateKeys:
    keys, _ = StateKeys.learn(game, words, commands)
    return keys


def _all_words(scenario: Scenario, commands: list[str]) -> list[str]:
    words = list(commands)
    for action in scenario.actions:
        words += [s for s in action.synonyms if s not in words]
    return words


def _unparsed(game: GlulxGame, root: _Node, words: list[str]) -> list[str]:
    answers = game.branch(root.snapshot, words)
    return [
        word for word, b in zip(words, answers, strict=True) if not StoryProtocol.understood(b.output.text)
    ]


def _bfs(
    game: GlulxGame,
    protocol: StoryProtocol,
    commands: list[str],
    root: _Node,
    result: Exploration,
    max_states: int,
    depth_cap: int | None,
    keys: StateKeys | None,
    undo: bool,
) -> list[_Node]:
    """Breadth-first search; returns the nodes whose children were dropped by a limit (empty when complete)."""
    graph = result.graph
    assert graph is not None
    seen = {root.key}
    queue = deque([root])
    cut: list[_Node] = []
    result.per_depth = [1]
    while queue:
        node = queue.popleft()
        result.max_depth_seen = max(result.max_depth_seen, node.depth)
        if depth_cap is not None and node.depth >= depth_cap:
            _cut(result, cut, node, f"the depth limit ({depth_cap} actions) was reached")
            continue
        if result.horizon is not None and node.depth >= result.horizon:
            result.at_horizon += 1  # no episode plays on from here: complete without it
            continue
        try:
            moves = _fan_out(game, protocol, commands, node, result, keys, seen, undo)
        except _NoUndo:  # this story will not UNDO: fork every command from a save from here on
            undo = False
            moves = _fan_out(game, protocol, commands, node, result, keys, seen, undo)
        for command, child in moves:
            result.transitions += 1
            if not isinstance(child, _Node):
                graph.add(node.key, command, child)
                continue
            graph.add(node.key, command, Outcome("state", child.key))
            if child.key in seen:
                continue
            if len(seen) >= max_states:
                _cut(result, cut, node, f"the safety cap of {max_states} distinct states was reached")
                continue
            seen.add(child.key)
            _count_depth(result, child.depth)
            queue.append(child)
    result.states = len(seen)
    if result.truncated:
        result.cut_reason += (
            f" (the deepest state explored is {result.max_depth_seen} actions from the start; "
            f"{growth(result.per_depth)})"
        )
    return cut


def _count_depth(result: Exploration, depth: int) -> None:
    while len(result.per_depth) <= depth:
        result.per_depth.append(0)
    result.per_depth[depth] += 1


def growth(per_depth: list[int]) -> str:
    """The distinct states found at each depth, as a cut reason words it (how fast the state space grows)."""
    return "distinct states found by depth: " + ", ".join(f"{d}: {n}" for d, n in enumerate(per_depth))


def _fan_out(
    game: GlulxGame,
    protocol: StoryProtocol,
    commands: list[str],
    node: _Node,
    result: Exploration,
    keys: StateKeys | None,
    seen: set[str],
    undo: bool,
) -> list[tuple[str, _Node | Outcome]]:
    """What each command does from ``node``: an outcome, or the child node with its key and save.

    The paper's stories are keyed by a digest of the save, so every child is saved (``GlulxGame.branch``). Where
    the protocol reads states exactly (ours), the node is restored once and each command that moved is taken back
    with the story's own UNDO (a refused one left the state as it was); only a child not seen before is saved, and
    the node restored after it (a SAVE moves the undo point to the child). Most commands lead to a known state or
    to none, and an undo costs a small part of a save and a restore.
    """
    if keys is not None or not undo:
        branches = game.branch(node.snapshot, commands)
        return [
            (c, _child(game, protocol, node, c, b, result, keys))
            for c, b in zip(commands, branches, strict=True)
        ]
    game.load_snapshot(node.snapshot)
    moves: list[tuple[str, _Node | Outcome]] = []
    fresh: set[str] = set()
    for command in commands:
        child = _step(protocol, node, command, game.send(command), result)
        if isinstance(child, _Node):
            child.key = _key(protocol, child, None)
        if isinstance(child, _Node) and child.key not in seen and child.key not in fresh:
            fresh.add(child.key)
            child.snapshot = _save_here(game, node, command)
            game.load_snapshot(node.snapshot)
        elif child is not REFUSED:
            _undo(game, command)
        moves.append((command, child))
    return moves


def _save_here(game: GlulxGame, node: _Node, command: str) -> bytes:
    """A save of the state the game stands in, just after ``command`` from ``node``; where the story asked a
    question of its own after the command (it cannot save now), the command is replayed and answered step by step."""
    try:
        return game.snapshot()
    except EngineError:
        return _replay_save(game, node, command)


class _NoUndo(Exception):
    """The story did not take a command back with UNDO (a story compiled with undo prevention)."""


def _undo(game: GlulxGame, command: str) -> None:
    out = game.send("undo")
    if "undone" not in out.text.lower():
        raise _NoUndo(f"UNDO after {command!r} answered {out.text.strip()[:200]!r}")


def _child(
    game: GlulxGame,
    protocol: StoryProtocol,
    node: _Node,
    command: str,
    branch: Branch,
    result: Exploration,
    keys: StateKeys | None,
) -> _Node | Outcome:
    """The outcome of one branch; a child node gets its save (replayed where the fan-out could not save) and key."""
    child = _step(protocol, node, command, branch.output, result)
    if isinstance(child, _Node):
        child.snapshot = branch.save if branch.save is not None else _replay_save(game, node, command)
        child.key = _key(protocol, child, keys)
    return child


def _replay_save(game: GlulxGame, node: _Node, command: str) -> bytes:
    """The save after ``command`` one step at a time, for a story that did not save inside a fan-out (it asked a
    question of its own after the command): the file prompt is then answered when the story asks for it."""
    game.load_snapshot(node.snapshot)
    game.send(command)
    return game.snapshot()


def _cut(result: Exploration, cut: list[_Node], node: _Node, why: str) -> None:
    result.truncated = True
    result.cut_reason = result.cut_reason or why
    if not cut or cut[-1] is not node:
        cut.append(node)


def _rollouts(
    game: GlulxGame,
    protocol: StoryProtocol,
    commands: list[str],
    starts: list[_Node],
    result: Exploration,
    count: int,
) -> None:
    """After a limit cut the search, play ``count`` seeded random continuations from the cut nodes to an ending.

    They find endings the capped search could not reach; paths found this way are the shortest *found*, and the
    report says that exploration was not complete.
    """
    rng = random.Random(0)
    known = {e.ending: len(e.shortest) for e in result.endings.values()}
    for i in range(count):
        node = starts[i % len(starts)]
        game.load_snapshot(node.snapshot)
        for _ in range(ROLLOUT_STEPS):
            command = rng.choice(commands)
            out = game.send(command)
            result.transitions += 1
            child = _step(protocol, node, command, out, result)
            if isinstance(child, Outcome) and child.kind == "ending":
                break
            node = child if isinstance(child, _Node) else node
    for found in result.endings.values():
        if known.get(found.ending) != len(found.shortest):
            found.proven_shortest = False


def _step(
    protocol: StoryProtocol, node: _Node, command: str, out: Output, result: Exploration
) -> _Node | Outcome:
    """The new node for a command the search must follow; else its outcome: an ending (recorded with its shortest
    path) or a refusal (the protocol says the story did not move)."""
    path = [*node.path, command]
    reading = protocol.read(node.position, command, out)
    seen = reading.ending
    if seen is not None:
        # The graph's "clock" endings are the protocol's clock-expired outcome: the harmful default, not a choice.
        by_clock = seen.outcome is PlayOutcome.CLOCK_EXPIRED
        if _shorter(result, seen.ending_id, path):
            result.endings[seen.ending_id] = EndingFound(
                seen.ending_id, seen.human_favorable, path, seen.by_clock, seen.text
            )
        return Outcome("ending", seen.ending_id, seen.human_favorable, by_clock)
    if not reading.moves:
        return REFUSED
    return _Node(b"", path, reading.position, node.depth + 1)


def _shorter(result: Exploration, ending_id: str, path: list[str]) -> bool:
    """Is ``path`` the first, or a shorter, way found to this ending? (BFS finds shortest first; rollouts may not.)"""
    known = result.endings.get(ending_id)
    return known is None or len(path) < len(known.shortest)


def _key(protocol: StoryProtocol, node: _Node, keys: StateKeys | None) -> str:
    """The node's exact state key: the protocol's where it reads states exactly (ours: the state window), else a
    digest of the node's save (the paper's stories: every hidden variable, :mod:`quetzal`)."""
    if keys is None:
        return protocol.state_key(node.position, node.depth)
    return keys.key(node.snapshot)
