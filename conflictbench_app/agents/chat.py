"""A chat client for any OpenAI-compatible endpoint, with the retries and accounting a long run needs.

``get_chat_client("openai:gpt-4o")`` (or ``deepseek:deepseek-chat``, ``compat:MODEL`` with ``base_url=``...) returns a
:class:`ChatClient` whose ``complete(messages)`` gives a :class:`ChatReply`: the text, the usage (tokens, images, cost,
retries, latency), the model id the provider reports and its request id. Rate limits (429), server errors (5xx),
timeouts, dropped connections and unreadable replies are retried with exponential backoff that honours
``Retry-After``; what still fails raises :class:`AgentError` with the reason, so the runner marks that episode errored
and goes on. The ``openai`` package is imported only when a client is built.
"""

from __future__ import annotations

import email.utils
import json
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from conflictbench_app.agents.keys import find_key
from conflictbench_app.agents.pricing import cost_of
from conflictbench_app.agents.providers import Profile, get_profile, is_local, split_spec
from conflictbench_app.errors import AgentError
from conflictbench_app.records import Usage
from conflictbench_app.redact import redact

RETRY_STATUS = frozenset({408, 409, 429})  # plus every 5xx


@dataclass(frozen=True)
class ChatReply:
    text: str
    usage: Usage
    model: str  # the model id the provider reports (may differ from the one asked for)
    request_id: str | None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 4
    backoff_s: float = 0.5  # first wait without Retry-After; doubles each retry
    backoff_max_s: float = 8.0
    max_retry_after_s: float = 120.0  # a longer Retry-After fails the call instead of stalling the run

    def wait(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return max(0.0, retry_after)
        base = min(self.backoff_max_s, self.backoff_s * 2**attempt)
        return base * (1 + random.random() * 0.25)  # jitter, so parallel episodes do not retry in lockstep


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class ChatClient:
    """One model on one endpoint. Thread-safe; one per agent is the usual use."""

    def __init__(
        self,
        profile: Profile,
        model: str,
        api_key: str,
        *,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        stream: bool = False,
        extra_body: dict[str, Any] | None = None,
        reasoning_effort: str | None = None,
    ) -> None:
        try:
            from openai import OpenAI
        except ImportError as exc:  # pragma: no cover - openai is a core dependency
            raise AgentError("Model agents need the openai package: pip install openai.") from exc
        self.profile = profile
        self.model = model
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.stream = stream
        self.extra_body = {**profile.extra_body, **(extra_body or {})}
        self.reasoning_effort = reasoning_effort  # e.g. "low" for GPT-5, as the paper ran it
        self._send_temperature = True
        # Retries are ours (max_retries=0 here) so that each one is counted and logged per call.
        self._client = OpenAI(
            api_key=api_key,
            base_url=profile.base_url,
            timeout=timeout,
            max_retries=0,
            http_client=_shared_http_client(),
        )

    def __repr__(self) -> str:
        return f"ChatClient({self.profile.name}:{self.model} at {self.profile.base_url})"

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled without its key (a Ray worker looks the key up in its own environment or keyring)."""
        options = (self.timeout, self.retry, self.stream, self.extra_body, self.reasoning_effort)
        return _rebuild_client, (self.profile, self.model, *options)

    def close(self) -> None:
        """Nothing to release: the connection pool is shared by every client of the process."""

    def complete(
        self, messages: list[dict[str, Any]], *, temperature: float = 0.0, max_tokens: int | None = None
    ) -> ChatReply:
        """One chat completion, retried on transient failures. Raises AgentError when it cannot get one."""
        started = time.perf_counter()
        failures: list[str] = []
        for attempt in range(self.retry.max_retries + 1):
            try:
                reply = self._call(messages, temperature, max_tokens)
            except _Retryable as exc:
                failures.append(exc.reason)
                if attempt == self.retry.max_retries:
                    break
                self._check_retry_after(exc)
                time.sleep(self.retry.wait(attempt, exc.retry_after))
                continue
            return self._finish(reply, messages, started, failures)
        raise AgentError(
            f"{self.profile.name}:{self.model} failed after {len(failures)} attempts "
            f"({'; '.join(_dedupe(failures))}). Check the server, or resume the run later with --resume."
        )

    def _check_retry_after(self, exc: _Retryable) -> None:
        if exc.retry_after is not None and exc.retry_after > self.retry.max_retry_after_s:
            raise AgentError(
                f"{self.profile.name} asked to wait {exc.retry_after:.0f} s before retrying ({exc.reason}), longer than "
                f"the {self.retry.max_retry_after_s:.0f} s limit; resume the run later with --resume."
            )

    # -- one HTTP call -----------------------------------------------------------------------------------------

    def _call(self, messages: list[dict[str, Any]], temperature: float, max_tokens: int | None) -> _Raw:
        import openai

        kwargs = self._request_kwargs(messages, temperature, max_tokens)
        try:
            raw = self._client.chat.completions.with_raw_response.create(**kwargs)
            request_id = raw.headers.get("x-request-id") or raw.headers.get("request-id")
            return _read_stream(raw.parse(), request_id) if self.stream else _read(raw.parse(), request_id)
        except openai.APITimeoutError as exc:
            raise _Retryable(f"no reply within {self.timeout:g} s") from exc
        except openai.APIConnectionError as exc:
            raise _Retryable(f"connection failed: {exc}") from exc
        except openai.APIStatusError as exc:
            return self._status_error(exc, messages, temperature, max_tokens)
        except (openai.APIResponseValidationError, json.JSONDecodeError, ValueError, AttributeError) as exc:
            raise _Retryable(f"unreadable reply ({type(exc).__name__})") from exc
        except openai.APIError as exc:  # e.g. an error event inside a stream
            raise _Retryable(f"provider error: {str(exc)[:200]}") from exc
        except (
            _transport_errors()
        ) as exc:  # a stream cut off while being read (outside the client's own wrapping)
            raise _Retryable(f"connection failed while reading: {type(exc).__name__}") from exc

    def _request_kwargs(
        self, messages: list[dict[str, Any]], temperature: float, max_tokens: int | None
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        if self._send_temperature:
            kwargs["temperature"] = temperature
        if max_tokens is not None:
            # OpenAI's reasoning models refuse max_tokens; other providers may not know max_completion_tokens.
            kwargs["max_completion_tokens" if self.profile.name == "openai" else "max_tokens"] = max_tokens
        if self.stream:
            kwargs["stream"] = True
            kwargs["stream_options"] = {"include_usage": True}
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        if self.reasoning_effort:
            kwargs["reasoning_effort"] = self.reasoning_effort
        return kwargs

    def _status_error(
        self, exc: Any, messages: list[dict[str, Any]], temperature: float, max_tokens: int | None
    ) -> _Raw:
        status = exc.status_code
        if status in RETRY_STATUS or status >= 500:
            raise _Retryable(f"HTTP {status}", _retry_after(exc.response.headers)) from exc
        message = redact(_error_message(exc))  # a 401 may echo the key it was sent
        if status == 400 and self._send_temperature and "temperature" in message.lower():
            # Some reasoning models (GPT-5) accept only their default temperature: say so in meta and go on.
            self._send_temperature = False
            return self._call(messages, temperature, max_tokens)
        hint = {
            401: f"the provider rejected the API key: check {self.profile.key_env or 'the key'}",
            403: "the key is not allowed to use this model",
            404: f"the model {self.model!r} or the URL {self.profile.base_url} was not found",
        }.get(status, "the request was refused")
        raise AgentError(f"{self.profile.name}:{self.model}: HTTP {status}, {hint} ({message}).") from exc

    def _finish(
        self, raw: _Raw, messages: list[dict[str, Any]], started: float, failures: list[str]
    ) -> ChatReply:
        images = count_images(messages)
        model = raw.model or self.model
        usage = Usage(
            prompt_tokens=raw.prompt_tokens,
            completion_tokens=raw.completion_tokens,
            reasoning_tokens=raw.reasoning_tokens,
            image_tokens=raw.image_tokens,
            images=images,
            calls=1,
            retries=len(failures),
            latency_s=round(time.perf_counter() - started, 4),
        )
        cost = cost_of(model, usage)
        if cost is None:
            cost = cost_of(self.model, usage)
        usage = usage.model_copy(update={"cost_usd": cost or 0.0})
        meta: dict[str, Any] = {
            "model": model,
            "request_id": raw.request_id,
            "provider": self.profile.name,
            "finish_reason": raw.finish_reason,
            "priced": cost is not None,
        }
        if failures:
            meta["retried"] = failures
        if not self._send_temperature:
            meta["temperature"] = "provider default (the model refuses temperature 0)"
        if self.reasoning_effort:
            meta["reasoning_effort"] = self.reasoning_effort
        return ChatReply(raw.text, usage, model, raw.request_id, meta)


@dataclass
class _Raw:
    text: str
    model: str
    request_id: str | None
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    image_tokens: int = 0


def _read(completion: Any, request_id: str | None) -> _Raw:
    if isinstance(completion, str | bytes) or not getattr(completion, "choices", None):
        raise ValueError("the reply has no choices")
    choice = completion.choices[0]
    raw = _Raw(
        text=choice.message.content or "",
        model=completion.model or "",
        request_id=getattr(completion, "_request_id", None) or request_id or completion.id,
        finish_reason=choice.finish_reason,
    )
    _add_usage(raw, completion.usage)
    return raw


def _read_stream(stream: Any, request_id: str | None) -> _Raw:
    raw = _Raw(text="", model="", request_id=request_id)
    parts: list[str] = []
    for chunk in stream:
        raw.model = chunk.model or raw.model
        raw.request_id = raw.request_id or chunk.id
        for choice in chunk.choices or ():
            if choice.delta and choice.delta.content:
                parts.append(choice.delta.content)
            raw.finish_reason = choice.finish_reason or raw.finish_reason
        if chunk.usage is not None:
            _add_usage(raw, chunk.usage)
    raw.text = "".join(parts)
    if raw.finish_reason is None:
        raise ValueError("the stream ended before the reply was complete")
    return raw


def _add_usage(raw: _Raw, usage: Any) -> None:
    if usage is None:
        return
    raw.prompt_tokens = int(usage.prompt_tokens or 0)
    raw.completion_tokens = int(usage.completion_tokens or 0)
    completion_details = getattr(usage, "completion_tokens_details", None)
    prompt_details = getattr(usage, "prompt_tokens_details", None)
    raw.reasoning_tokens = int(getattr(completion_details, "reasoning_tokens", 0) or 0)
    raw.image_tokens = int(getattr(prompt_details, "image_tokens", 0) or 0)


def count_images(messages: list[dict[str, Any]]) -> int:
    """Images sent in ``messages``: image parts, plus the frames of native-video parts given as frame lists."""
    total = 0
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if part.get("type") == "image_url":
                total += 1
            elif part.get("type") == "video" and isinstance(part.get("video"), list):
                total += len(part["video"])
    return total


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP library's errors: openai 3.x uses httpx2, earlier versions httpx."""
    import importlib

    errors: list[type[BaseException]] = []
    for name in ("httpx2", "httpx"):
        try:
            errors.append(importlib.import_module(name).HTTPError)
        except ImportError:
            continue
    return tuple(errors)


def _retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date), if given."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) * scale
        except ValueError:
            parsed = email.utils.parsedate_to_datetime(value) if name == "retry-after" else None
            if parsed is not None:
                return max(0.0, parsed.timestamp() - time.time())
    return None


