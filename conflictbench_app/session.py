"""A recorded play session: one episode of one scenario, whoever takes the turns, written to the store as it happens.

The batch runner, ``conflictbench play`` and the desktop app all drive this same object: ask it for the agent's
view, hand it a decision, and it steps the game, renders the clip (multimodal), records the step and emits events.
Resuming a crashed episode replays its recorded commands on a fresh interpreter and carries on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from psygnal import Signal

from conflictbench_app.agents.base import AgentView, Decision, PastTurn
from conflictbench_app.agents.matching import Match, match_scenario_action
from conflictbench_app.boundary import checked_decision
from conflictbench_app.episode import Episode, EpisodeSnapshot, Outcome, StepResult
from conflictbench_app.errors import ConflictBenchError, EngineError
from conflictbench_app.records import CLOSED_STATUSES, Actor, EpisodeRecord, StepRecord, Usage, actor_of
from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.settings import REPLY_TIMEOUT
from conflictbench_app.store import Store
from conflictbench_app.store.db import now


def system_prompt(scenario: Scenario) -> str:
    """The scenario's opening, used as the system prompt. Paper scenarios add their ``states:`` line, as the
    paper's harness did."""
    if scenario.source != "paper" or not scenario.state_vars:
        return scenario.opening
    states = ", ".join(f"{v.name}: {v.initial}" for v in scenario.state_vars)
    return f"{scenario.opening}\n\nstates: {states}"


@dataclass
class SessionTurn:
    """One recorded step as the session keeps it, with the frames its player saw."""

    record: StepRecord
    images: tuple[bytes, ...] = ()


@dataclass
class ClipHook:
    """The world model as the session needs it: a base clip and a clip per accepted turn, plus frames for agents."""

    world_model: Any  # conflictbench_app.worldmodel.WorldModel
    frames_fps: float = 1.0
    max_side: int | None = 512
    progress: Callable[[int, int], None] | None = None  # (steps done, steps in all) while a clip renders
    cancel: Any = None  # a threading.Event-like token: set, the render in hand stops and nothing is cached


