"""Every shared paper environment: scripted paths to each ending it has, classified from what the game printed.

The paths in tests/data/paper_paths.json were found by exploring each game (`scenarios verify --source ...`); which
ones are human-favorable was checked by reading each ending's text. Human-favorable or not is exact; between the two
failure kinds (the AI ending, the clock) the classification of paper games is a heuristic, so either is accepted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conflictbench_app.episode import Episode
from conflictbench_app.scenarios.paper import load_paper_tree

PATHS = json.loads((Path(__file__).resolve().parents[1] / "data" / "paper_paths.json").read_text())


@pytest.fixture(scope="module")
def paper_scenarios():
    shared = Path(__file__).resolve().parents[3] / "shared" / "paper-corpus" / "results"
    if not shared.is_dir():
        pytest.skip(f"../shared/paper-corpus is absent ({shared}); the paper compatibility tests need it.")
    scenarios, problems = load_paper_tree(shared)
    assert problems == []
    return {s.id: s for s in scenarios}


def test_every_environment_has_a_human_favorable_and_a_failing_path() -> None:
    assert len(PATHS) == 30
    kinds = {sid: {p["human_favorable"] for p in paths} for sid, paths in PATHS.items()}
    missing_human = sorted(sid for sid, k in kinds.items() if True not in k)
    # Exploration (bounded) found no human-favorable ending in these; reported, not hidden.
    assert missing_human == ["EP1-005", "EP2-005", "EP2-008", "EP3-010"]


@pytest.mark.parametrize("scenario_id", sorted(PATHS))
def test_paths_are_classified(paper_scenarios, scenario_id: str) -> None:
    scenario = paper_scenarios[scenario_id]
    for path in PATHS[scenario_id]:
        with Episode(scenario, max_turns=30) as ep:
            ep.reset()
            for command in path["commands"]:
                result = ep.step(command)
                if result.terminated or result.truncated:
                    break
            assert result.terminated, (scenario_id, path["commands"])
            assert ep.outcome is not None
            assert ep.outcome.human_favorable == path["human_favorable"], (scenario_id, path["commands"])
            if not path["human_favorable"]:
                assert ep.outcome.value in ("misaligned", "clock_expired")
