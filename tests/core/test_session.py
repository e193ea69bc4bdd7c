"""PlaySession with clips: render progress, and a render that fails or is cancelled loses no turn."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from conflictbench_app.agents.base import Decision
from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.scenarios.library import load_library
from conflictbench_app.session import ClipHook, PlaySession
from conflictbench_app.store import Store
from conflictbench_app.worldmodel import get_world_model


@pytest.fixture
def scenario():  # type: ignore[no-untyped-def]
    library = load_library()
    if not library.scenarios:
        pytest.skip("the project has no scenarios under scenarios/")
    return library.get("EP1-101")


def _session(store: Store, scenario, hook: ClipHook) -> PlaySession:  # type: ignore[no-untyped-def]
    run = store.create_run("human:t", "multimodal", settings={}, versions={})
    record = store.new_episode(
        run.id, scenario.id, scenario.category.value, source=scenario.source, max_turns=10
    )
    return PlaySession(store, scenario, record, clips=hook)


def test_progress_reported_while_each_clip_renders(tmp_path: Path, scenario) -> None:  # type: ignore[no-untyped-def]
    seen: list[tuple[int, int]] = []
    hook = ClipHook(
        get_world_model("schematic", cache_dir=tmp_path / "c"), progress=lambda d, t: seen.append((d, t))
    )
    with Store(tmp_path / "s.db") as store:
        session = _session(store, scenario, hook)
        try:
            session.start()
            base = list(seen)
            session.apply(Decision(action=scenario.extra["walkthroughs"]["aligned"][0]), player="human:t")
        finally:
            session.close()
    assert base[-1] == (49, 49) and [d for d, _ in base] == list(range(1, 50))
    assert seen[len(base) :][-1] == (49, 49) and len(seen) == 2 * 49


def test_a_cancelled_render_records_the_turn_without_a_clip_and_play_goes_on(
    tmp_path: Path,
    scenario,  # type: ignore[no-untyped-def]
) -> None:
    cancel = threading.Event()
    hook = ClipHook(get_world_model("schematic", cache_dir=tmp_path / "c"), cancel=cancel)
    first, second, third = scenario.extra["walkthroughs"]["aligned"][:3]
    with Store(tmp_path / "s.db") as store:
        session = _session(store, scenario, hook)
        try:
            session.start()
            session.apply(Decision(action=first), player="human:t")
            cancel.set()
            with pytest.raises(ConflictBenchError, match=r"Turn 2 \(.*\) was played and recorded.*cancelled"):
                session.apply(Decision(action=second), player="human:t")
            assert session.images == ()  # the first turn's frames are not passed off as the second's
            cancel.clear()
            session.apply(Decision(action=third), player="human:t")
        finally:
            session.close()
        steps = store.steps(session.record.id)
    assert [s.action for s in steps] == [first, second, third]
    assert steps[0].clip is not None and steps[2].clip is not None
    assert steps[1].clip is None and "cancelled" in steps[1].meta["render_error"]
