"""``conflictbench serve-local-llm``: the embedded model behind an OpenAI-compatible endpoint on 127.0.0.1.

The judge, the regret test, single-turn runs and any other OpenAI-compatible tool can then use the embedded model by
``--base-url``, and the code path a user takes with their own llama.cpp, vLLM or Ollama server is the one tested here.
It reuses the loopback server's HTTP layer (:mod:`fake_server`: chat completions, plain and SSE streaming, usage,
``/v1/models``) with the model's generation in place of a script. Token counts come from the model's tokenizer and
the cost is 0. A streamed reply is generated first, then sent in chunks (the client sees a normal SSE stream).
The model is not thread-safe: requests are answered one at a time.
"""

from __future__ import annotations

import threading
from typing import Any

from conflictbench_app.agents.fake_server import FakeLLMServer
from conflictbench_app.agents.local_model import DEFAULT_MODEL, get_local_model, spec_for

DEFAULT_PORT = 8766
MAX_TOKENS = 256


class LocalLLMServer(FakeLLMServer):
    """The embedded model as an OpenAI-compatible server (use as a context manager or call start()/stop())."""

    def __init__(self, model_name: str = DEFAULT_MODEL, *, port: int = DEFAULT_PORT, log: Any = None) -> None:
        spec_for(model_name)  # an unknown name fails before the port is taken
        super().__init__(model=f"local:{model_name}", port=port, log=log)
        self.model_name = model_name
        self._generate_lock = threading.Lock()
        self._counts = threading.local()  # the token counts of this handler thread's last generation

    def start(self) -> LocalLLMServer:
        get_local_model(self.model_name)  # load before listening: the first request must not wait a minute
        super().start()
        return self

    def reply_for(self, body: dict[str, Any]) -> str:
        messages = body.get("messages") or []
        temperature = float(body.get("temperature") or 0.0)
        limit = body.get("max_completion_tokens") or body.get("max_tokens") or MAX_TOKENS
        seed = int(body.get("seed") or 0)
        with self._generate_lock:
            model = get_local_model(self.model_name)
            out = model.generate(
                model.prompt_ids(messages), max_new_tokens=int(limit), temperature=temperature, seed=seed
            )
        self._counts.value = (out.prompt_tokens, out.completion_tokens)
        return out.text

    def usage_for(self, body: dict[str, Any], text: str) -> dict[str, Any]:
        """The tokenizer's counts for the reply just generated on this thread (the handler calls it right after
        :meth:`reply_for`)."""
        prompt, completion = self._counts.value
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"image_tokens": 0, "cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0},
        }
