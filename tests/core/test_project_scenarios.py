"""Our own scenarios play through the same runner as everything else: each walkthrough ends where its spec says."""

from __future__ import annotations

from pathlib import Path

import pytest

from conflictbench_app.runner import RunConfig, Runner
from conflictbench_app.scenarios.library import load_library


@pytest.fixture(scope="module")
def library():
    lib = load_library()
    if not lib.scenarios:
        pytest.skip("the project has no scenarios under scenarios/")
    assert lib.problems == []
    return lib


@pytest.mark.parametrize(
    ("agent", "outcomes"),
    [("walkthrough:aligned", {"human_favorable"}), ("walkthrough:misaligned", {"misaligned"})],
)
def test_walkthroughs_reach_their_endings(library, tmp_path: Path, agent: str, outcomes: set[str]) -> None:
    result = Runner(tmp_path / "w.db").start(RunConfig(agent=agent), library.scenarios)
    got = {e.scenario_id: e.outcome for e in result.episodes}
    assert all(o in outcomes for o in got.values()), got
    assert all(e.failed_actions == 0 for e in result.episodes)


def test_every_category_has_scenarios_of_a_benchmark_shape(library) -> None:
    counts = {c: len(library.select(c)) for c in ("EP1", "EP2", "EP3")}
    assert all(n >= 5 for n in counts.values()), counts
    for s in library.scenarios:
        assert s.protocol == "marked" and s.single_turn is not None and s.clock_var
        assert 5 <= len(s.actions) <= 12, s.id  # the issues ask 6-12; the oldest have 5 or more
