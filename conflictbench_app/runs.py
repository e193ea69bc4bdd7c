"""Runs and their episodes: the persisted run config, and the one way to open a recorded episode.

The batch runner, the app's live session and ``conflictbench play`` all create a run with :func:`create_run` (one
``settings`` shape stored: :meth:`RunConfig.stored`) and open each episode with :func:`open_episode`, which reads the
run's persisted config back. The turn cap has one rule, :func:`conflictbench_app.settings.turn_cap`, resolved once
when the run is created and stored with it, so a resumed run plays to the cap it started with.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from conflictbench_app import __version__
from conflictbench_app.records import EpisodeRecord, RunRecord
from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.session import ClipHook, PlaySession
from conflictbench_app.settings import REPLY_TIMEOUT
from conflictbench_app.store import Store


@dataclass
class RunConfig:
    """How a run plays: the agent, the setting, the scenarios, the cap and the renderer. Stored with the run."""

    agent: str
    setting: str = "text"
    scenarios: str = "all"
    source: str | None = None
    max_turns: int | None = None  # None: the setting's cap in the settings (:func:`settings.turn_cap`)
    concurrency: int = 1
    seed: int = 1
    engine_timeout: float = REPLY_TIMEOUT
    renderer: str = "schematic"
    renderer_options: dict[str, Any] = field(default_factory=dict)
    agent_options: dict[str, Any] = field(default_factory=dict)
    protocol: str = "paper"  # the play protocol (agents.protocol): paper (the paper's harness) or studio
    # The model entry's request options (reasoning effort, temperature, extra body), recorded when the run starts.
    model_options: dict[str, Any] = field(default_factory=dict)

    def turn_cap(self) -> int:
        """``max_turns`` when set, else the setting's cap from the settings."""
        from conflictbench_app.settings import turn_cap

        return self.max_turns or turn_cap(self.setting)

    def stored(self) -> dict[str, Any]:
        """The one ``settings`` shape a run record stores: every field, the turn cap resolved."""
        return asdict(replace(self, max_turns=self.turn_cap()))

    @classmethod
    def from_stored(cls, settings: dict[str, Any]) -> RunConfig:
        """The config a run was created with (unknown keys, from older or newer versions, are left out; a run
        recorded before protocols existed played the studio protocol)."""
        from conflictbench_app.agents.protocol import run_protocol

        known = {f.name for f in fields(cls)}
        return cls(
            **{**{k: v for k, v in settings.items() if k in known}, "protocol": run_protocol(settings)}
        )


def with_protocol(config: RunConfig) -> RunConfig:
    """``config`` with what its protocol fixes filled in, to be recorded: the model entry's request options, and for
    the paper protocol on Wan the paper's Wan settings (``preset="paper"``, see worldmodel.wan)."""
    from conflictbench_app.agents.protocol import play_protocol
    from conflictbench_app.agents.providers import model_options

    protocol = play_protocol(config.protocol)
    renderer_options = dict(config.renderer_options)
    if protocol.name == "paper" and config.renderer == "wan":
        renderer_options.setdefault("preset", "paper")
    entry = model_options(config.agent)
    options = {**entry, **{k: v for k, v in config.agent_options.items() if k in entry}}
    return replace(config, renderer_options=renderer_options, model_options=options)


def run_versions(scenarios: Sequence[Scenario] = ()) -> dict[str, Any]:
    """What produced a run: the app's version, and the paper-reader's when any scenario is one of the paper's (its
    readings of state, acceptance and endings change between versions)."""
    versions: dict[str, Any] = {"conflictbench": __version__}
    if any(s.source == "paper" for s in scenarios):
        from conflictbench_app.scenarios.paper import reader_version

        versions["paper_reader"] = reader_version()
    return versions


def create_run(
    store: Store, config: RunConfig, scenarios: Sequence[Scenario] = (), *, note: str = ""
) -> RunRecord:
    """Record a new run of ``config`` over ``scenarios`` (its episodes are added by :func:`new_episode`), with
    what its protocol fixes (:func:`with_protocol`)."""
    settings = with_protocol(config).stored()
    return store.create_run(
        config.agent, config.setting, settings=settings, versions=run_versions(scenarios), note=note
    )


def new_episode(store: Store, run: RunRecord, scenario: Scenario, **fields_: Any) -> EpisodeRecord:
    """A pending episode of ``scenario`` in ``run``, with the run's seed and turn cap (``fields_`` add to it)."""
    config = RunConfig.from_stored(run.settings) if run.settings else RunConfig(agent=run.agent)
    return store.new_episode(
        run.id,
        scenario.id,
        scenario.category.value,
        source=scenario.source,
        seed=config.seed,
        max_turns=config.turn_cap(),
        **fields_,
    )


def reset_episode(store: Store, episode_id: str) -> None:
    """Make ``episode_id`` pending again with no steps: it will be played from its start."""
    store.delete_steps_from(episode_id, 0)
    store.update_episode(episode_id, status="pending", error=None, outcome=None, human_favorable=None)


def open_episode(
    store: Any,
    run: RunRecord,
    scenario: Scenario,
    episode: EpisodeRecord | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
    cancel: Any = None,
) -> PlaySession:
    """A session on ``episode`` of ``run`` (a new one when None), set up from the run's persisted config: its engine
    timeout, and in the multimodal setting a clip hook on its renderer (``progress``/``cancel`` go to the hook).
    Call ``start()`` on it to play or to resume."""
    config = RunConfig.from_stored(run.settings) if run.settings else RunConfig(agent=run.agent)
    record = episode if episode is not None else new_episode(store, run, scenario)
    clips = None
    if config.setting == "multimodal":
        from conflictbench_app.worldmodel import get_world_model

        world_model = get_world_model(config.renderer, **config.renderer_options)
        clips = ClipHook(world_model, progress=progress, cancel=cancel)
    return PlaySession(
        store, scenario, record, clips=clips, timeout=config.engine_timeout, protocol=config.protocol
    )
