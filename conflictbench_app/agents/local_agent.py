"""``local:smollm2-135m``: the embedded model as an agent and as a chat client, with no key and no network.

A 135M-parameter model cannot be trusted to follow the reply format, so the agent never depends on it:
it generates a short thought (one sentence, token-capped, never empty), then chooses the action by scoring every legal action's
likelihood as the continuation of ``ACTION:`` (a constrained choice). Every step's meta records the scores.
Temperature 0 is deterministic; above 0 the choice is sampled from the scores' softmax with a generator seeded by the
episode and turn, so a resumed episode repeats its choices.

The same model serves as a chat client (``get_chat_client("local:smollm2-135m")``) for the judge, the regret test
and single-turn runs, and behind ``conflictbench serve-local-llm`` as an OpenAI-compatible endpoint. It is a demo
model, not a subject of the benchmark: reports label its runs as such.
"""

from __future__ import annotations

import hashlib
import random
import time
from typing import Any

from conflictbench_app.agents.base import AgentView, Decision
from conflictbench_app.agents.chat import ChatReply
from conflictbench_app.agents.local_model import (
    DEFAULT_MODEL,
    LOOP,
    SENTENCE_END,
    LocalModel,
    get_local_model,
    softmax,
    spec_for,
)
from conflictbench_app.agents.react import build_messages
from conflictbench_app.agents.registry import register
from conflictbench_app.errors import AgentError
from conflictbench_app.records import Usage

PREFIX = "local"
THOUGHT_TOKENS = 40
MIN_THOUGHT_TOKENS = 6
# A thought is one sentence (and at most THOUGHT_TOKENS): the model's first full stop ends it, as a line break or the
# start of the action line does. A longer thought is mostly copied scene text, and costs a forward pass per few tokens.
# A thought that starts to repeat itself ends before the repeat. In a full run over our scenarios, 74 of the 114
# thoughts of 30 tokens or more were such loops ("the island of the island of ..."), and none of the 1,561 shorter.
THOUGHT_STOP = ("\n", "ACTION", "Action:", SENTENCE_END, LOOP)
OPTIONS = ("temperature", "thought_tokens", "context_turns")
DEMO_NOTE = "demo model (embedded, not a benchmark subject)"


def is_demo_agent(spec: str) -> bool:
    """Whether ``spec`` names the embedded demo model (reports label such runs)."""
    return spec.partition(":")[0] == PREFIX


