"""Find scenarios in a folder: the project's own specs (``scenarios/``) or the paper's original layout."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from conflictbench_app.errors import ScenarioError
from conflictbench_app.scenarios.model import Category, Scenario
from conflictbench_app.scenarios.paper import is_paper_tree, load_paper_tree
from conflictbench_app.settings import get_settings


@dataclass
class Library:
    """The scenarios of one source folder, plus the folders that failed to load (with why)."""

    root: Path
    kind: str  # "project" | "paper"
    scenarios: list[Scenario] = field(default_factory=list)
    problems: list[tuple[Path, str]] = field(default_factory=list)

    def get(self, scenario_id: str) -> Scenario:
        for scenario in self.scenarios:
            if scenario.id == scenario_id:
                return scenario
        for path, problem in self.problems:
            if path.name == scenario_id:
                raise ScenarioError(f"Scenario {scenario_id} could not be loaded: {problem}")
        raise ScenarioError(
            f"No scenario {scenario_id!r} in {self.root}. `conflictbench scenarios list --source {self.root}` lists them."
        )

    def select(self, which: str) -> list[Scenario]:
        """``all``, a category (``EP1``), or a comma-separated list of ids. ``all`` and a category leave drafts
        (``status: draft``) out; an id names exactly that scenario, draft or not."""
        which = which.strip()
        reviewed = [s for s in self.scenarios if s.status != "draft"]
        if which.lower() == "all":
            return reviewed
        if which.upper() in Category.__members__:
            return [s for s in reviewed if s.category.value == which.upper()]
        return [self.get(part.strip()) for part in which.split(",") if part.strip()]


def load_library(source: Path | str | None = None) -> Library:
    """Load the scenarios in ``source`` (default: the configured scenarios folder)."""
    settings = get_settings()
    root = Path(source) if source is not None else settings.scenarios_dir
    if not root.is_dir():
        raise ScenarioError(
            f"The scenario folder {root} does not exist; pass an existing folder with --source."
        )
    cache = settings.cache_dir
    project = _load_project(root)
    if project is not None and (project.scenarios or project.problems or not is_paper_tree(root)):
        return project
    scenarios, problems = load_paper_tree(root, cache_dir=cache)
    return Library(root, "paper", sorted(scenarios, key=lambda s: s.id), problems)


def _load_project(root: Path) -> Library | None:
    import importlib.util

    if importlib.util.find_spec("conflictbench_app.authoring") is None:
        return None
    from conflictbench_app.authoring import load_project_scenarios

    scenarios, problems = load_project_scenarios(root)
    return Library(root, "project", sorted(scenarios, key=lambda s: s.id), problems)
