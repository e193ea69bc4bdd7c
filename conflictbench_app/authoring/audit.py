"""``scenarios audit``: per category and per game, what the paper's design rules say and what exploration proves.

Each story is explored breadth-first through the real interpreter (:mod:`.explore`, exact states); its graph then
answers the rules: the human-favorable ending reachable and its shortest path, no one-action win, no one-action
harmful ending, the harmful default when the clock runs out, ``help`` costing no turn, and every ending reachable by
some command, with ``chance_tsr``. A story the safety cap cut is reported as not complete, with the reason: its
"not reachable" figures then prove nothing. The report records what produced it (:class:`AuditReport`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conflictbench_app.authoring.explore import Exploration, episode_horizon, explore
from conflictbench_app.authoring.stategraph import Outcome
from conflictbench_app.engine.glulxe import GlulxGame
from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.records import AuditReport, GameAudit
from conflictbench_app.scenarios.model import Category, Scenario
from conflictbench_app.scenarios.protocol import story_protocol

# The paper's design rules, as the audit checks them (the report prints them once, above the tables).
RULES: tuple[tuple[str, str], ...] = (
    ("human_in_3_to_4", "the human-favorable ending is reachable, in 3 or 4 actions"),
    ("no_one_action_win", "no single action reaches the human-favorable ending"),
    ("no_one_action_harm", "no single action reaches a harmful ending"),
    ("timeout_harmful", "when the clock runs out, the ending is harmful"),
    ("help_free", "`help` lists the actions and spends no turn"),
    ("all_endings_reached", "every ending the environment declares is reached by some sequence of actions"),
)
AUDIT_MAX_STATES = (
    5000  # the audit's default safety cap (verify's --max-states, raised: the audit wants proofs)
)


def audit_tree(
    root: Path,
    ids: list[str] | None = None,
    *,
    jobs: int = 1,
    max_states: int = AUDIT_MAX_STATES,
    command: str = "",
) -> AuditReport:
    """Audit every paper environment under ``root`` (all, or those in ``ids``), ``jobs`` stories at a time."""
    from conflictbench_app import __version__
    from conflictbench_app.scenarios.paper import load_paper_tree, reader_version
    from conflictbench_app.settings import get_settings, turn_cap

    scenarios, problems = load_paper_tree(root, cache_dir=get_settings().cache_dir)
    games = [_unloadable(p, why) for p, why in problems if not ids or p.name in ids]
    chosen = [s for s in scenarios if not ids or s.id in ids]
    games += _map(audit_one, [(s, max_states) for s in chosen], jobs)
    return AuditReport(
        tool_version=__version__,
        reader_version=reader_version(),
        source=str(root),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        turn_cap=turn_cap("text"),
        max_states=max_states,
        command=command,
        games=sorted(games, key=lambda g: g.id),
    )


def _unloadable(folder: Path, why: str) -> GameAudit:
    category = folder.name[:3] if folder.name[:3] in Category.__members__ else "?"
    return GameAudit(id=folder.name, category=category, error=why)


def audit_one(job: tuple[Scenario, int]) -> GameAudit:
    """Explore one story and read the design rules off its graph."""
    scenario, max_states = job
    audit = GameAudit(id=scenario.id, category=scenario.category.value, title=scenario.title)
    audit.notes = list(scenario.notes)
    try:
        found = explore(scenario, max_states=max_states, horizon=episode_horizon(scenario))
        audit.help_spends_turn = help_spends_turn(scenario, found)
    except ConflictBenchError as exc:
        audit.error = str(exc)
        return audit
    _fill(audit, scenario, found)
    return audit


def _fill(audit: GameAudit, scenario: Scenario, found: Exploration) -> None:
    human = min(
        (e for e in found.endings.values() if e.human_favorable), key=lambda e: len(e.shortest), default=None
    )
    audit.human_reachable = human is not None
    if human is not None:
        audit.human_path, audit.human_path_proven = human.shortest, human.proven_shortest
    start = _start_row(found)
    audit.one_action_wins = [c for c, o in start.items() if o.kind == "ending" and o.human_favorable]
    audit.one_action_harmful = {
        c: o.target for c, o in start.items() if o.kind == "ending" and not o.human_favorable
    }
    clock = sorted(e.ending for e in found.endings.values() if e.by_clock)
    audit.timeout_endings = clock
    if clock:
        audit.timeout_harmful = all(not found.endings[e].human_favorable for e in clock)
    audit.unreached_endings = sorted({e.id for e in scenario.endings} - set(found.endings))
    audit.chance_tsr, audit.chance_bounds = found.chance_tsr, found.chance_bounds
    audit.states, audit.transitions, audit.seconds = found.states, found.transitions, found.seconds
    audit.complete, audit.cut_reason = not found.truncated, found.cut_reason
    audit.per_depth, audit.state_key = found.per_depth, found.state_key
    audit.horizon, audit.at_horizon = found.horizon, found.at_horizon


def _start_row(found: Exploration) -> dict[str, Outcome]:
    graph = found.graph
    return dict(graph.edges.get(graph.root, {})) if graph is not None else {}


def help_spends_turn(scenario: Scenario, found: Exploration) -> bool | None:
    """Does ``help`` cost the story time? Told by behaviour: ``help`` and then the shortest path to the clock's
    ending; if that ending comes before the path's last action, ``help`` spent a turn. Without a clock ending seen,
    by the story's printed clock; None when neither can tell."""
    clock = [e for e in found.endings.values() if e.by_clock]
    protocol = story_protocol(scenario)
    game = GlulxGame(scenario.story_file)
    try:
        before = protocol.start(game.start())
        reading = protocol.read(before, "help", game.send("help"))
        if not clock:
            return _printed_clock_moved(scenario, before.state, reading.position.state)
        path = min((e.shortest for e in clock), key=len)
        for i, command in enumerate(path):
            reading = protocol.read(reading.position, command, game.send(command))
            if reading.ending is not None:
                return i < len(path) - 1
    finally:
        game.close()
    return None  # the clock's path did not end after help: something else changed, not told here


def _printed_clock_moved(scenario: Scenario, before: dict[str, Any], after: dict[str, Any]) -> bool | None:
    var = scenario.state_var(scenario.clock_var) if scenario.clock_var else None
    if var is None or not var.shown:
        return None
    return after.get(var.name) != before.get(var.name)


def rule_results(game: GameAudit) -> dict[str, bool | None]:
    """Each rule of :data:`RULES` for one game: True (holds), False (broken), None (cannot be told)."""
    if game.error:
        return {name: None for name, _ in RULES}
    proven = game.complete  # "never reached" is proof only when exploration finished
    return {
        "human_in_3_to_4": _human_rule(game),
        "no_one_action_win": not game.one_action_wins,
        "no_one_action_harm": not game.one_action_harmful,
        "timeout_harmful": game.timeout_harmful if game.timeout_harmful is not None else None,
        "help_free": None if game.help_spends_turn is None else not game.help_spends_turn,
        "all_endings_reached": True if not game.unreached_endings else (False if proven else None),
    }


def _human_rule(game: GameAudit) -> bool | None:
    if game.human_path is None:
        return False if game.complete else None
    length = len(game.human_path)
    if game.human_path_proven:
        return length in (3, 4)
    return False if length < 3 else None  # a path found after a cut: the shortest is at most this long


def _map(fn: Callable[[Any], GameAudit], items: list[Any], jobs: int) -> list[GameAudit]:
    if jobs <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(fn, items))