class LocalAgent:
    """A ReAct agent on the embedded model: a generated thought, then a constrained choice among legal actions."""

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        *,
        temperature: float = 0.0,
        thought_tokens: int = THOUGHT_TOKENS,
        context_turns: int = 0,
        model: LocalModel | None = None,
    ) -> None:
        spec_for(model_name)  # an unknown name fails here, before any weights load
        self.name = f"{PREFIX}:{model_name}"
        self.model_name = model_name
        self.temperature = temperature
        self.thought_tokens = thought_tokens
        self.context_turns = context_turns
        self._model = model

    @property
    def model(self) -> LocalModel:
        if self._model is None:
            self._model = get_local_model(self.model_name)
        return self._model

    def act(self, view: AgentView) -> Decision:
        if not view.legal_actions:
            raise AgentError(
                f"{view.scenario.id} lists no actions; the embedded model chooses among listed ones."
            )
        started = time.perf_counter()
        model = self.model
        messages = build_messages(_recent(view, self.context_turns))
        prompt = model.prompt_ids(messages, "THINK:")
        thought = model.generate(
            prompt,
            max_new_tokens=self.thought_tokens,
            min_new_tokens=MIN_THOUGHT_TOKENS,
            temperature=self.temperature,
            seed=_seed(view),
            stop=THOUGHT_STOP,
            no_placeholder=True,
        )
        text = _clean_thought(thought.text)
        choice_ids = model.prompt_ids(messages, f"THINK: {text}\nACTION:")
        choosing = time.perf_counter()
        scores = model.score(choice_ids, list(view.legal_actions))
        action, probs = self._choose(view, [s.mean for s in scores])
        usage = Usage(
            prompt_tokens=len(choice_ids) + sum(s.tokens for s in scores),
            completion_tokens=thought.completion_tokens,
            calls=1,
            latency_s=time.perf_counter() - started,
        )
        meta = {
            "local_model": self.model_name,
            "local_precision": model.precision,
            "temperature": self.temperature,
            "action_scores": {s.choice: round(s.mean, 4) for s in scores},
            "action_probs": {s.choice: round(p, 4) for s, p in zip(scores, probs, strict=True)},
            # where the turn went: the thought (the new prompt tokens, then one pass per few generated tokens) and
            # the choice (one pass over the tokens of every action)
            "thought_s": round(thought.seconds, 4),
            "choice_s": round(time.perf_counter() - choosing, 4),
        }
        return Decision(
            action=action, thought=text, raw=f"THINK: {text}\nACTION: {action}", usage=usage, meta=meta
        )

    def _choose(self, view: AgentView, means: list[float]) -> tuple[str, list[float]]:
        actions = list(view.legal_actions)
        if self.temperature <= 0:
            probs = [1.0 if i == means.index(max(means)) else 0.0 for i in range(len(means))]
            return actions[means.index(max(means))], probs
        probs = softmax(means, self.temperature)
        rng = random.Random(_seed(view))
        return rng.choices(actions, weights=probs, k=1)[0], probs

    def close(self) -> None:
        """The model stays loaded for the process (other agents and clients share it)."""


class LocalChatClient:
    """The embedded model behind the chat-client interface the judge, regret and single-turn tools use."""

    def __init__(self, model_name: str = DEFAULT_MODEL, *, max_tokens: int = 256) -> None:
        spec_for(model_name)
        self.model_name = model_name
        self.name = f"{PREFIX}:{model_name}"
        self.default_max_tokens = max_tokens

    def complete(
        self, messages: list[dict[str, Any]], *, temperature: float = 0.0, max_tokens: int | None = None
    ) -> ChatReply:
        started = time.perf_counter()
        model = get_local_model(self.model_name)
        ids = model.prompt_ids(messages)
        out = model.generate(
            ids, max_new_tokens=max_tokens or self.default_max_tokens, temperature=temperature, seed=0
        )
        usage = Usage(
            prompt_tokens=out.prompt_tokens,
            completion_tokens=out.completion_tokens,
            calls=1,
            latency_s=time.perf_counter() - started,
        )
        return ChatReply(out.text, usage, self.name, None, {"local_model": self.model_name})

    def close(self) -> None:
        pass


def _recent(view: AgentView, turns: int) -> AgentView:
    """The view with only its last ``turns`` turns of history (0: all of it). The whole history is the default: the
    model's key/value cache keeps the shared prefix from turn to turn, so a long context costs little."""
    from dataclasses import replace

    return replace(view, history=view.history[-turns:]) if turns > 0 else view


def _clean_thought(text: str) -> str:
    text = " ".join(text.replace("THINK:", " ").split()).strip(" :-")
    return text or "(no thought)"


def _seed(view: AgentView) -> int:
    key = f"{view.episode_key or view.scenario.id}|{view.turn_index}"
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)


@register(PREFIX)
def _local(arg: str, options: dict[str, Any]) -> LocalAgent:
    unknown = set(options) - set(OPTIONS)
    if unknown:
        raise AgentError(f"Unknown option(s) for local:{arg or DEFAULT_MODEL}: {', '.join(sorted(unknown))}.")
    return LocalAgent(
        arg or DEFAULT_MODEL,
        temperature=float(options.get("temperature") or 0.0),
        thought_tokens=int(options.get("thought_tokens") or THOUGHT_TOKENS),
        context_turns=int(options.get("context_turns") or 0),
    )
