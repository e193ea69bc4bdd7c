"""The embedded model's torch-side machinery: a bf16 copy of the weights for generated tokens, a key-value cache
that grows in place, int8 quantization, the attention mask that scores choices side by side, and cropping a cache.

torch and transformers are imported inside the functions (the ``[local]`` extra), as in :mod:`local_model`.
"""

from __future__ import annotations

import contextlib
from functools import lru_cache
from typing import Any


class DecodeWeights:
    """A bfloat16 copy of every linear layer's weights, which the layers use while :meth:`active` (precision
    "mixed", the default). A forward pass over one or a few new tokens is bound by reading the weights from memory,
    and half the bytes make it about 1.5x faster on a 2-core CPU (108 ms to 70 ms a token, measured A/B in one
    process); a pass over a prompt or the scored choices is bound by arithmetic, which this CPU does slower in bf16,
    so those stay float32. So the generated thought's tokens run in bf16 (activations rounded to bf16 going into
    each layer, and its output back to float32), deterministically, and every action score is float32, as under
    "fp32". The copy costs half the float32 weights' memory again. The layers keep their own weights (the
    converted model saves and loads as it is); the copy is held here, not in the model's state."""

    def __init__(self, model: Any) -> None:
        import torch

        self.on = False
        for layer in model.modules():
            if isinstance(layer, torch.nn.Linear):
                layer.forward = self._forward_of(torch, layer)

    def _forward_of(self, torch: Any, layer: Any) -> Any:
        full = layer.forward
        weight = layer.weight.detach().to(torch.bfloat16)
        bias = None if layer.bias is None else layer.bias.detach().to(torch.bfloat16)

        def forward(x: Any) -> Any:
            if not self.on:
                return full(x)
            return torch.nn.functional.linear(x.to(torch.bfloat16), weight, bias).to(x.dtype)

        return forward

    @contextlib.contextmanager
    def active(self) -> Any:
        self.on = True
        try:
            yield
        finally:
            self.on = False


CACHE_CHUNK = 1024  # tokens of room a growing cache layer adds when it is full


def growing_cache() -> Any:
    """A transformers ``DynamicCache`` whose layers keep their keys and values in buffers with room to grow.

    transformers' own layer appends with ``torch.cat``, copying the whole cache at every forward pass: with the
    2,000-3,000 tokens of a late turn, that copy took longer than the layers' matrix products in a one-token pass
    (profiled: 87 ms of 183 ms). Here a pass writes only its new tokens, and a full buffer is copied once into one
    ``CACHE_CHUNK`` to two larger (about every eight turns of a game). The cache is the same object to the model
    (a ``DynamicCache``, cropped the same way); only the storage differs."""
    from transformers import DynamicCache

    cache = DynamicCache()
    cache.layer_class_to_replicate = _growing_layer()  # layers are made at their first update
    return cache


