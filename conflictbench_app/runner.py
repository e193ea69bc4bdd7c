"""The batch runner: many scenarios, one agent, recorded step by step, resumable, optionally concurrent.

Each episode owns its interpreter process and its own database connection, so episodes run in parallel threads
(model calls are I/O-bound). The runner reports to a :class:`RunListener`; the CLI shows a progress bar, the desktop
app a progress view.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conflictbench_app import __version__
from conflictbench_app.agents.base import Agent
from conflictbench_app.agents.registry import get_agent
from conflictbench_app.cancel import RunInterrupted, collect
from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.records import EpisodeRecord, RunRecord, StepRecord
from conflictbench_app.redact import refuse_credentials
from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.session import ClipHook, PlaySession
from conflictbench_app.store import Store


class RunListener:
    """Progress and events of a run. Override what you need; every method may be called from worker threads."""

    def run_started(self, run: RunRecord, total: int, done: int) -> None: ...

    def episode_started(self, episode: EpisodeRecord) -> None: ...

    def step_recorded(self, episode: EpisodeRecord, step: StepRecord) -> None: ...

    def episode_finished(self, episode: EpisodeRecord) -> None: ...


@dataclass
class RunConfig:
    agent: str
    setting: str = "text"
    scenarios: str = "all"
    source: str | None = None
    max_turns: int | None = None
    concurrency: int = 1
    seed: int = 1
    engine_timeout: float = 10.0
    renderer: str = "schematic"
    renderer_options: dict[str, Any] = field(default_factory=dict)
    agent_options: dict[str, Any] = field(default_factory=dict)

    def turn_cap(self) -> int:
        from conflictbench_app.settings import turn_cap

        return self.max_turns or turn_cap(self.setting)


@dataclass
class RunResult:
    run: RunRecord
    episodes: list[EpisodeRecord]
    cancelled: bool = False

    def summary(self) -> dict[str, Any]:
        return {
            "run_id": self.run.id,
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


def task_success_rates(episodes: Sequence[EpisodeRecord]) -> dict[str, float | None]:
    """TSR per category and overall: the share of episodes that reached the human-favorable ending.

    Errored episodes count as failures (they did not reach it); unfinished ones are left out.
    """
    done = [e for e in episodes if e.status in ("finished", "errored")]
    rates: dict[str, float | None] = {}
    for cat in ("EP1", "EP2", "EP3"):
        group = [e for e in done if e.category == cat]
        rates[cat] = round(sum(bool(e.human_favorable) for e in group) / len(group), 4) if group else None
    rates["all"] = round(sum(bool(e.human_favorable) for e in done) / len(done), 4) if done else None
    return rates


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
        refuse_credentials(config.agent_options)  # the options are stored with the run
        get_agent(config.agent, **config.agent_options).close()  # fail fast on a bad agent spec
        with Store(self.db_path) as store:
            run = store.create_run(
                config.agent,
                config.setting,
                settings=_config_dict(config),
                versions={"conflictbench": __version__},
            )
            for scenario in scenarios:
                store.new_episode(
                    run.id,
                    scenario.id,
                    scenario.category.value,
                    source=scenario.source,
                    seed=config.seed,
                    max_turns=config.turn_cap(),
                )
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
        config = RunConfig(**{k: v for k, v in run.settings.items() if k in RunConfig.__dataclass_fields__})
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
    clips = _clip_hook(config) if config.setting == "multimodal" else None
    session = PlaySession(store, scenario, episode, clips=clips, timeout=config.engine_timeout)
    session.step_recorded.connect(lambda step: listener.step_recorded(session.record, step))
    listener.episode_started(episode)
    agent: Agent | None = None
    try:
        agent = agent_factory() if agent_factory else get_agent(config.agent, **config.agent_options)
        session.start()
        while not session.done and not cancel.is_set():
            decision = agent.act(session.view())
            session.apply(decision, player=agent.name)
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


def _clip_hook(config: RunConfig) -> ClipHook:
    from conflictbench_app.worldmodel import get_world_model

    return ClipHook(get_world_model(config.renderer, **config.renderer_options))


def _config_dict(config: RunConfig) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(config)
