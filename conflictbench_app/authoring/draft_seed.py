"""What a draft is written from: a PacifAIst item (``--seed``) or one of the paper's environments (``--from-paper``).

A :class:`Seed` is the text put to the model, the spec's category and seed id, and, for a paper environment, the design
problems that ``verify`` finds in it, so that the model is asked to fix them in our spec.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from conflictbench_app.errors import ScenarioError

PAPER_MAX_STATES = 400  # enough to name a paper story's design problems; a larger game is reported as cut


@dataclass(frozen=True)
class Seed:
    id: str  # the PacifAIst scenario_id the spec's ``seed`` field takes
    category: str  # EP1 | EP2 | EP3
    source: str  # "pacifaist:EP1-037" or "paper:EP1-037"
    text: str  # the dilemma as put to the model
    problems: tuple[str, ...] = ()  # a paper environment's design problems, to fix


def pacifaist_seed(csv_path: Path, seed_id: str) -> Seed:
    """The PacifAIst item ``seed_id`` of the dataset at ``csv_path``."""
    from conflictbench_app.evaluation.pacifaist import load_items

    item = next((i for i in load_items(csv_path) if i.scenario_id == seed_id), None)
    if item is None:
        raise ScenarioError(
            f"{csv_path} has no item {seed_id!r}; give a scenario_id of the dataset (EP1-037)."
        )
    if item.subcategory not in ("EP1", "EP2", "EP3"):
        raise ScenarioError(f"{seed_id} is a {item.subcategory} item; drafts need an EP1, EP2 or EP3 seed.")
    lines = [
        f"PacifAIst item {item.scenario_id} ({item.subcategory}, {item.task_type}):",
        item.prompt.strip(),
    ]
    lines += [f"{letter}. {choice}" for letter, choice in zip("ABCD", item.choices, strict=False) if choice]
    if item.correct_choice:
        lines.append(f"The aligned choice: {item.correct_choice}.")
    if item.ideal_response_profile:
        lines.append(f"Ideal response: {item.ideal_response_profile.strip()}")
    return Seed(item.scenario_id, item.subcategory, f"pacifaist:{item.scenario_id}", "\n".join(lines))


def paper_seed(source: Path, env_id: str, *, max_states: int = PAPER_MAX_STATES) -> Seed:
    """The paper's environment ``env_id`` under ``source``, with the design problems verify finds in its story
    (exploring at most ``max_states`` states: a cut exploration is named among the problems)."""
    from conflictbench_app.authoring.verify import verify_scenario
    from conflictbench_app.scenarios.paper import load_paper_tree
    from conflictbench_app.settings import get_settings

    scenarios, _problems = load_paper_tree(source, cache_dir=get_settings().cache_dir)
    scenario = next((s for s in scenarios if s.id == env_id), None)
    if scenario is None:
        known = ", ".join(sorted(s.id for s in scenarios)[:8])
        raise ScenarioError(f"No paper environment {env_id!r} under {source} (found: {known or 'none'}).")
    report = verify_scenario(scenario, max_states=max_states)
    problems = tuple(report.problems) or ("(verify found no design problem)",)
    lines = [
        f"The paper's environment {scenario.id} ({scenario.category.value}), to be rewritten as a spec of ours.",
        "Its opening:",
        scenario.opening.strip(),
        "Its actions:",
        *(f"- {a.command}: {a.description}".rstrip(": ") for a in scenario.actions),
        "Its endings: "
        + "; ".join(
            f"{e.id} ({'human-favorable' if e.human_favorable else 'harmful'})" for e in scenario.endings
        ),
        "The design problems our verifier finds in its story (fix every one in your spec):",
        *(f"- {p}" for p in problems),
    ]
    return Seed(scenario.id, scenario.category.value, f"paper:{scenario.id}", "\n".join(lines), problems)
