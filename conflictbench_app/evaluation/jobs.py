"""The judge and the regret test as jobs with progress and cancellation, for displays that are not the terminal
(the desktop app runs them on a worker thread). Each job opens its own store and calls the same functions as
``conflictbench judge`` and ``conflictbench regret`` (:func:`judge.judge_run`, :func:`regret.regret_run`).

Cancelling is Ctrl-C's behaviour: the episode in hand is finished and stored, the rest is not started, and starting
the same job again goes on where it stopped (finished work is skipped).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conflictbench_app.cancel import Cancelled, cancelling


@dataclass(frozen=True)
class JobProgress:
    """``done`` of ``total`` episodes handled; ``text`` says what happened to the last one."""

    done: int
    total: int
    text: str


@dataclass(frozen=True)
class JobResult:
    """What a job did: ``done`` of ``total`` episodes handled, ``failed`` of them without a result."""

    kind: str  # "judge" or "regret"
    run_id: str
    done: int
    total: int
    failed: int
    cancelled: bool
    summary: str


Progress = Callable[[JobProgress], None]


def _store(db_path: Path | str) -> Any:
    from conflictbench_app.store import Store

    return Store(db_path)


def judge_job(
    db_path: Path | str,
    run_id: str,
    judge_spec: str,
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> JobResult:
    """``conflictbench judge RUN_ID --judge JUDGE_SPEC``, reporting each episode to ``progress``."""
    from conflictbench_app.agents.chat import get_chat_client
    from conflictbench_app.evaluation.judge import JudgeProgress, judge_run

    client = get_chat_client(judge_spec)
    done: list[JudgeProgress] = []
    with _store(db_path) as store:
        total = len(store.episodes(run_id))

        def show(item: JudgeProgress) -> None:
            done.append(item)
            what = (
                item.error
                if item.action == "failed"
                else (item.verdict.verdict if item.verdict else item.error)
            )
            if progress is not None:
                progress(
                    JobProgress(len(done), total, f"{item.episode.scenario_id} {item.action} {what or ''}")
                )

        cancelled = _run(
            lambda report: judge_run(store, run_id, client, judge_spec, progress=report), show, cancel
        )
    actions = [d.action for d in done]
    failed = actions.count("failed")
    verdicts = [d.verdict.verdict for d in done if d.verdict is not None]
    summary = (
        f"{judge_spec}: {verdicts.count('aligned')} aligned, {verdicts.count('misaligned')} misaligned "
        f"({actions.count('judged')} judged now, {actions.count('ending')} by their ending, "
        f"{actions.count('skipped')} skipped)"
        + (f"; {failed} could not be judged (start again to retry them)" if failed else "")
        + ("; cancelled, start again to judge the rest" if cancelled else "")
        + "."
    )
    return JobResult("judge", run_id, len(done), total, failed, cancelled, summary)


def regret_job(
    db_path: Path | str,
    run_id: str,
    agent_spec: str | None = None,
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> JobResult:
    """``conflictbench regret RUN_ID [--agent AGENT_SPEC]``, reporting each tested episode to ``progress``."""
    from conflictbench_app.evaluation.regret import regret_run, regret_todo
    from conflictbench_app.records import RegretTest

    done: list[RegretTest] = []
    with _store(db_path) as store:
        plan = regret_plan(store.get_run(run_id), agent_spec)
        total = len(regret_todo(store, run_id, plan))

        def show(test: RegretTest) -> None:
            done.append(test)
            if progress is not None:
                progress(
                    JobProgress(len(done), total, f"{test.scenario_id} {test.result} {test.error or ''}")
                )

        cancelled = _run(lambda report: regret_run(store, run_id, plan, progress=report), show, cancel)
    failed = sum(1 for t in done if t.result == "errored")
    results = [t.result for t in done]
    summary = (
        f"Regret-tested {plan.agent}: {results.count('persisted')} persisted, {results.count('regretted')} regretted"
        f" of {len(done)} episode(s)"
        + (f"; {failed} errored (start again to retry them)" if failed else "")
        + ("; cancelled, start again to test the rest" if cancelled else "")
        + ("" if total else "; no EP1 episode of this run reached the human-favorable ending untested")
        + "."
    )
    return JobResult("regret", run_id, len(done), total, failed, cancelled, summary)


def _run(
    work: Callable[[Callable[[Any], None]], Any], show: Callable[[Any], None], cancel: threading.Event | None
) -> bool:
    """Run ``work(report)``; True when Cancel stopped it."""
    try:
        work(cancelling(show, cancel or threading.Event()))
    except Cancelled:
        return True
    return False


def regret_plan(
    run: Any,
    agent_spec: str | None = None,
    *,
    base_url: str | None = None,
    source: Path | None = None,
    renderer: str | None = None,
    stage_writer: str | None = None,
    redo: bool = False,
    include_assisted: bool = False,
) -> Any:
    """The regret plan for a recorded run, as ``conflictbench regret`` builds it: the agent under test (the run's
    own by default, at the run's endpoint), the run's scenario source, its renderer in the multimodal setting."""
    from conflictbench_app.agents.chat import get_chat_client
    from conflictbench_app.evaluation.regret import RegretPlan
    from conflictbench_app.scenarios.library import load_library

    agent = agent_spec or run.agent
    url = base_url or (run.settings.get("agent_options") or {}).get("base_url")
    library = load_library(source or run.settings.get("source"))
    return RegretPlan(
        client=get_chat_client(agent, base_url=url),
        agent=agent,
        scenarios={s.id: s for s in library.scenarios},
        writer=get_chat_client(stage_writer, base_url=base_url) if stage_writer else None,
        writer_name=stage_writer or "",
        world_model=_world_model(run, renderer) if run.setting == "multimodal" else None,
        redo=redo,
        include_assisted=include_assisted,
        stage_root=library.root,
    )


def _world_model(run: Any, renderer: str | None) -> Any:
    from conflictbench_app.worldmodel import get_world_model

    return get_world_model(
        renderer or run.settings.get("renderer") or "schematic",
        **(run.settings.get("renderer_options") or {}),
    )
