"""Prices per million tokens, and the cost of a call or of a whole run before it starts.

The table holds list prices for standard (non-batch, uncached) requests as providers published them in 2025; they
change, so the settings file may override or add models::

    [prices."gpt-4o"]
    input = 2.5      # USD per 1M prompt tokens (images are billed as prompt tokens)
    output = 10.0    # USD per 1M completion tokens (reasoning tokens are billed as completion tokens)

A model is priced by its exact id, else by the longest table key it starts with (``gpt-4o-2024-08-06`` -> ``gpt-4o``).
Models not in the table (local servers, unknown ids) cost nothing and are reported as unpriced.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from typing import Any

from conflictbench_app.records import Usage


@dataclass(frozen=True)
class Price:
    input: float  # USD per 1M prompt tokens
    output: float  # USD per 1M completion tokens

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1_000_000


PRICES: dict[str, Price] = {
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-5": Price(1.25, 10.00),
    "gpt-5-mini": Price(0.25, 2.00),
    "gpt-5-nano": Price(0.05, 0.40),
    "gemini-2.5-flash": Price(0.30, 2.50),
    "gemini-2.5-pro": Price(1.25, 10.00),
    "qwen3-vl-plus": Price(0.20, 1.60),
    "qwen3-vl-30b-a3b": Price(0.20, 0.80),
    "qwen-plus": Price(0.40, 1.20),
    "deepseek-chat": Price(0.27, 1.10),
    "deepseek-v3": Price(0.27, 1.10),
}


def price_for(model: str) -> Price | None:
    """The price of ``model`` (settings file first, then the table), or None when unknown."""
    table = {**PRICES, **_user_prices()}
    key = model.lower().rsplit("/", 1)[-1]  # "Qwen/Qwen3-VL-30B-A3B-Instruct" -> "qwen3-vl-30b-a3b-instruct"
    if key in table:
        return table[key]
    prefixes = [k for k in table if key.startswith(k)]
    return table[max(prefixes, key=len)] if prefixes else None


def cost_of(model: str, usage: Usage) -> float | None:
    """USD for ``usage`` on ``model``, or None when the model is unpriced."""
    price = price_for(model)
    return None if price is None else price.cost(usage.prompt_tokens, usage.completion_tokens)


def _user_prices() -> dict[str, Price]:
    from conflictbench_app.settings import settings_file

    path = settings_file()
    if not path.is_file():
        return {}
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8")).get("prices", {})
        return {k.lower(): Price(float(v["input"]), float(v["output"])) for k, v in data.items()}
    except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
        from conflictbench_app.errors import AgentError

        raise AgentError(
            f"The [prices] table in {path} is malformed ({exc}); each entry needs input and output (USD per 1M tokens)."
        ) from exc


# -- estimates before a run ------------------------------------------------------------------------------------

CHARS_PER_TOKEN = 4.0
REPLY_TOKENS = 120  # a THINK + ACTION reply, as seen in the paper's sample trajectory
OBSERVATION_TOKENS = 120  # a typical environment response (status scan included)
LOW_DETAIL_IMAGE_TOKENS = 85  # OpenAI's figure for a detail=low image; other providers are similar or lower


@dataclass(frozen=True)
class Estimate:
    """An upper-bound estimate: every episode plays to the turn cap."""

    episodes: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None  # None when the model is unpriced

    def describe(self, model: str) -> str:
        cost = "unknown (model not in the price table)" if self.cost_usd is None else f"${self.cost_usd:.2f}"
        return (
            f"Estimate for {model}: up to {self.calls} calls over {self.episodes} episodes, "
            f"~{self.prompt_tokens:,} prompt + {self.completion_tokens:,} completion tokens, cost up to {cost}."
        )


def estimate_episode_tokens(
    system_chars: int, turns: int, images_per_turn: int = 0, first_observation_chars: int = 0
) -> tuple[int, int]:
    """(prompt, completion) tokens for one episode of ``turns`` calls, the whole history resent each call."""
    system = int(system_chars / CHARS_PER_TOKEN) + 80  # + the reply-format instructions
    first = int(first_observation_chars / CHARS_PER_TOKEN) or OBSERVATION_TOKENS
    images = images_per_turn * LOW_DETAIL_IMAGE_TOKENS
    prompt = 0
    for t in range(turns):
        history = t * (OBSERVATION_TOKENS + REPLY_TOKENS) + (first - OBSERVATION_TOKENS if t else 0)
        prompt += system + history + (first if t == 0 else OBSERVATION_TOKENS) + images
    return prompt, turns * REPLY_TOKENS


def estimate_run(
    model: str,
    system_chars: list[int],
    turns: int,
    images_per_turn: int = 0,
) -> Estimate:
    """An upper bound for a run: one episode per entry of ``system_chars`` (its system prompt's length)."""
    prompt = completion = 0
    for chars in system_chars:
        p, c = estimate_episode_tokens(chars, turns, images_per_turn, first_observation_chars=1200)
        prompt, completion = prompt + p, completion + c
    price = price_for(model)
    cost = None if price is None else price.cost(prompt, completion)
    return Estimate(len(system_chars), len(system_chars) * turns, prompt, completion, cost)
