"""The Qt face of a PlaySession: it drives the session on its own worker thread and re-emits the session's events
as queued Qt signals, keeping a GUI-side copy of the recorded steps for the widgets.

Whoever takes a turn (a human typing, or an agent backend) goes through the same PlaySession.apply, so the store
records who played each turn. Take-over and hand-over are just a different player for the next turn.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from conflictbench_app.agents.base import Decision
from conflictbench_app.errors import ConflictBenchError
from conflictbench_app.records import CLOSED_STATUSES, EpisodeRecord, StepRecord, Usage
from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.settings import REPLY_TIMEOUT
from conflictbench_app.ui.video import ClipFrames, clip_frames
from conflictbench_app.ui.workers import SerialWorker


@dataclass(frozen=True)
class SessionOptions:
    """How to open a play session."""

    player: str  # who starts: "human:<name>" or an agent spec
    setting: str = "multimodal"  # "text" or "multimodal" (clips each turn)
    renderer: str = "schematic"
    renderer_options: tuple[tuple[str, Any], ...] = ()
    max_turns: int | None = None  # None: the setting's cap in the settings
    seed: int = 1
    engine_timeout: float = REPLY_TIMEOUT
    protocol: str = "paper"  # the play protocol (agents.protocol), as on `conflictbench run`


@dataclass(frozen=True)
class Opened:
    record: EpisodeRecord
    observation: str
    steps: tuple[StepRecord, ...] = ()


class LiveSession(QObject):
    """One episode being played in the app. Signals arrive on the GUI thread."""

    opened = Signal(object)  # Opened (also after a fork: the new branch)
    stepRecorded = Signal(object)  # StepRecord
    replied = Signal(object)  # a preview StepRecord: the story's answer, before the turn's clip is rendered
    clipReady = Signal(object)  # ClipFrames
    ended = Signal(object)  # EpisodeRecord
    error = Signal(str)
    busyChanged = Signal(bool)
    renderProgress = Signal(int, int)  # (steps done, steps in all) of the clip being rendered
    positionSaved = Signal(object)  # (SavedPosition, Path written)

    def __init__(self, db_path: Path | str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.db_path = Path(db_path)
        self.worker = SerialWorker(self, "play-session")
        self.worker.busyChanged.connect(self.busyChanged)
        self.stepRecorded.connect(self._mirror_step)
        self.ended.connect(self._mirror_end)
        # GUI-side state (read by widgets)
        self.scenario: Scenario | None = None
        self.record: EpisodeRecord | None = None
        self.steps: list[StepRecord] = []
        self.observation = ""
        self.usage = Usage()
        # Worker-side state (touched only inside jobs)
        self._store: Any = None
        self._session: Any = None
        self._agents: dict[str, Any] = {}
        self._pending_clip: Any = None
        self._clips: Any = None
        self._cancel = threading.Event()  # set on close: a long render stops instead of holding the window
        self._last_progress = (-1, -1)

    # -- GUI-side API ------------------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self.worker.busy

    @property
    def done(self) -> bool:
        return self.record is not None and self.record.status in CLOSED_STATUSES

    @property
    def in_progress(self) -> bool:
        """An episode is open and has not reached an ending (leaving it now abandons it)."""
        return self.record is not None and not self.done

    def open(self, scenario: Scenario, options: SessionOptions) -> None:
        """Start a new recorded episode of ``scenario``. An episode still in progress is marked abandoned first (ask
        the user before calling this); what it recorded stays."""
        self.scenario = scenario
        self.worker.submit(lambda: self._open(scenario, options), self._on_opened, self.error.emit)

    def human_turn(self, line: str, player: str) -> None:
        """Play a typed line as ``player`` (``human:<name>``)."""
        # passthrough: a line that matches no listed action goes to the story, whose own parser answers it (the
        # model-facing "answer with a thought and one action" note is for agents only).
        job = lambda: self._apply(Decision(action=line), player, passthrough=True)  # noqa: E731
        self.worker.submit(job, None, self.error.emit)

    def agent_turn(self, spec: str, options: dict[str, Any] | None = None) -> None:
        """Let the agent ``spec`` take one turn."""
        self.worker.submit(lambda: self._agent_turn(spec, options or {}), None, self.error.emit)

    def stop(self, why: str = "Stopped by the user before an ending.") -> None:
        """End the open episode here, without an ending: it is marked abandoned (no score counts it)."""
        self.worker.submit(lambda: self._stop(why), None, self.error.emit)

    def fork(self, at_step: int) -> None:
        """Branch a new episode that keeps the first ``at_step`` steps; play continues on the branch."""
        self.worker.submit(lambda: self._fork(at_step), self._on_opened, self.error.emit)

    def save_position(self, path: Path | str) -> None:
        """Save the open episode's position to ``path`` (the story's own save and where it was taken);
        ``positionSaved`` says where it went."""
        self.worker.submit(lambda: self._save_position(path), self.positionSaved.emit, self.error.emit)

    def restore_position(self, path: Path | str, scenario: Scenario) -> None:
        """Go on from the position saved in ``path``, in a new branch of the episode it was saved from (marked
        assisted: a restore is not a model's move). An episode in progress is marked abandoned first."""
        self.scenario = scenario
        self.worker.submit(lambda: self._restore_position(path, scenario), self._on_opened, self.error.emit)

    def close(self) -> None:
        """End the session's thread and close the store. An episode still in progress is marked abandoned (the
        window asks first); what it recorded stays."""
        self._cancel.set()
        self.worker.stop()
        self._close_all()  # the thread has ended: nothing else touches the session now

    # -- GUI-side slots ----------------------------------------------------------------------------------------

    @Slot(object)
    def _mirror_step(self, step: StepRecord) -> None:
        if self.record is None or step.episode_id != self.record.id:
            return
        self.steps.append(step)
        self.observation = step.result
        self.usage = self.usage + step.usage

    @Slot(object)
    def _mirror_end(self, record: EpisodeRecord) -> None:
        if self.record is not None and record.id == self.record.id:
            self.record = record

    def _on_opened(self, opened: Opened) -> None:
        self.record = opened.record
        self.steps = list(opened.steps)
        self.observation = opened.observation
        self.usage = sum((s.usage for s in self.steps), Usage())
        self.opened.emit(opened)

    # -- worker-side jobs --------------------------------------------------------------------------------------

    def _open(self, scenario: Scenario, options: SessionOptions) -> Opened:
        from conflictbench_app.runs import RunConfig, create_run, open_episode
        from conflictbench_app.store import Store

        self._close_session()
        if self._store is None:
            self._store = Store(self.db_path)
        config = RunConfig(
            agent=options.player,
            setting=options.setting,
            scenarios=scenario.id,
            max_turns=options.max_turns,
            seed=options.seed,
            engine_timeout=options.engine_timeout,
            renderer=options.renderer,
            renderer_options=dict(options.renderer_options),
            protocol=options.protocol,
        )
        run = create_run(self._store, config, [scenario], note="desktop app")
        session = open_episode(
            self._store, run, scenario, progress=self._on_render_progress, cancel=self._cancel
        )
        self._clips = session.clips
        self._adopt(session)
        observation = session.start()
        self._flush_clip()
        return Opened(session.record, observation)

    def _adopt(self, session: Any) -> None:
        self._session = session
        session.step_recorded.connect(self._emit_step)
        session.replied.connect(self._emit_replied)
        session.ended.connect(self._emit_ended)
        session.clip_ready.connect(self._note_clip)

    # psygnal handlers, called on the worker thread; the Qt signals queue them to the GUI thread.
    def _emit_step(self, step: StepRecord) -> None:
        self.stepRecorded.emit(step)

    def _emit_replied(self, preview: StepRecord) -> None:
        self.replied.emit(preview)

    def _emit_ended(self, record: EpisodeRecord) -> None:
        if self._store is not None:
            self._store.settle_run(record.run_id)  # a run started from the app is finished with its episode
        self.ended.emit(record)

    def _on_render_progress(self, done: int, total: int) -> None:
        """Called by the world model on the worker thread; forwarded (once per whole percent) to the GUI."""
        percent = (100 * done) // max(total, 1)
        if (percent, total) != self._last_progress:
            self._last_progress = (percent, total)
            self.renderProgress.emit(done, total)

    def _note_clip(self, clip: Any) -> None:
        self._pending_clip = clip

    def _flush_clip(self) -> None:
        """Decode the newest clip once per job (a fork's replay renders many; only the last is shown)."""
        clip, self._pending_clip = self._pending_clip, None
        if clip is None or self._session is None:
            return
        turn = len(self._session.turns)
        title = "Opening scene" if turn == 0 else f"Turn {turn}: {self._session.turns[-1].record.action}"
        frames: ClipFrames = clip_frames(clip, self._session.images, title)
        self.clipReady.emit(frames)

    def _require_session(self) -> Any:
        if self._session is None:
            raise ConflictBenchError("Choose a scenario and press Start first.")
        return self._session

    def _apply(
        self, decision: Decision, player: str, *, passthrough: bool = False, typed: bool = False
    ) -> StepRecord:
        session = self._require_session()
        try:
            return session.apply(decision, player=player, passthrough=passthrough, typed=typed)
        finally:
            self._flush_clip()

    def _agent_turn(self, spec: str, options: dict[str, Any]) -> StepRecord:
        session = self._require_session()
        if session.done:
            raise ConflictBenchError("This episode is over; fork an earlier turn to play on.")
        agent = self._agents.get(spec)
        if agent is None:
            from conflictbench_app.agents.registry import get_agent

            agent = self._agents[spec] = get_agent(spec, **options)
        decision = agent.act(session.view())
        from conflictbench_app.agents.protocol import play_protocol

        setting = "text" if session.clips is None else "multimodal"
        return self._apply(
            decision, agent.name, typed=play_protocol(session.protocol).typed_commands(setting)
        )

    def _stop(self, why: str) -> None:
        session = self._require_session()
        session.abandon(why)  # emits ``ended`` (the GUI shows it) and settles the run

    def _fork(self, at_step: int) -> Opened:
        session = self._require_session()
        from conflictbench_app.runs import new_episode

        parent = session.record
        record = new_episode(self._store, self._store.get_run(parent.run_id), session.scenario)
        child = session.fork(at_step, record)
        self._pending_clip = child.clip
        self._close_session(f"Branched before turn {at_step + 1}; play went on in episode {record.id}.")
        self._store.set_run_status(parent.run_id, "running")  # the branch is the run's open episode now
        self._adopt(child)
        self._flush_clip()
        return Opened(child.record, child.observation, tuple(self._store.steps(record.id)))

    def _save_position(self, path: Path | str) -> Any:
        from conflictbench_app.positions import position_path, save_position

        return save_position(self._require_session(), path), position_path(path)

    def _restore_position(self, path: Path | str, scenario: Scenario) -> Opened:
        from conflictbench_app.positions import read_position, restore_position
        from conflictbench_app.runs import open_episode
        from conflictbench_app.store import Store

        position = read_position(path)
        if self._store is None:
            self._store = Store(self.db_path)
        run = self._store.get_run(position.run_id)
        if scenario.id != position.scenario_id:
            raise ConflictBenchError(
                f"This position is of {position.scenario_id}; open that scenario in the Library first."
            )
        child = open_episode(
            self._store, run, scenario, progress=self._on_render_progress, cancel=self._cancel
        )
        try:
            restore_position(position, child)
        except BaseException:  # the branch stays recorded, as abandoned; the episode in hand goes on
            child.abandon("The saved position could not be restored.")
            self._store.settle_run(run.id)
            child.close()
            raise
        self._close_session(f"Left for a saved position; play went on in episode {child.record.id}.")
        self._clips = child.clips
        self._store.set_run_status(run.id, "running")  # the branch is the run's open episode now
        self._adopt(child)
        self._pending_clip = child.clip
        self._flush_clip()
        return Opened(child.record, child.observation, tuple(self._store.steps(child.record.id)))

    def _close_session(self, why: str = "Left for another episode before an ending.") -> None:
        """Close the session in hand; one still in progress is marked abandoned and its run settled."""
        session, self._session = self._session, None
        if session is None:
            return
        session.step_recorded.disconnect(self._emit_step)
        session.replied.disconnect(self._emit_replied)
        session.ended.disconnect(self._emit_ended)
        session.clip_ready.disconnect(self._note_clip)
        if not session.done:
            session.abandon(why)
            self._store.settle_run(session.record.run_id)
        session.close()

    def _close_all(self) -> None:
        self._close_session("The app was closed before an ending.")
        for agent in self._agents.values():
            agent.close()
        self._agents.clear()
        if self._store is not None:
            self._store.close()
            self._store = None
