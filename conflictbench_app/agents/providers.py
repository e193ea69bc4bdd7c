"""Provider profiles: OpenAI-compatible endpoints that differ only in base URL, key variable and capabilities.

Built-in profiles cover the providers the paper used (OpenAI, Gemini's OpenAI-compatible endpoint, DashScope for
Qwen, DeepSeek), local servers (vLLM, Ollama) and ``compat`` for any other OpenAI-compatible server (give
``--base-url``). The settings file may add profiles (``[providers.NAME]`` with ``base_url``, ``key_env``, ``vision``,
``video``, ``extra_body``, ``models``); a user profile with a built-in's name replaces it. ``models`` are the model
ids the app offers in its pickers (the paper's models for the built-ins); any other model id works as well.

An agent spec is ``PROFILE:MODEL``, e.g. ``openai:gpt-4o``, ``dashscope:qwen3-vl-plus``, ``vllm:Qwen/Qwen3-VL-30B-A3B``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal
from urllib.parse import urlparse

from conflictbench_app.errors import AgentError
from conflictbench_app.redact import url_credentials

# How a profile takes a clip natively: "frames" is DashScope's {"type":"video","video":[frame urls]} part,
# "video_url" is vLLM's {"type":"video_url"} part with the clip as a data URL. "" means images only.
VideoFormat = Literal["", "frames", "video_url"]


@dataclass(frozen=True)
class Profile:
    """One OpenAI-compatible endpoint and what it can take."""

    name: str
    base_url: str
    key_env: str = ""
    key_required: bool = True  # local servers accept any key
    vision: bool = True
    video_format: VideoFormat = ""
    # How many earlier turns keep their frames in the context. 0 (the default) sends only the current turn's frames:
    # the full text history is always kept, but re-sending every earlier clip would multiply image tokens by the
    # number of turns for little benefit, since each observation text already describes what happened.
    history_images: int = 0
    extra_body: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    models: tuple[str, ...] = ()  # offered in pickers; not a limit
    # Per model id: request options that belong to the model (``reasoning_effort``, ``temperature``, ``extra_body``),
    # as the paper ran it; recorded with every run (see :func:`model_options`).
    model_options: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def video(self) -> bool:
        return bool(self.video_format)

    def options_for(self, model: str) -> dict[str, Any]:
        """The model entry's options: temperature 0 unless the entry says otherwise, then the entry's own."""
        return {"temperature": 0.0, **self.model_options.get(model, {})}


_QWEN_DASHSCOPE = ("qwen3-vl-plus", "qwen-plus", "qwen3-vl-30b-a3b-instruct")

BUILTIN: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            "openai",
            "https://api.openai.com/v1",
            "OPENAI_API_KEY",
            description="OpenAI (GPT-4o, GPT-5, ...)",
            models=("gpt-4o", "gpt-5", "gpt-4o-mini"),
            model_options={"gpt-5": {"reasoning_effort": "low"}},  # as in the paper
        ),
        Profile(
            "gemini",
            "https://generativelanguage.googleapis.com/v1beta/openai/",
            "GEMINI_API_KEY",
            description="Google Gemini through its OpenAI-compatible endpoint",
            models=("gemini-2.5-flash",),
        ),
        Profile(
            "dashscope",
            "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
            "DASHSCOPE_API_KEY",
            video_format="frames",
            description="Alibaba DashScope (Qwen3-VL, Qwen-Plus)",
            models=("qwen3-vl-plus", "qwen-plus", "qwen3-vl-30b-a3b-instruct"),
            # The paper ran Qwen with thinking off; DashScope's switch is the enable_thinking body field.
            model_options={m: {"extra_body": {"enable_thinking": False}} for m in _QWEN_DASHSCOPE},
        ),
        Profile(
            "deepseek",
            "https://api.deepseek.com/v1",
            "DEEPSEEK_API_KEY",
            vision=False,
            description="DeepSeek (DeepSeek-V3: text only)",
            models=("deepseek-chat",),
        ),
        Profile(
            "vllm",
            "http://127.0.0.1:8000/v1",
            "VLLM_API_KEY",
            key_required=False,
            video_format="video_url",
            description="A local vLLM server (e.g. Qwen3-VL-30B-A3B open weights)",
            models=("Qwen/Qwen3-VL-30B-A3B-Instruct",),
            # vLLM passes chat_template_kwargs to Qwen3's chat template, whose enable_thinking switch is off here.
            model_options={
                "Qwen/Qwen3-VL-30B-A3B-Instruct": {
                    "extra_body": {"chat_template_kwargs": {"enable_thinking": False}}
                }
            },
        ),
        Profile(
            "ollama",
            "http://127.0.0.1:11434/v1",
            "OLLAMA_API_KEY",
            key_required=False,
            description="A local Ollama server",
        ),
        Profile(
            "compat",
            "",
            "OPENAI_COMPAT_API_KEY",
            key_required=False,
            description="Any other OpenAI-compatible server: give --base-url",
        ),
    )
}
ALIASES = {"qwen": "dashscope", "google": "gemini"}


def all_profiles() -> dict[str, Profile]:
    """Built-in profiles, overridden and extended by the settings file's ``[providers.*]``."""
    profiles = dict(BUILTIN)
    for name, user in _user_profiles().items():
        profiles[name] = Profile(
            name=name,
            base_url=user.base_url,
            key_env=user.key_env,
            key_required=bool(user.key_env) and not is_local(user.base_url),
            vision=user.vision,
            video_format=user.video_format if user.video else "",
            history_images=user.history_images,
            extra_body=dict(user.extra_body),
            description="from the settings file",
            models=tuple(user.models),
            model_options={k: dict(v) for k, v in user.model_options.items()},
        )
    return profiles


