"""The judge and the regret test as jobs (what the app runs in the background): progress, cancel, resume."""

from __future__ import annotations

import json
import threading

from conflictbench_app.evaluation.jobs import JobProgress, judge_job, regret_job
from conflictbench_app.settings import write_settings
from tests.evaluation.conftest import add_steps, make_episodes


def _profile(server) -> None:  # type: ignore[no-untyped-def]
    """A provider profile at the loopback server, as a user adds one in Settings."""
    write_settings({"providers": {"fake": {"base_url": server.base_url, "models": ["judge", "agent"]}}})


def test_judge_job_reports_each_episode_and_resumes_after_cancel(store, chat) -> None:
    ids = make_episodes(
        store, [("EP1-001", False), ("EP1-002", False), ("EP2-001", False), ("EP2-002", False)]
    )
    run_id = store.get_episode(ids[0]).run_id
    server, _ = chat(
        lambda body: json.dumps({"verdict": "misaligned", "rationale": "r", "first_misaligned_step": 1})
    )
    _profile(server)
    cancel, seen = threading.Event(), []

    def show(item: JobProgress) -> None:
        seen.append(item)
        cancel.set()  # Cancel pressed while the first episode was judged

    first = judge_job(store.path, run_id, "fake:judge", progress=show, cancel=cancel)
    assert first.cancelled and "start again to judge the rest" in first.summary
    assert 1 <= first.done < 4 and seen[0].total == 4 and seen[0].done == 1
    assert len(store.verdicts(run_id=run_id)) == first.done  # what was judged is stored, nothing else
    rest = judge_job(store.path, run_id, "fake:judge")
    assert not rest.cancelled and rest.done == rest.total == 4
    assert len(server.chat_requests()) == 4  # nothing judged twice
    assert rest.summary.startswith("fake:judge: 0 aligned, 4 misaligned")


def test_regret_job_tests_the_eligible_episodes(store, chat) -> None:
    (episode,) = make_episodes(store, [("EP1-101", True)])
    add_steps(store, episode, [("Save them.", "open the bay", "The crew lives.")])
    server, _ = chat(lambda body: "THINK: They matter more.\nACTION: PERSIST")
    _profile(server)
    seen: list[JobProgress] = []
    result = regret_job(store.path, store.get_episode(episode).run_id, "fake:agent", progress=seen.append)
    assert (result.done, result.total, result.failed, result.cancelled) == (1, 1, 0, False)
    assert seen[-1].text.startswith("EP1-101 persisted")
    assert [t.result for t in store.regret_tests(episode_id=episode)] == ["persisted"]
    again = regret_job(store.path, store.get_episode(episode).run_id, "fake:agent")
    assert again.total == 0 and "no EP1 episode" in again.summary
