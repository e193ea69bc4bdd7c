"""The model agent: a ReAct agent over any OpenAI-compatible chat endpoint, text-only or multimodal.

Named ``PROFILE:MODEL`` (``openai:gpt-4o``, ``gemini:gemini-2.5-flash``, ``dashscope:qwen3-vl-plus``,
``deepseek:deepseek-chat``, ``vllm:MODEL``, ``ollama:MODEL``, ``compat:MODEL`` with ``base_url``). Options (the
runner's ``agent_options``, stored with the run, so never a key): ``base_url``, ``timeout``, ``max_retries``,
``stream``, ``backoff_s``, ``max_retry_after_s``, ``video`` (send the clip natively where the profile can),
``history_images`` (earlier turns that keep their frames), ``max_tokens``, ``temperature`` (default 0, as in the paper).

The agent is stateless: every call rebuilds the conversation from the view's history, so a resumed episode continues
with exactly the context it would have had.
"""

from __future__ import annotations

from typing import Any

from conflictbench_app.agents.base import Agent, AgentView, Decision
from conflictbench_app.agents.chat import ChatClient, get_chat_client
from conflictbench_app.agents.providers import all_profiles
from conflictbench_app.agents.react import build_messages, parse_reply
from conflictbench_app.agents.registry import register
from conflictbench_app.errors import AgentError

CLIENT_OPTIONS = (
    "timeout",
    "max_retries",
    "stream",
    "backoff_s",
    "backoff_max_s",
    "max_retry_after_s",
    "extra_body",
    "reasoning_effort",
)
AGENT_OPTIONS = ("video", "history_images", "max_tokens", "temperature")
MAX_STORED_ACTION = 1000


class ModelAgent:
    """Asks a chat model for ``THINK: ... ACTION: ...`` each turn."""

    def __init__(
        self,
        name: str,
        client: ChatClient,
        *,
        video: bool = False,
        history_images: int | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> None:
        self.name = name
        self.client = client
        self.video = video
        self.history_images = client.profile.history_images if history_images is None else history_images
        self.max_tokens = max_tokens
        self.temperature = temperature

    def act(self, view: AgentView) -> Decision:
        messages = self.messages(view)
        reply = self.client.complete(messages, temperature=self.temperature, max_tokens=self.max_tokens)
        parsed = parse_reply(reply.text)
        meta: dict[str, Any] = {**reply.meta, "parse": parsed.how, "reply": reply.text}
        if parsed.error:
            return Decision(
                action=reply.text.strip()[:MAX_STORED_ACTION],
                raw=reply.text,
                usage=reply.usage,
                error=parsed.error,
                meta=meta,
            )
        return Decision(
            action=parsed.action, thought=parsed.thought, raw=reply.text, usage=reply.usage, meta=meta
        )

    def messages(self, view: AgentView) -> list[dict[str, Any]]:
        """The conversation sent for ``view`` (also used by cost estimates and tests)."""
        multimodal = bool(view.images)
        profile = self.client.profile
        if multimodal and not profile.vision:
            raise AgentError(
                f"{self.name} takes no images ({profile.name} is text-only here); use --setting text, or a vision "
                "model."
            )
        return build_messages(
            view,
            multimodal=multimodal,
            history_images=self.history_images,
            video_format=profile.video_format if self.video else "",
        )

    def close(self) -> None:
        self.client.close()


def build_model_agent(profile: str, model: str, options: dict[str, Any]) -> ModelAgent:
    """A :class:`ModelAgent` for ``profile:model`` with the runner's ``options`` over the model entry's own
    (``reasoning_effort``, ``temperature``, ``extra_body``: see :func:`providers.model_options`)."""
    unknown = set(options) - set(CLIENT_OPTIONS) - set(AGENT_OPTIONS) - {"base_url"}
    if unknown:
        raise AgentError(f"Unknown option(s) for {profile}:{model}: {', '.join(sorted(unknown))}.")
    options = merged_options(f"{profile}:{model}", options)
    client_opts = {k: options[k] for k in CLIENT_OPTIONS if options.get(k) is not None}
    client = get_chat_client(f"{profile}:{model}", base_url=options.get("base_url"), **client_opts)
    return ModelAgent(
        f"{profile}:{model}",
        client,
        video=bool(options.get("video", False)),
        history_images=options.get("history_images"),
        max_tokens=options.get("max_tokens"),
        temperature=float(options.get("temperature") or 0.0),
    )


def merged_options(spec: str, options: dict[str, Any]) -> dict[str, Any]:
    """The model entry's options with the run's on top (an ``extra_body`` is merged key by key)."""
    from conflictbench_app.agents.providers import model_options

    entry = model_options(spec)
    merged = {**entry, **{k: v for k, v in options.items() if v is not None}}
    if isinstance(entry.get("extra_body"), dict) and isinstance(options.get("extra_body"), dict):
        merged["extra_body"] = {**entry["extra_body"], **options["extra_body"]}
    return merged


def _factory_for(profile: str) -> Any:
    def factory(arg: str, options: dict[str, Any]) -> Agent:
        if not arg:
            raise AgentError(f"{profile} needs a model: {profile}:MODEL (see `conflictbench agents`).")
        return build_model_agent(profile, arg, options)

    return factory


def register_profiles() -> None:
    """Register every provider profile (built-in, aliases, and the settings file's, read now) as an agent prefix."""
    from conflictbench_app.agents.providers import ALIASES

    for name in [*all_profiles(), *ALIASES]:
        register(name)(_factory_for(name))


register_profiles()
