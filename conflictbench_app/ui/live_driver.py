"""Who takes the next turn of a live session: the human at the keyboard, or a model that plays on by itself.

The driver holds no widgets: the Play view shows its state and calls it; it follows the session's signals
(a step recorded, an episode opened or ended, an error) to schedule the model's next turn or hand the turn back.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from conflictbench_app.ui.live import LiveSession

HUMAN = "human"


class LiveDriver(QObject):
    """Who plays the next turn, and whether a model plays on by itself (with a delay the user sets)."""

    changed = Signal()

    def __init__(self, live: LiveSession, player_name: str, parent: QObject) -> None:
        super().__init__(parent)
        self.live = live
        self.player_name = player_name
        self.agent = ""  # the agent spec, when a model is driving
        self.agent_options: dict[str, dict[str, Any]] = {}  # spec -> options (e.g. base_url), never keys
        self.auto = False
        self.delay_ms = 400
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._tick)
        live.stepRecorded.connect(self._after_step)
        live.opened.connect(self._after_step)
        live.ended.connect(lambda _r: self.pause())
        # A model that fails hands the turn back to the human (who may hand over again, e.g. after a network error).
        live.error.connect(lambda _m: self.take_over())

    @property
    def human(self) -> str:
        return f"human:{self.player_name or 'player'}"

    @property
    def model_driving(self) -> bool:
        return bool(self.agent)

    def hand_over(self, spec: str, *, run: bool = True) -> None:
        """A model takes the next turns."""
        self.agent = spec
        self.auto = run
        self.changed.emit()
        if run:
            self._schedule(0)

    def take_over(self) -> None:
        """The human plays the next turn; the model stops after the turn in flight, if any."""
        self.agent = ""
        self.pause()

    def run(self) -> None:
        if self.agent:
            self.auto = True
            self.changed.emit()
            self._schedule(0)

    def pause(self) -> None:
        self.auto = False
        self._timer.stop()
        self.changed.emit()

    def stop(self) -> None:
        """End the episode here: no further turns are asked of anyone, and the episode is marked abandoned (it has
        no ending, so no score counts it); what was recorded stays. Use Take over to play on yourself."""
        self.agent = ""
        self.pause()
        if self.live.in_progress:
            self.live.stop()

    def step(self) -> None:
        if self.agent and not self.live.busy and not self.live.done:
            self.live.agent_turn(self.agent, self.agent_options.get(self.agent))

    def close(self) -> None:
        self.auto = False
        self._timer.stop()

    def _after_step(self, _event: Any) -> None:
        if self.auto and self.agent and not self.live.done:
            self._schedule(self.delay_ms)

    def _schedule(self, delay: int) -> None:
        self._timer.start(delay)

    def _tick(self) -> None:
        if not (self.auto and self.agent) or self.live.done:
            return
        if self.live.busy:
            self._schedule(50)
            return
        self.live.agent_turn(self.agent, self.agent_options.get(self.agent))
