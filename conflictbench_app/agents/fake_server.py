"""A loopback OpenAI-compatible server for tests and offline demos: real HTTP on 127.0.0.1, stdlib only.

It implements ``POST /v1/chat/completions`` (plain JSON and SSE streaming, with usage figures) and ``GET /v1/models``,
answers from a script, injects faults, and records every request it received so tests can check what a client sent
(for instance the number of images in each turn)::

    with FakeLLMServer({"Aegis-Node-17": ["THINK: unlock first.\\nACTION: unlock interlock"]}) as server:
        client = get_chat_client("compat:fake", base_url=server.base_url)

Replies (``replies=``): a callable ``(request_json) -> str``; a list of replies indexed by turn (the number of assistant
messages already in the conversation); or a dict whose keys are substrings of the system prompt (``"*"`` matches any)
and whose values are such lists or callables. Without a script, or past its end, the server plays a seeded random
legal action read from the ``Valid actions:`` line of the system prompt (see :mod:`react`), so a full run works.

Faults (``faults=`` or :meth:`add_fault`): ``429`` (with ``Retry-After``), ``500``, ``status`` (any error status
and message), ``delay``, ``garbage`` (invalid
JSON with status 200), ``empty`` (no choices), ``cut`` (the connection drops halfway through the reply), ``hang`` (no answer until the server stops or ``seconds`` pass). Each
applies to its next ``times`` matching requests (``-1``: all), optionally only where the system prompt contains
``match``.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from conflictbench_app.agents.react import ACTIONS_PREFIX, ACTIONS_SEPARATOR
from conflictbench_app.errors import ConflictBenchError

FaultKind = Literal["429", "500", "status", "delay", "garbage", "empty", "hang", "cut"]
ReplyFn = Callable[[dict[str, Any]], str]
Script = ReplyFn | list[str] | dict[str, list[str] | ReplyFn]
TOKENS_PER_IMAGE = 85


@dataclass
class Fault:
    kind: FaultKind
    times: int = 1  # how many matching requests it applies to; -1 for all of them
    match: str = ""  # only requests whose system prompt contains this
    retry_after: float | None = 0.05  # for 429: the Retry-After header, in seconds (None: no header)
    seconds: float = 1.0  # for delay; for hang, the longest it holds the request (or until the server stops)
    status: int = 400  # for status: any HTTP error status, with ``message`` as the error's message
    message: str = "Bad request (fake)."


@dataclass(frozen=True)
class ReceivedRequest:
    """One request as the server saw it."""

    body: dict[str, Any]
    authorization: str
    at: float
    fault: str | None
    stream: bool

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def system_prompt(self) -> str:
        return system_prompt_of(self.body)

    @property
    def turn(self) -> int:
        """How many assistant replies the conversation already holds."""
        return sum(1 for m in self.messages if m.get("role") == "assistant")

    def images_per_user_message(self) -> list[int]:
        """The number of images in each user message, in order (the last one is the current turn)."""
        return [_images_in(m) for m in self.messages if m.get("role") == "user"]


class FakeLLMServer:
    """A scripted OpenAI-compatible server on ``127.0.0.1``; use as a context manager or call start()/stop()."""

    def __init__(
        self,
        replies: Script | None = None,
        *,
        latency: float = 0.0,
        faults: list[Fault] | tuple[Fault, ...] = (),
        model: str | None = None,
        reasoning_tokens: int = 0,
        port: int = 0,
        seed: int = 0,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.replies = replies
        self.latency = latency
        self.model = model  # the model id to report; default: echo the requested one
        self.reasoning_tokens = reasoning_tokens
        self.seed = seed
        self.log = log
        self.requests: list[ReceivedRequest] = []
        self._faults = list(faults)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._counter = 0
        self._port = port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------------------

    def start(self) -> FakeLLMServer:
        handler = type("Handler", (_Handler,), {"fake": self})
        try:
            self._httpd = ThreadingHTTPServer(("127.0.0.1", self._port), handler)
        except OSError as exc:
            raise ConflictBenchError(
                f"Cannot listen on 127.0.0.1:{self._port} ({exc}); choose another --port."
            ) from exc
        self._httpd.daemon_threads = True
        # A short poll interval makes stop() quick (shutdown waits for the serving loop's next poll).
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise ConflictBenchError("The fake LLM server is not running; call start() first.")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- control -----------------------------------------------------------------------------------------------

    def add_fault(self, kind: FaultKind, **kwargs: Any) -> Fault:
        fault = Fault(kind, **kwargs)
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def chat_requests(self) -> list[ReceivedRequest]:
        with self._lock:
            return list(self.requests)

    # -- serving (called from handler threads) -----------------------------------------------------------------

    def _take_fault(self, body: dict[str, Any]) -> Fault | None:
        system = system_prompt_of(body)
        with self._lock:
            for fault in self._faults:
                if fault.times != 0 and fault.match in system:
                    if fault.times > 0:
                        fault.times -= 1
                    return fault
        return None

    def _record(self, body: dict[str, Any], authorization: str, fault: Fault | None) -> int:
        with self._lock:
            self._counter += 1
            self.requests.append(
                ReceivedRequest(
                    body, authorization, time.time(), fault.kind if fault else None, bool(body.get("stream"))
                )
            )
            return self._counter

    def reply_for(self, body: dict[str, Any]) -> str:
        """The scripted reply to ``body`` (or the default random legal action)."""
        turn = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
        script = self.replies
        if isinstance(script, dict):
            system = system_prompt_of(body)
            key = next((k for k in script if k != "*" and k in system), "*" if "*" in script else None)
            script = script[key] if key is not None else None
        if callable(script):
            return str(script(body))
        if isinstance(script, list) and turn < len(script):
            return script[turn]
        return self._default_reply(body, turn)

    def _default_reply(self, body: dict[str, Any], turn: int) -> str:
        # The studio protocol lists the actions in the system prompt; the paper protocol only in the game's help,
        # the first user message.
        actions = legal_actions_in(system_prompt_of(body)) or _actions_in_help(body)
        if not actions:
            return "THINK: I will look around first.\nACTION: look"
        digest = hashlib.sha256(f"{self.seed}|{system_prompt_of(body)}|{turn}".encode()).hexdigest()
        action = random.Random(int(digest[:16], 16)).choice(actions)
        return f"THINK: Turn {turn + 1}; I choose to {action}.\nACTION: {action}"

    def usage_for(self, body: dict[str, Any], text: str) -> dict[str, Any]:
        chars = images = 0
        for message in body.get("messages") or []:
            content = message.get("content")
            if isinstance(content, str):
                chars += len(content)
            elif isinstance(content, list):
                chars += sum(len(p.get("text", "")) for p in content if p.get("type") == "text")
                images += _images_in(message)
        image_tokens = images * TOKENS_PER_IMAGE
        prompt = math.ceil(chars / 4) + image_tokens
        completion = math.ceil(len(text) / 4) + self.reasoning_tokens
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"image_tokens": image_tokens, "cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
        }

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeLLMServer
    protocol_version = "HTTP/1.1"
    # Headers and body go out as separate writes: with Nagle's algorithm on, the body waits for the client's delayed
    # ACK (~40 ms a request), which would swamp any latency a test or benchmark sets.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # the stdlib logs to stderr; we log on request
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            model = self.fake.model or "fake-model"
            self._json(
                200, {"object": "list", "data": [{"id": model, "object": "model", "owned_by": "fake"}]}
            )
        else:
            self._json(404, {"error": {"message": f"No route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"No route {self.path}", "type": "not_found"}})
            return
        try:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
        except (ValueError, json.JSONDecodeError):
            self._json(
                400, {"error": {"message": "The request body is not JSON.", "type": "invalid_request"}}
            )
            return
        started = time.perf_counter()
        fault = self.fake._take_fault(body)
        number = self.fake._record(body, self.headers.get("authorization", ""), fault)
        try:
            status = self._answer(body, fault, number)
        except (BrokenPipeError, ConnectionResetError):
            status = 499  # the client gave up (a timeout): nothing to send
        except ConflictBenchError as exc:  # a reply that could not be produced (e.g. the local model failed)
            status = 500
            self._json(500, {"error": {"message": str(exc), "type": "server_error"}})
        if self.fake.log:
            user = [m for m in body.get("messages") or [] if m.get("role") == "user"]
            self.fake.log(
                f"POST chat/completions {status} model={body.get('model')} turn={len(user)} "
                f"images={_images_in(user[-1]) if user else 0} fault={fault.kind if fault else '-'} "
                f"({time.perf_counter() - started:.2f} s)"
            )

    def _answer(self, body: dict[str, Any], fault: Fault | None, number: int) -> int:
        if fault is not None and fault.kind not in ("delay", "cut"):
            return self._fault(fault)
        self.fake._wait(self.fake.latency + (fault.seconds if fault else 0.0))
        text = self.fake.reply_for(body)
        model = self.fake.model or str(body.get("model") or "fake-model")
        usage = self.fake.usage_for(body, text)
        cut = fault is not None and fault.kind == "cut"
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream(text, model, usage if include_usage else None, number, cut=cut)
        elif cut:
            data = json.dumps(_completion(text, model, usage, number)).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.close_connection = True
        else:
            self._json(200, _completion(text, model, usage, number), number)
        return 200

    def _fault(self, fault: Fault) -> int:
        if fault.kind == "429":
            headers = {} if fault.retry_after is None else {"retry-after": f"{fault.retry_after:g}"}
            self._json(
                429,
                {"error": {"message": "Rate limit reached (fake).", "type": "rate_limit"}},
                headers=headers,
            )
            return 429
        if fault.kind == "500":
            self._json(500, {"error": {"message": "Internal error (fake).", "type": "server_error"}})
            return 500
        if fault.kind == "status":
            self._json(fault.status, {"error": {"message": fault.message, "type": "invalid_request_error"}})
            return fault.status
        if fault.kind == "garbage":
            self._raw(200, b'{"id": "chatcmpl-garbage", "choices": [ {"mess', "application/json")
            return 200
        if fault.kind == "empty":
            self._json(
                200, {"id": "chatcmpl-empty", "object": "chat.completion", "model": "x", "choices": []}
            )
            return 200
        self.fake._wait(fault.seconds)  # hang: hold the request; the client's timeout ends it
        return 499

    def _json(
        self, status: int, payload: dict[str, Any], number: int = 0, headers: dict[str, str] | None = None
    ) -> None:
        extra = dict(headers or {})
        if number:
            extra["x-request-id"] = f"req_fake_{number}"
        self._raw(status, json.dumps(payload).encode(), "application/json", extra)

    def _raw(
        self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(
        self, text: str, model: str, usage: dict[str, Any] | None, number: int, cut: bool = False
    ) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.send_header("x-request-id", f"req_fake_{number}")
        self.end_headers()
        self.close_connection = True
        base = {
            "id": f"chatcmpl-fake-{number}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
        }
        pieces = [text[i : i + 16] for i in range(0, len(text), 16)] or [""]
        chunks = [_chunk(base, model, {"role": "assistant", "content": ""}, None)]
        chunks += [_chunk(base, model, {"content": piece}, None) for piece in pieces]
        chunks.append(_chunk(base, model, {}, "stop"))
        if usage is not None:
            chunks.append({**base, "model": model, "choices": [], "usage": usage})
        if cut:
            chunks = chunks[:2]
        for chunk in chunks:
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()
        if cut:
            return
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def _chunk(base: dict[str, Any], model: str, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {**base, "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _completion(text: str, model: str, usage: dict[str, Any], number: int) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": usage,
    }


def system_prompt_of(body: dict[str, Any]) -> str:
    for message in body.get("messages") or []:
        if message.get("role") == "system":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def legal_actions_in(system_prompt: str) -> list[str]:
    """The actions listed on the ``Valid actions:`` line of a system prompt written by :mod:`react`."""
    for line in system_prompt.splitlines():
        if line.startswith(ACTIONS_PREFIX):
            return [
                a.strip() for a in line[len(ACTIONS_PREFIX) :].split(ACTIONS_SEPARATOR.strip()) if a.strip()
            ]
    return []


def _actions_in_help(body: dict[str, Any]) -> list[str]:
    """The commands a game's help text (the conversation's first user message) lists."""
    from conflictbench_app.scenarios.paper import help_candidates

    first = next((m for m in body.get("messages") or [] if m.get("role") == "user"), None)
    if first is None:
        return []
    content = first.get("content")
    if isinstance(content, list):
        content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return [name for name, _ in help_candidates(str(content or ""))]


def _images_in(message: dict[str, Any]) -> int:
    content = message.get("content")
    if not isinstance(content, list):
        return 0
    count = 0
    for part in content:
        if part.get("type") == "image_url":
            count += 1
        elif part.get("type") == "video" and isinstance(part.get("video"), list):
            count += len(part["video"])
    return count


def load_script(path: str) -> dict[str, list[str] | ReplyFn]:
    """A script file: JSON ``{"system prompt substring" or "*": ["reply for turn 0", "reply for turn 1", ...]}``."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, json.JSONDecodeError) as exc:
        raise ConflictBenchError(f"Cannot read the reply script {path}: {exc}.") from exc
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise ConflictBenchError(f'{path} should map system-prompt substrings (or "*") to lists of replies.')
    return {str(k): [str(r) for r in v] for k, v in data.items()}


__all__ = ["FakeLLMServer", "Fault", "ReceivedRequest", "legal_actions_in", "load_script"]