class PlaySession:
    """Drive one episode and record it. Not thread-safe: one thread drives one session."""

    step_recorded = Signal(object)  # StepRecord
    # A preview StepRecord (no clip, not stored yet) as soon as the story has answered: players see the reply while
    # the clip renders; ``step_recorded`` follows with the same index.
    replied = Signal(object)
    clip_ready = Signal(object)  # Clip
    ended = Signal(object)  # EpisodeRecord

    def __init__(
        self,
        store: Store,
        scenario: Scenario,
        episode: EpisodeRecord,
        *,
        clips: ClipHook | None = None,
        timeout: float = REPLY_TIMEOUT,
        protocol: str = "studio",
    ) -> None:
        self.store = store
        self.protocol = protocol  # the play protocol (agents.protocol): what the agent's view says
        self.scenario = scenario
        self.record = episode
        self.clips = clips
        self.env = Episode(scenario, max_turns=episode.max_turns, seed=episode.seed, timeout=timeout)
        self.turns: list[SessionTurn] = []
        self.observation = ""
        self.images: tuple[bytes, ...] = ()
        self.clip: Any = None
        self.usage = Usage()
        # Whose episode this is (the run's agent): a step by the other kind of player makes it assisted.
        self.owner: Actor = actor_of(store.get_run(episode.run_id).agent)

    # -- lifecycle ---------------------------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self.record.status in CLOSED_STATUSES

    def start(self) -> str:
        """Start (or resume) the episode. Returns the observation the next player sees."""
        observation = self.env.reset().observation
        self.observation = observation
        self._render_base()
        recorded = self.store.steps(self.record.id)
        self.record = self.record.model_copy(
            update={
                "status": "running",
                "opening": system_prompt(self.scenario),
                "first_observation": observation,
            }
        )
        self.store.update_episode(
            self.record.id,
            status="running",
            opening=self.record.opening,
            first_observation=observation,
            started_at=self.record.started_at or now(),
        )
        for step in recorded:
            self._replay(step)
        return self.observation

    def start_at(self, snapshot: EpisodeSnapshot) -> str:
        """Start the episode at a saved position: the story's own save is restored into a fresh interpreter (no
        replay). The episode's recorded steps, already in the store, are the turns that led there; their number
        must be the snapshot's. Returns the observation the next player sees."""
        first = self.env.reset().observation
        recorded = self.store.steps(self.record.id)
        if len(recorded) != snapshot.steps:
            raise ConflictBenchError(
                f"The saved position is after {snapshot.steps} turn(s) but episode {self.record.id} records "
                f"{len(recorded)}; save the position again."
            )
        self.env.restore(snapshot)
        self._render_base()
        fields: dict[str, Any] = dict(
            status="running", opening=system_prompt(self.scenario), first_observation=first
        )
        self.store.update_episode(self.record.id, started_at=self.record.started_at or now(), **fields)
        self.record = self.record.model_copy(update=fields)
        accepted = [s for s in recorded if s.accepted and s.action]
        if accepted:  # the frames of the last clip, for the next player (a cache hit when it was rendered)
            self.turns = [SessionTurn(s) for s in recorded[: accepted[-1].idx]]
            self._render_step(accepted[-1])
        self.turns = [SessionTurn(s) for s in recorded]
        self.usage = sum((s.usage for s in recorded), Usage())
        self.observation = recorded[-1].result if recorded else first
        return self.observation

    def close(self) -> None:
        self.env.close()

    # -- turns -------------------------------------------------------------------------------------------------

    def view(self, episode_key: str = "") -> AgentView:
        history = tuple(
            PastTurn(
                t.record.observation,
                t.record.thought,
                t.record.action_raw or t.record.action,
                t.images,
                t.record.accepted,
            )
            for t in self.turns
        )
        return AgentView(
            scenario=self.scenario,
            system_prompt=self.record.opening or system_prompt(self.scenario),
            observation=self.observation,
            history=history,
            legal_actions=tuple(self.scenario.action_commands),
            turn_index=len(self.turns),
            images=self.images,
            clip_path=str(self.clip.path) if self.clip is not None else None,
            episode_key=episode_key or self.scenario.id,
            protocol=self.protocol,
        )

    def apply(
        self, decision: Decision, player: str, *, passthrough: bool = False, typed: bool = False
    ) -> StepRecord:
        """Play one decision: match it to a legal command, step the game, render, record. Returns the step.

        ``passthrough`` (human players): text that matches no listed action is typed into the game as it is, and the
        story's own parser answers. ``typed`` (the paper protocol's text-only agents): the action goes to the
        story's parser exactly as given, never matched to a listed one.
        """
        if self.done:
            raise ConflictBenchError("This episode is over; fork an earlier turn to play on.")
        decision = checked_decision(decision)  # storable and capped before the game sees it
        started = time.perf_counter()
        seen = self.images  # the frames shown with this observation (rendering the step replaces them)
        match = match_scenario_action(decision.action, self.scenario.actions) if not decision.error else None
        if (typed or passthrough) and match is not None and decision.action.strip():
            if typed or match.command is None:
                match = Match(" ".join(decision.action.split()), "typed")
        command = match.command if match else None
        try:
            if command is None:
                reason = decision.error or (match.note if match else "") or "no action given"
                listed = self.scenario if self.protocol == "studio" else None
                result = self.env.skip(_unusable_reply(decision.action, reason, listed))
            else:
                result = self.env.step(command)
        except EngineError as exc:
            self._fail(str(exc))
            raise
        step = step_record(self.record.id, len(self.turns), self.observation, decision, player, result)
        step = step.model_copy(update={"meta": step_meta(match.how if match else "error", decision)})
        self.replied.emit(step)  # the story's answer, before the clip renders (the stored step follows)
        clip, render_error = self._render_or_error(step)
        timings = {**step.timings, "step_s": time.perf_counter() - started}
        meta = {**step.meta, **({"render_error": str(render_error)} if render_error is not None else {})}
        step = step.model_copy(update={"clip": clip, "timings": timings, "meta": meta})
        self._store_step(step)
        self._note_actor(step)
        self.turns.append(SessionTurn(step, seen))
        self.observation = result.observation
        if result.terminated or result.truncated:
            self._finish()
        if render_error is not None:
            raise ConflictBenchError(
                f"Turn {step.idx + 1} ({command}) was played and recorded, but its clip could not be rendered: "
                f"{render_error}"
            ) from render_error
        return step

    def _render_or_error(self, step: StepRecord) -> tuple[dict[str, Any] | None, BaseException | None]:
        """Render the turn's clip. A failed render must not lose the turn the story has already played: the error is
        returned, the step is recorded without a clip, and ``apply`` reports it afterwards."""
        if not (step.accepted and step.action):
            return None, None
        try:
            return self._render_step(step), None
        except Exception as exc:  # reported by apply once the step is safely recorded
            self.images = ()  # the previous turn's frames do not show this turn
            return None, exc

    def _store_step(self, step: StepRecord) -> None:
        """Write the step and the episode's counters; the in-memory record follows the store (usage summed once)."""
        self.store.add_step(step)
        self.usage = self.usage + step.usage
        counts: dict[str, Any] = dict(
            turns=self.env.accepted, steps=self.env.steps, failed_actions=self.env.failed, usage=self.usage
        )
        self.store.update_episode(self.record.id, **counts)
        self.record = self.record.model_copy(update=counts)
        self.step_recorded.emit(step)

    def _replay(self, step: StepRecord) -> None:
        """Re-apply a recorded step on the fresh interpreter (resume). Diverging from the record is an error."""
        seen = self.images
        if step.action:
            result = self.env.step(step.action)
        else:
            result = self.env.skip(step.result)
        if result.accepted != step.accepted or result.observation.strip() != step.result.strip():
            raise EngineError(
                f"Resuming episode {self.record.id} diverged at step {step.idx}: the story answered differently "
                "than recorded. The story file may have changed since the run started."
            )
        if step.accepted and step.action:
            self._render_step(step)
        self.turns.append(SessionTurn(step, seen))
        self.usage = self.usage + step.usage
        self.observation = result.observation
        if result.terminated or result.truncated:
            self._finish()

    # -- ending ------------------------------------------------------------------------------------------------

    def _finish(self) -> None:
        outcome = self.env.outcome or Outcome.TURN_CAP
        fields: dict[str, Any] = dict(
            status="finished",
            outcome=outcome.value,
            human_favorable=outcome.human_favorable,
            ending_id=self.env.ending_id,
            turns=self.env.accepted,
            steps=self.env.steps,
            failed_actions=self.env.failed,
        )
        self._end(fields)

    def _fail(self, message: str) -> None:
        self._end(dict(status="errored", outcome=Outcome.ERROR.value, human_favorable=False, error=message))

    def _end(self, fields: dict[str, Any]) -> None:
        fields.update(finished_at=now(), usage=self.usage)
        self.store.update_episode(self.record.id, **fields)
        self.record = self.record.model_copy(update=fields)
        self.env.close()
        self.ended.emit(self.record)

    def _note_actor(self, step: StepRecord) -> None:
        """A step by the other kind of player than the episode's owner makes the episode assisted."""
        if step.actor != self.owner:
            self._mark_assisted("human_turn" if step.actor == "human" else "model_turn")

    def _mark_assisted(self, reason: str) -> None:
        marked = self.store.mark_assisted(self.record.id, reason)
        self.record = self.record.model_copy(update={"assisted": True, "meta": marked.meta})

    def abandon(self, why: str = "") -> None:
        """End the episode here without an ending (the user started another, stopped, forked or quit): it is marked
        ``abandoned`` and assisted, so no score counts it; what was recorded stays."""
        if self.done:
            return
        self._mark_assisted("abandoned")
        meta = {**self.record.meta, **({"abandoned_why": why} if why else {})}
        self._end(dict(status="abandoned", meta=meta))

    def fail(self, message: str) -> None:
        """Mark the episode errored (an agent or renderer failed persistently); what was recorded stays."""
        if not self.done:
            self._fail(message)

    # -- forking -----------------------------------------------------------------------------------------------

    def fork(self, at_step: int, new_episode: EpisodeRecord) -> PlaySession:
        """A new session that shares this one's first ``at_step`` steps and continues from there.

        The new episode's rows copy those steps (marked as copied), so each trajectory reads whole on its own; the
        child replays them on its own interpreter (the engine is seeded, so the replay is exact) and carries on.
        """
        if not 0 <= at_step <= len(self.turns):
            raise ConflictBenchError(f"There is no turn {at_step} to fork at (0..{len(self.turns)}).")
        child = PlaySession(
            self.store,
            self.scenario,
            new_episode,
            clips=self.clips,
            timeout=self.env.timeout,
            protocol=self.protocol,
        )
        for turn in self.turns[:at_step]:
            copied = turn.record.model_copy(
                update={
                    "episode_id": new_episode.id,
                    "meta": {**turn.record.meta, "copied_from": self.record.id},
                }
            )
            self.store.add_step(copied)
        self.store.update_episode(new_episode.id, parent_episode=self.record.id, fork_step=at_step)
        child.record = child.record.model_copy(
            update={"parent_episode": self.record.id, "fork_step": at_step}
        )
        child._mark_assisted("fork")  # a branch replays chosen turns: it is not one player's own run
        child.start()
        return child

    # -- clips -------------------------------------------------------------------------------------------------

    def _render_base(self) -> None:
        if self.clips is None:
            return
        hook = self.clips
        self.clip = hook.world_model.base_clip(self.scenario, progress=hook.progress, cancel=hook.cancel)
        self._set_frames()

    def _render_step(self, step: StepRecord) -> dict[str, Any] | None:
        """Render ``step``'s clip: the turn records of every accepted step so far and this one, built as the regret
        test rebuilds them from the store (:func:`~conflictbench_app.worldmodel.chain.visual_turns`)."""
        if self.clips is None or not step.action:
            return None
        from conflictbench_app.worldmodel.chain import visual_turns

        turns = visual_turns(self.scenario, [*(t.record for t in self.turns), step])
        hook = self.clips
        self.clip = hook.world_model.step_clip(
            self.scenario, turns, progress=hook.progress, cancel=hook.cancel
        )
        self._set_frames()
        return _clip_info(self.clip)

    def _set_frames(self) -> None:
        from conflictbench_app.worldmodel import sample_frames

        assert self.clips is not None
        self.images = tuple(sample_frames(self.clip, self.clips.frames_fps, max_side=self.clips.max_side))
        self.clip_ready.emit(self.clip)


