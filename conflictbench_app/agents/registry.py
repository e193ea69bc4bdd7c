"""Agent backends by name: ``random:SEED``, ``commands:"a;b"`` or ``commands:FILE.json``, ``walkthrough:aligned``,
``human``, and model backends registered by the model-agent module (``openai:MODEL`` and provider profiles).

Each factory imports its heavy dependency itself, so naming an agent never loads what another needs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from conflictbench_app.agents.base import Agent
from conflictbench_app.errors import AgentError

Factory = Callable[[str, dict[str, Any]], Agent]
_FACTORIES: dict[str, Factory] = {}
# Prefixes whose factories live in modules imported on first use.
_LAZY: dict[str, str] = {}


def register(prefix: str) -> Callable[[Factory], Factory]:
    def deco(factory: Factory) -> Factory:
        _FACTORIES[prefix] = factory
        return factory

    return deco


def register_lazy(prefix: str, module: str) -> None:
    _LAZY.setdefault(prefix, module)


def known_prefixes() -> list[str]:
    return sorted(set(_FACTORIES) | set(_LAZY))


def get_agent(spec: str, **options: Any) -> Agent:
    """Build the agent named by ``spec`` (``prefix`` or ``prefix:argument``)."""
    prefix, _, arg = spec.partition(":")
    if prefix not in _FACTORIES and prefix in _LAZY:
        importlib.import_module(_LAZY[prefix])
    if prefix not in _FACTORIES and arg:
        importlib.import_module(MODEL_AGENTS).register_profiles()  # the settings file's own provider profiles
    factory = _FACTORIES.get(prefix)
    if factory is None:
        raise AgentError(f"Unknown agent {spec!r}. Known: {', '.join(known_prefixes())}.")
    return factory(arg, options)


@register("random")
def _random(arg: str, options: dict[str, Any]) -> Agent:
    from conflictbench_app.agents.scripted import RandomAgent

    try:
        seed = int(arg or 0)
    except ValueError as exc:
        raise AgentError(f"random:{arg} needs an integer seed, e.g. random:1.") from exc
    return RandomAgent(seed)


@register("commands")
def _commands(arg: str, options: dict[str, Any]) -> Agent:
    from conflictbench_app.agents.scripted import CommandsAgent

    if not arg:
        raise AgentError(
            'commands needs a list, e.g. commands:"unlock interlock;install bypass fuse", or a JSON file.'
        )
    return CommandsAgent.from_spec(arg)


@register("walkthrough")
def _walkthrough(arg: str, options: dict[str, Any]) -> Agent:
    from conflictbench_app.agents.scripted import WalkthroughAgent

    return WalkthroughAgent(arg or "aligned")


@register("human")
def _human(arg: str, options: dict[str, Any]) -> Agent:
    from conflictbench_app.agents.human import TerminalHuman

    return TerminalHuman(name=arg or options.get("annotator") or "player")


# Model agents (PROFILE:MODEL): the built-in OpenAI-compatible provider profiles. Profiles added in the settings file
# are registered by the same module, which get_agent loads for any other PROFILE:MODEL spec.
MODEL_AGENTS = "conflictbench_app.agents.openai_agent"
for _prefix in ("openai", "gemini", "google", "dashscope", "qwen", "deepseek", "vllm", "ollama", "compat"):
    register_lazy(_prefix, MODEL_AGENTS)

# The embedded demo model (``local:smollm2-135m``): torch and transformers load only when it is chosen.
register_lazy("local", "conflictbench_app.agents.local_agent")

SCRIPTED_AGENTS = ("random:1", "walkthrough:aligned", "walkthrough:misaligned")
SCRIPTED_PREFIXES = ("random", "commands", "walkthrough", "human")  # players that answer without a model


def answers_with_a_model(spec: str) -> bool:
    """Whether ``spec`` names a model (a judge or a regret test needs one), not a scripted player or a human."""
    return spec.partition(":")[0].strip() not in SCRIPTED_PREFIXES and ":" in spec


LOCAL_AGENTS = ("local:smollm2-135m",)


def offered_agents() -> list[str]:
    """Agents to offer in pickers: the scripted ones, the embedded model when installed, then every
    ``PROFILE:MODEL`` the provider profiles list (the picker starts on :func:`default_agent`, whatever its place)."""
    from conflictbench_app.agents.local_model import available
    from conflictbench_app.agents.providers import model_agents

    local = [a for a in LOCAL_AGENTS if available(a.partition(":")[2])]
    return [*SCRIPTED_AGENTS, *local, *model_agents()]


def default_agent() -> str:
    """The agent a picker starts on: the ``default_agent`` setting when set; else the first listed model whose
    profile's key variable is set, else the embedded model when installed (the tool works out of the box with no key),
    else ``random:1``. Only environment variables are read for keys: a locked desktop keyring could block a window
    from opening."""
    import os

    from conflictbench_app.agents.local_model import available
    from conflictbench_app.agents.providers import all_profiles
    from conflictbench_app.settings import get_settings

    chosen = get_settings().default_agent.strip()
    if chosen:
        return chosen

    for name, profile in all_profiles().items():
        if profile.models and profile.key_env and os.environ.get(profile.key_env):
            return f"{name}:{profile.models[0]}"
    local = [a for a in LOCAL_AGENTS if available(a.partition(":")[2])]
    return local[0] if local else SCRIPTED_AGENTS[0]