@lru_cache(maxsize=1)
def _growing_layer() -> type:
    from transformers.cache_utils import DynamicLayer

    class GrowingLayer(DynamicLayer):
        _buffers: tuple[Any, Any] | None = None

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            held, added = self.get_seq_length(), key_states.shape[-2]
            keys, values = self._room_for(held, held + added, key_states, value_states)
            keys[..., held : held + added, :] = key_states
            values[..., held : held + added, :] = value_states
            self.keys, self.values = keys[..., : held + added, :], values[..., : held + added, :]
            return self.keys, self.values

        def _room_for(self, held: int, needed: int, key_states: Any, value_states: Any) -> tuple[Any, Any]:
            if self._buffers is None or self._buffers[0].shape[-2] < needed:
                room = (needed // CACHE_CHUNK + 2) * CACHE_CHUNK
                shape = (*key_states.shape[:-2], room, key_states.shape[-1])
                keys, values = key_states.new_empty(shape), value_states.new_empty(shape)
                if held:
                    keys[..., :held, :] = self.keys
                    values[..., :held, :] = self.values
                self._buffers = (keys, values)
            return self._buffers

    return GrowingLayer


def quantized(torch: Any, model: Any) -> tuple[Any, str]:
    """``model`` with its linear layers quantized to int8 (weights once, activations per call: PyTorch's dynamic
    quantization), and the precision it got: the opt-in ``local_precision = "int8"``. A step of a 135M model on a
    CPU is bound by reading the weights from memory, so a quarter of the bytes makes a turn faster
    (benchmarks/bench_local_model.py measures both). Not the default: an activation is quantized with one scale
    for the whole forward pass, so a prompt run in one piece or after a cached prefix, or choices scored together
    or apart, get visibly different scores (measured: up to 2.8 nats on one choice, and a different argmax), where
    float32 differs by 1e-5. A torch without dynamic quantization keeps the float32 model and records "fp32"."""
    import warnings

    quantize = getattr(getattr(torch.ao, "quantization", None), "quantize_dynamic", None)
    if quantize is None:
        return model, "fp32"
    with warnings.catch_warnings():
        # torch announces that its quantized tensors will move to torchao; they still work in this release.
        warnings.filterwarnings("ignore", message=r".*quantiz", category=UserWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return quantize(model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True), "int8"


def side_by_side(
    torch: Any, conts: list[list[int]], prefix: int, shared: int = 0
) -> tuple[list[int], Any, Any]:
    """Continuations laid end to end after a cached prefix of ``prefix`` tokens and ``shared`` more prompt tokens
    that run in the same pass, for one forward pass: the continuations' tokens, the positions of every token run
    (each continuation starts right after the prompt) and the boolean attention mask (True: attends), in which the
    shared tokens are causal after the prefix, and a continuation's token sees the whole prompt and the earlier
    tokens of its own continuation only."""
    flat = [t for cont in conts for t in cont]
    total = shared + len(flat)
    mask = torch.zeros((1, 1, total, prefix + total), dtype=torch.bool)
    mask[..., : prefix + shared] = True
    mask[0, 0, :shared, prefix : prefix + shared] = torch.tril(torch.ones((shared, shared), dtype=torch.bool))
    positions: list[int] = list(range(prefix, prefix + shared))
    start, first = shared, prefix + shared
    for cont in conts:
        n = len(cont)
        mask[0, 0, start : start + n, prefix + start : prefix + start + n] = torch.tril(
            torch.ones((n, n), dtype=torch.bool)
        )
        positions += range(first, first + n)
        start += n
    return flat, torch.tensor([positions]), mask


def crop(cache: Any, length: int) -> None:
    """Cut ``cache`` back to its first ``length`` tokens (a negative crop removes tokens from the end in every
    transformers version; the meaning of a positive one changed)."""
    remove = cache.get_seq_length() - length
    if remove > 0:
        cache.crop(-remove)


class TorchRunner:
    """Forward passes of the transformers model over a growing key/value cache (precisions "mixed", "fp32" and
    "int8"): ``run`` appends tokens and returns the logits of the last ``keep`` of them; ``crop`` and ``reset`` cut
    the cache back; generated tokens run inside ``decoding`` (the bf16 copy under "mixed")."""

    def __init__(self, model: Any, precision: str) -> None:
        self.model = model
        self.decode = DecodeWeights(model) if precision == "mixed" else None
        self.cache: Any = None
        self._keyword: str | None = None

    @property
    def length(self) -> int:
        return 0 if self.cache is None else int(self.cache.get_seq_length())

    def reset(self) -> None:
        self.cache = growing_cache()

    def crop(self, length: int) -> None:
        crop(self.cache, length)

    def decoding(self) -> contextlib.AbstractContextManager[None]:
        return self.decode.active() if self.decode is not None else contextlib.nullcontext()

    def run(self, ids: list[int], keep: int, positions: Any = None, mask: Any = None) -> Any:
        """Run ``ids`` after the cache; the logits after each of the last ``keep`` (float32). ``positions`` and
        ``mask`` (the boolean mask of ``side_by_side``) replace the causal defaults."""
        import torch

        if self.cache is None:
            self.reset()
        extra = {} if positions is None else {"position_ids": positions, "attention_mask": mask}
        # Only the rows asked for: a prompt of n tokens would otherwise allocate n x 49152 floats.
        out = self.model(
            torch.tensor([ids]), use_cache=True, logits_to_keep=keep, **extra, **self._cache_arg()
        )
        return out.logits[0, -keep:].float()

    def _cache_arg(self) -> dict[str, Any]:
        """The cache keyword of the model's forward: ``cache`` in recent transformers, ``past_key_values`` before."""
        if self._keyword is None:
            import inspect

            params = inspect.signature(self.model.forward).parameters
            self._keyword = "cache" if "cache" in params else "past_key_values"
        return {self._keyword: self.cache}