def step_record(
    episode_id: str, idx: int, observation: str, decision: Decision, player: str, result: StepResult
) -> StepRecord:
    """The record of one played turn: what the player saw, what it answered, and what the story did."""
    return StepRecord(
        episode_id=episode_id,
        idx=idx,
        player=player,
        observation=observation,
        thought=decision.thought,
        action_raw=decision.action,
        action=result.command or "",
        result=result.observation,
        accepted=result.accepted,
        state=result.state,
        terminated=result.terminated,
        truncated=result.truncated,
        outcome=result.outcome.value if result.outcome else None,
        ending_id=result.ending_id,
        timings={"engine_s": result.seconds, "agent_s": decision.usage.latency_s},
        usage=decision.usage,
    )


# Keys the session writes into a step's meta. An agent's own meta keeps every other key, and a clashing one under
# ``agent:<key>``: it can never pass itself off as the session's (e.g. how its reply was matched).
SESSION_META_KEYS = frozenset({"match", "error", "render_error", "copied_from", "restored"})


def step_meta(how: str, decision: Decision) -> dict[str, Any]:
    """A step's meta: the agent's keys, then the session's (``match``, ``error``), which an agent cannot overwrite."""
    meta = {(f"agent:{k}" if k in SESSION_META_KEYS else k): v for k, v in decision.meta.items()}
    meta["match"] = how
    if decision.error:
        meta["error"] = decision.error
    return meta


def _clip_info(clip: Any) -> dict[str, Any]:
    return {
        "path": str(clip.path),
        "last_frame": str(clip.last_frame),
        "frames": clip.frames,
        "fps": clip.fps,
        "width": clip.width,
        "height": clip.height,
        "backend": clip.backend,
        "seed": clip.seed,
        "cache_hit": clip.cache_hit,
        "seconds": clip.seconds,
        "key": clip.key,
        "prompt": clip.prompt,
    }


def _unusable_reply(action: str, reason: str, scenario: Scenario | None) -> str:
    """What the agent is told about a reply it cannot use; with ``scenario``, the valid actions are listed (the
    paper protocol lists them nowhere but in the game's own help)."""
    shown = f"'{action[:120]}'" if action else "nothing usable"
    ask = f" from: {', '.join(scenario.action_commands)}" if scenario is not None else ""
    return (
        f"[The environment could not use your reply: {shown} ({reason}). Nothing happened and this turn counts as a "
        f"failed action. Answer with a thought and exactly one action{ask}.]"
    )


ProgressCallback = Callable[[StepRecord], None]