def _error_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
    return str(getattr(exc, "message", exc))[:300]


def _dedupe(items: list[str]) -> list[str]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return [f"{k} x{n}" if n > 1 else k for k, n in counts.items()]


_HTTP_LOCK = threading.Lock()
_HTTP: Any = None


def _shared_http_client() -> Any:
    """One connection pool for every chat client of the process. Building one costs ~50 ms (TLS context), which a
    run that builds an agent per episode would otherwise pay again and again; timeouts stay per client."""
    global _HTTP
    with _HTTP_LOCK:
        if _HTTP is None or _HTTP.is_closed:
            from openai import DefaultHttpxClient

            _HTTP = DefaultHttpxClient()
        return _HTTP


def get_chat_client(
    spec: str,
    *,
    base_url: str | None = None,
    timeout: float = 60.0,
    max_retries: int = 4,
    **opts: Any,
) -> ChatClient:
    """A client for ``spec`` (``PROFILE:MODEL``). The key comes from the profile's variable or the OS keyring.

    Options: ``stream`` (bool), ``backoff_s``, ``backoff_max_s``, ``max_retry_after_s``, ``extra_body`` (dict),
    ``reasoning_effort`` (``low``, ``medium``, ``high``).
    A key is never accepted as an option (options are stored with a run): set the environment variable instead.
    """
    if "api_key" in opts:
        raise AgentError(
            "Do not pass an API key as an option; set the profile's environment variable instead."
        )
    name, model = split_spec(spec)
    if name == "local" and base_url is None:  # the embedded model, in this process (no HTTP, no key)
        from conflictbench_app.agents.local_agent import LocalChatClient

        return LocalChatClient(model)  # type: ignore[return-value]  # the same complete()/close() interface
    profile = get_profile(name, base_url)
    retry = RetryPolicy(
        max_retries=max_retries,
        backoff_s=float(opts.pop("backoff_s", 0.5)),
        backoff_max_s=float(opts.pop("backoff_max_s", 8.0)),
        max_retry_after_s=float(opts.pop("max_retry_after_s", 120.0)),
    )
    stream = bool(opts.pop("stream", False))
    extra_body = opts.pop("extra_body", None)
    reasoning_effort = opts.pop("reasoning_effort", None)
    if opts:
        raise AgentError(f"Unknown chat client option(s): {', '.join(sorted(opts))}.")
    return ChatClient(
        profile,
        model,
        _api_key(profile),
        timeout=timeout,
        retry=retry,
        stream=stream,
        extra_body=extra_body,
        reasoning_effort=str(reasoning_effort) if reasoning_effort else None,
    )


def _rebuild_client(
    profile: Profile,
    model: str,
    timeout: float,
    retry: RetryPolicy,
    stream: bool,
    extra_body: dict[str, Any],
    reasoning_effort: str | None,
) -> ChatClient:
    return ChatClient(
        profile,
        model,
        _api_key(profile),
        timeout=timeout,
        retry=retry,
        stream=stream,
        extra_body=extra_body,
        reasoning_effort=reasoning_effort,
    )


def _api_key(profile: Profile) -> str:
    key = find_key(profile.name, profile.key_env)
    if key.value:
        return key.value
    if profile.key_required and not is_local(profile.base_url):
        hint = f"set {profile.key_env} or run `keyring set conflictbench {profile.name}`"
        raise AgentError(f"No API key for {profile.name} ({key.note or 'none found'}): {hint}.")
    return "EMPTY"  # local servers (vLLM, Ollama, the loopback test server) accept any key
