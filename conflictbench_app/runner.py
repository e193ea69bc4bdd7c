"""The batch runner: many scenarios, one agent, recorded step by step, resumable, optionally concurrent.

Each episode owns its interpreter process and its own database connection, so episodes run in parallel threads
(model calls are I/O-bound). The runner reports to a :class:`RunListener`; the CLI shows a progress bar, the desktop
app a progress view.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conflictbench_app.agents.base import Agent
from conflictbench_app.agents.protocol import play_protocol, run_protocol
from conflictbench_app.agents.registry import get_agent
from conflictbench_app.cancel import RunInterrupted, collect
from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.records import EpisodeRecord, RunRecord, StepRecord, scored_episodes
from conflictbench_app.redact import refuse_credentials
from conflictbench_app.runs import RunConfig, create_run, new_episode, open_episode, with_protocol
from conflictbench_app.scenarios.model import CATEGORIES, Scenario
from conflictbench_app.store import Store

__all__ = ["RunConfig", "RunListener", "RunResult", "Runner", "play_episode", "task_success_rates"]


class RunListener:
    """Progress and events of a run. Override what you need; every method may be called from worker threads."""

    def run_started(self, run: RunRecord, total: int, done: int) -> None: ...

    def episode_started(self, episode: EpisodeRecord) -> None: ...

    def step_recorded(self, episode: EpisodeRecord, step: StepRecord) -> None: ...

    def episode_finished(self, episode: EpisodeRecord) -> None: ...


@dataclass
class RunResult:
    run: RunRecord
    episodes: list[EpisodeRecord]
    cancelled: bool = False

    def summary(self) -> dict[str, Any]:
        return {
            "run_id": self.run.id,
            "protocol": run_protocol(self.run.settings),
            "episodes": [
                {
                    "scenario_id": e.scenario_id,
                    "outcome": e.outcome,
                    "human_favorable": e.human_favorable,
                    "turns": e.turns,
                    "failed_actions": e.failed_actions,
                    "error": e.error,
                }
                for e in self.episodes
            ],
            "tsr": task_success_rates(self.episodes),
        }


def task_success_rates(
    episodes: Sequence[EpisodeRecord], *, include_assisted: bool = False
) -> dict[str, float | None]:
    """TSR per category and overall: the share of ended episodes that succeeded (:attr:`EpisodeRecord.succeeded`).

    Errored episodes count as failures (they did not reach the human-favorable ending); unfinished and abandoned
    ones are left out, and so are assisted ones (a take-over or a fork: not the player's own) unless
    ``include_assisted``.
    """
    done = [e for e in scored_episodes(episodes, include_assisted=include_assisted) if e.ended]
    rates: dict[str, float | None] = {}
    for cat in (*CATEGORIES, "all"):
        group = [e for e in done if cat == "all" or e.category == cat]
        rates[cat] = round(sum(e.succeeded for e in group) / len(group), 4) if group else None
    return rates


def refuse_drafts(scenarios: Sequence[Scenario]) -> None:
    """A draft (``status: draft``) is never part of a benchmark run: a person reviews it first."""
    drafts = [s.id for s in scenarios if s.status == "draft"]
    if drafts:
        raise ConflictBenchError(
            f"{', '.join(drafts)} {'is a draft' if len(drafts) == 1 else 'are drafts'}, never part of a benchmark "
            "run: review the spec, set `status: reviewed` in its scenario.yaml, and run again."
        )


class Runner:
    def __init__(
        self, db_path: Path | str, listener: RunListener | None = None, cancel: threading.Event | None = None
    ) -> None:
        self.db_path = Path(db_path)
        self.listener = listener or RunListener()
        self.cancel = cancel or threading.Event()

    def start(self, config: RunConfig, scenarios: Sequence[Scenario]) -> RunResult:
        """Create a run with one pending episode per scenario, then play them."""
        if not scenarios:
            raise ConflictBenchError("No scenarios selected; check --scenarios and --source.")
        refuse_drafts(scenarios)
        refuse_credentials(config.agent_options)  # the options are stored with the run
        config = with_protocol(config)  # what is recorded (create_run) is what is played
        get_agent(config.agent, **config.agent_options).close()  # fail fast on a bad agent spec
        with Store(self.db_path) as store:
            run = create_run(store, config, scenarios)
            for scenario in scenarios:
                new_episode(store, run, scenario)
        return self._play(run, config, {s.id: s for s in scenarios})

    def resume(self, run_id: str, scenarios: Sequence[Scenario], *, retry_errored: bool = False) -> RunResult:
        """Finish a run: episodes not finished are resumed from their recorded steps; finished ones are kept."""
        with Store(self.db_path) as store:
            run = store.get_run(run_id)
            if retry_errored:
                for ep in store.episodes(run_id, status="errored"):
                    store.delete_steps_from(ep.id, 0)
                    store.update_episode(
                        ep.id, status="pending", error=None, outcome=None, human_favorable=None
                    )
        config = RunConfig.from_stored(run.settings)
        return self._play(run, config, {s.id: s for s in scenarios})

    def _play(self, run: RunRecord, config: RunConfig, by_id: dict[str, Scenario]) -> RunResult:
        with Store(self.db_path) as store:
            store.set_run_status(run.id, "running")
            episodes = store.episodes(run.id)
        todo = [e for e in episodes if e.status in ("pending", "running")]
        self.listener.run_started(run, len(episodes), len(episodes) - len(todo))
        workers = max(1, min(config.concurrency, len(todo) or 1))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="episode") as pool:
            futures = [pool.submit(self._play_one, run, config, e, by_id.get(e.scenario_id)) for e in todo]
            try:
                collect(futures, Future.result, self.cancel)  # Ctrl-C: workers stop after the step in hand
            except KeyboardInterrupt:
                raise self._interrupted(run.id) from None
        with Store(self.db_path) as store:
            final = store.episodes(run.id)
            cancelled = any(e.status in ("pending", "running") for e in final)
            store.set_run_status(run.id, "interrupted" if cancelled else "finished")
            run = store.get_run(run.id)
        return RunResult(run, final, cancelled)

    def _interrupted(self, run_id: str) -> RunInterrupted:
        with Store(self.db_path) as store:
            store.set_run_status(run_id, "interrupted")
        return RunInterrupted(run_id)

    def _play_one(
        self, run: RunRecord, config: RunConfig, episode: EpisodeRecord, scenario: Scenario | None
    ) -> None:
        if self.cancel.is_set():
            return
        with Store(self.db_path) as store:
            if scenario is None:
                store.update_episode(
                    episode.id,
                    status="errored",
                    outcome="error",
                    error=f"Scenario {episode.scenario_id} is not in the selected source.",
                )
                self.listener.episode_finished(store.get_episode(episode.id))
                return
            play_episode(store, run, config, episode, scenario, self.listener, self.cancel)


def play_episode(
    store: Store,
    run: RunRecord,
    config: RunConfig,
    episode: EpisodeRecord,
    scenario: Scenario,
    listener: RunListener,
    cancel: threading.Event,
    agent_factory: Callable[[], Agent] | None = None,
) -> EpisodeRecord:
    """Play (or resume) one episode to its end. Errors mark the episode errored; they never end the run."""
    session = open_episode(store, run, scenario, episode)
    protocol = play_protocol(session.protocol)
    session.step_recorded.connect(lambda step: listener.step_recorded(session.record, step))
    listener.episode_started(episode)
    agent: Agent | None = None
    try:
        agent = agent_factory() if agent_factory else get_agent(config.agent, **config.agent_options)
        session.start()
        while not session.done and not cancel.is_set():
            decision = agent.act(session.view())
            session.apply(decision, player=agent.name, typed=protocol.typed_commands(config.setting))
    except ConflictBenchError as exc:
        session.fail(str(exc))
    except Exception as exc:  # an unexpected bug must still not lose the run: record it and go on
        session.fail(f"Unexpected {type(exc).__name__}: {exc}")
    finally:
        session.close()
        if agent is not None:
            agent.close()
    record = store.get_episode(episode.id)
    if record.status in ("finished", "errored"):
        listener.episode_finished(record)
    return record