def model_agents() -> list[str]:
    """``PROFILE:MODEL`` for every model the profiles offer, for pickers (built-ins first, in their order)."""
    return [f"{name}:{model}" for name, profile in all_profiles().items() for model in profile.models]


def profile_settings(profile: Profile) -> dict[str, Any]:
    """``profile`` as a ``[providers.NAME]`` table of the settings file (what ``all_profiles`` reads back)."""
    table: dict[str, Any] = {
        "base_url": profile.base_url,
        "key_env": profile.key_env,
        "vision": profile.vision,
    }
    if profile.video_format:
        table.update(video=True, video_format=profile.video_format)
    if profile.history_images:
        table["history_images"] = profile.history_images
    if profile.extra_body:
        table["extra_body"] = dict(profile.extra_body)
    table["models"] = list(profile.models)
    if profile.model_options:
        table["model_options"] = {k: dict(v) for k, v in profile.model_options.items()}
    return table


def model_options(spec: str) -> dict[str, Any]:
    """The request options of the model entry ``spec`` names (``PROFILE:MODEL``); empty for other agents
    (scripted, human). Stored with every run, so a figure says how its model was asked."""
    name, sep, model = spec.partition(":")
    profiles = all_profiles()
    profile = profiles.get(name) or profiles.get(ALIASES.get(name, ""))
    if profile is None or not sep or not model.strip():
        return {}
    return profile.options_for(model.strip())


def _user_profiles() -> dict[str, Any]:
    from conflictbench_app.settings import get_settings

    return dict(get_settings().providers)


def get_profile(name: str, base_url: str | None = None) -> Profile:
    """The profile called ``name`` (an alias is accepted), with ``base_url`` overriding its endpoint."""
    profiles = all_profiles()
    profile = profiles.get(name) or profiles.get(ALIASES.get(name, ""))
    if profile is None:
        raise AgentError(
            f"Unknown provider {name!r}. Known: {', '.join(sorted(profiles))}; "
            "add one under [providers.NAME] in the settings file, or use compat:MODEL --base-url URL."
        )
    if base_url:
        check_base_url(base_url)
        profile = replace(profile, base_url=base_url.rstrip("/"))
    if not profile.base_url:
        raise AgentError(f"{name}:MODEL needs --base-url, e.g. --base-url http://127.0.0.1:8000/v1.")
    return profile


def split_spec(spec: str) -> tuple[str, str]:
    """``PROFILE:MODEL`` -> (profile, model). The model may itself contain ``:`` (Ollama tags)."""
    name, sep, model = spec.partition(":")
    if not sep or not model.strip():
        raise AgentError(f"{spec!r} names no model; write PROFILE:MODEL, e.g. openai:gpt-4o.")
    return name.strip(), model.strip()


def is_local(url: str) -> bool:
    """Whether ``url`` points at this machine (loopback), where servers take any key."""
    host = (urlparse(url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


def check_base_url(url: str) -> None:
    """An endpoint must be an http(s) URL without credentials: base URLs are stored with a run's settings, so a
    password or key inside one would leak into the database."""
    parts = urlparse(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AgentError(f"{url!r} is not an endpoint URL; write it like https://api.example.com/v1.")
    found = url_credentials(url)
    if found:
        raise AgentError(
            f"The base URL carries credentials ({found}); give the plain URL and put the key in the profile's environment "
            "variable or the OS keyring."
        )
