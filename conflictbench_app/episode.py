"""A Gym-like episode over one scenario: ``reset()`` then ``step(command)`` until terminated or truncated.

``terminated`` means the story reached an ending; ``truncated`` means the run-level turn cap was hit (every agent turn
counts toward the cap; failed actions do not count toward the story's own clock, which the story itself enforces).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conflictbench_app.engine.glulxe import GlulxGame
from conflictbench_app.errors import EngineError
from conflictbench_app.scenarios.meta import meta_refusal
from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.scenarios.protocol import EndingSeen, Outcome, Position, story_protocol
from conflictbench_app.settings import REPLY_TIMEOUT, turn_cap

__all__ = ["Episode", "EpisodeSnapshot", "Outcome", "StepResult"]


@dataclass(frozen=True)
class StepResult:
    """What one turn did (or, from :meth:`Episode.reset`, what the opening showed).

    ``terminated``: the story reached an ending (``ending`` says which); ``truncated``: the run-level turn cap was hit
    without an ending (``outcome`` is ``TURN_CAP``). Never both. ``outcome`` is None while the episode goes on.
    """

    observation: str  # what the player sees next: the story's answer (or the opening and the action list)
    terminated: bool
    truncated: bool
    state: dict[str, Any]  # the story's variables after the turn
    accepted: bool  # did the story accept the command (a failed action otherwise)
    outcome: Outcome | None = None
    ending: EndingSeen | None = None  # set exactly when terminated
    command: str | None = None  # what was typed into the game (None: nothing was, e.g. an unusable reply)
    state_before: dict[str, Any] = field(default_factory=dict)
    turn: int = 0  # accepted actions so far
    steps: int = 0  # turns so far, failed ones included
    failed_actions: int = 0
    seconds: float = 0.0  # the interpreter's time for this turn

    @property
    def ending_id(self) -> str | None:
        return self.ending.ending_id if self.ending else None

    @property
    def human_favorable(self) -> bool | None:
        """True/False once the story ended; None while it goes on and at the turn cap (no ending was reached)."""
        return self.ending.human_favorable if self.ending else None


@dataclass
class EpisodeSnapshot:
    """Everything needed to fork an episode at a turn: the game's save file plus the episode's counters."""

    game: bytes
    steps: int
    accepted: int
    failed: int
    position: Position
    last_text: str
    history: list[str] = field(default_factory=list)

    @property
    def state(self) -> dict[str, Any]:
        return dict(self.position.state)


class Episode:
    """One play-through of a scenario, owning one interpreter process. Close it (or use ``with``).

    ``max_turns`` defaults to the text-only cap of the settings (:func:`conflictbench_app.settings.turn_cap`).
    The story's rules (state, acceptance, endings) are its protocol's (:func:`~conflictbench_app.scenarios.protocol.
    story_protocol`); the episode only counts turns and applies the run-level cap.
    """

    def __init__(
        self,
        scenario: Scenario,
        *,
        max_turns: int | None = None,
        seed: int = 1,
        timeout: float = REPLY_TIMEOUT,
    ) -> None:
        self.scenario = scenario
        self.protocol = story_protocol(scenario)
        self.max_turns = max_turns if max_turns is not None else turn_cap("text")
        self.seed = seed
        self.timeout = timeout
        self._game: GlulxGame | None = None
        self.steps = 0
        self.accepted = 0
        self.failed = 0
        self.position = Position(dict(scenario.initial_state))
        self.outcome: Outcome | None = None
        self.ending: EndingSeen | None = None
        self.history: list[str] = []
        self.opening_text = self.help_text = ""
        self._last_text = ""

    @property
    def state(self) -> dict[str, Any]:
        """The story's variables now."""
        return dict(self.position.state)

    @property
    def ending_id(self) -> str | None:
        return self.ending.ending_id if self.ending else None

    # -- contract ----------------------------------------------------------------------------------------------

    def reset(self, seed: int | None = None) -> StepResult:
        """Start the story afresh. Returns the first observation (opening text and the action list) as a result
        that is neither terminated nor truncated; the two parts are kept as :attr:`opening_text` and
        :attr:`help_text`."""
        self.close()
        if seed is not None:
            self.seed = seed
        self._game = GlulxGame(self.scenario.story_file, seed=self.seed, timeout=self.timeout)
        opening = self._game.start()
        self.steps = self.accepted = self.failed = 0
        self.outcome, self.ending, self.history = None, None, []
        self.position = self.protocol.start(opening)
        help_text = self._help_text()
        self._last_text = opening.text
        self.opening_text, self.help_text = opening.text, help_text
        observation = help_text if self.scenario.help_first else f"{opening.text}\n\n{help_text}".strip()
        return self._result(observation, accepted=True, before=self.state, command=None)

    def step(self, command: str) -> StepResult:
        """Type one command. Raises EngineError if the interpreter fails (the caller records the episode as errored)."""
        game = self._require_game()
        self._require_playing()
        command = " ".join(command.split())
        refusal = meta_refusal(command, _listed(self.scenario))
        if refusal is not None:  # never typed into the game: it would change the story behind the record
            return self.skip(refusal, command=command)
        before = self.state
        out = game.send(command)
        reading = self.protocol.read(self.position, command, out)
        self.position = reading.position
        self._count(command, reading.accepted)
        if reading.ending is not None:
            self.ending, self.outcome = reading.ending, reading.ending.outcome
        else:
            self._apply_cap()
        self._last_text = out.text
        return self._result(
            out.text, accepted=reading.accepted, before=before, command=command, seconds=out.seconds
        )

    def skip(self, message: str, *, command: str = "") -> StepResult:
        """Count a turn whose reply could not be used: a failed action, nothing sent to the game."""
        self._require_game()
        self._require_playing()
        before = self.state
        self._count(command, False)
        self._apply_cap()
        return self._result(message, accepted=False, before=before, command=None)

    def close(self) -> None:
        if self._game is not None:
            self._game.close()
            self._game = None

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- forking -----------------------------------------------------------------------------------------------

    def snapshot(self) -> EpisodeSnapshot:
        game = self._require_game()
        return EpisodeSnapshot(
            game.snapshot(),
            self.steps,
            self.accepted,
            self.failed,
            self.position,
            self._last_text,
            list(self.history),
        )

    def restore(self, snap: EpisodeSnapshot) -> None:
        """Return to a snapshot taken in this or another episode of the same scenario."""
        if self._game is None:
            self.reset()
        self._require_game().load_snapshot(snap.game)
        self.steps, self.accepted, self.failed = snap.steps, snap.accepted, snap.failed
        self.position, self._last_text, self.history = snap.position, snap.last_text, list(snap.history)
        self.outcome, self.ending = None, None

    # -- bookkeeping -------------------------------------------------------------------------------------------

    def _require_game(self) -> GlulxGame:
        if self._game is None:
            raise EngineError("The episode has not been started; call reset() first.")
        return self._game

    def _require_playing(self) -> None:
        if self.outcome is not None:
            raise EngineError("The episode is over; reset it (or fork an earlier turn) to play on.")

    def _count(self, command: str, accepted: bool) -> None:
        self.steps += 1
        self.accepted += accepted
        self.failed += not accepted
        self.history.append(command)

    def _apply_cap(self) -> None:
        """The run-level cap: every turn counts, failed ones included. Truncation is not an ending."""
        if self.steps >= self.max_turns:
            self.outcome = Outcome.TURN_CAP

    def _help_text(self) -> str:
        cached = self.scenario.extra.get("help_text")
        if cached:
            return str(cached)
        if not self.protocol.help_is_free:
            return ""
        return self._require_game().send("help").text

    def _result(
        self,
        observation: str,
        *,
        accepted: bool,
        before: dict[str, Any],
        command: str | None,
        seconds: float = 0.0,
    ) -> StepResult:
        return StepResult(
            observation=observation,
            terminated=self.ending is not None,
            truncated=self.ending is None and self.outcome is Outcome.TURN_CAP,
            state=self.state,
            accepted=accepted,
            outcome=self.outcome,
            ending=self.ending,
            command=command,
            state_before=before,
            turn=self.accepted,
            steps=self.steps,
            failed_actions=self.failed,
            seconds=seconds,
        )


def _listed(scenario: Scenario) -> frozenset[str]:
    """The scenario's own commands and synonyms: never mistaken for interpreter meta-commands."""
    return frozenset(w.lower() for a in scenario.actions for w in (a.command, *a.synonyms))
