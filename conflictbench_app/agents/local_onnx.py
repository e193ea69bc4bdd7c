"""The embedded model on ONNX Runtime: the graph it runs, how it is built, and its forward passes.

The de-quantized float32 model (the converted copy ``local_model`` keeps) is exported once by ONNX Runtime GenAI's
model builder, which writes a float32 graph with ONNX Runtime's fused attention (``GroupQueryAttention``) and
rotary embeddings. Three inputs are then added to the graph, so that it can do what the transformers model does for
us: ``position_ids`` and ``attention_bias`` (both already inputs of the attention operator; the builder leaves them
unwired), which let the scored choices run side by side in one pass, and ``logits_to_keep``, so that a prompt pass
computes the vocabulary's logits for its last rows only. The builder runs in a child process (it loads the torch
model, whose memory then goes back), once per converted copy and builder release.

The key/value cache lives in buffers with room ahead, bound as both the attention's past and its present (ONNX
Runtime then writes the new tokens in place instead of copying the whole cache at every pass). On the development
machine this runs prompts 1.5x and one-token passes 1.2-1.4x faster than torch; see docs/local-model.md.

onnxruntime, onnxruntime-genai and onnx are imported only here, when the ``onnx`` precision is loaded.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from conflictbench_app.errors import AgentError

GRAPH_REVISION = 1  # bump when add_inputs changes: the folder name keys the built graph by it
CACHE_ROOM = 2048  # tokens the key/value buffers hold before they grow (doubling)
MASKED = -3.0e38  # the attention bias of a position a token must not see
BUILD_TIMEOUT_S = 1800
HINT = (
    'install it with `pip install -e ".[local]"`, or set local_precision = "mixed" in the settings to run the '
    "embedded model on torch instead"
)


def onnx_dir(converted: Path) -> Path:
    """Where the graph built from ``converted`` lives: beside it, keyed by the builder's release and our revision."""
    import importlib.metadata

    try:
        builder = importlib.metadata.version("onnxruntime-genai")
    except importlib.metadata.PackageNotFoundError as exc:
        raise AgentError(f"The onnx precision needs onnxruntime-genai: {HINT}.") from exc
    return converted.with_name(f"{converted.name}.onnx-genai{builder}-r{GRAPH_REVISION}")


def load_runner(converted: Path) -> OnnxRunner:
    """The runner for the converted model in ``converted``, building its graph first when there is none."""
    try:
        import onnxruntime
    except ImportError as exc:
        raise AgentError(f"The onnx precision needs onnxruntime: {HINT}.") from exc
    folder = onnx_dir(converted)
    if not (folder / "model.onnx").is_file():
        build(converted, folder)
    options = onnxruntime.SessionOptions()
    options.inter_op_num_threads = 1  # one graph, run op after op: the cores go to each op's own threads
    options.log_severity_level = 3  # the builder's graph makes ORT warn about unused initializers
    try:
        session = onnxruntime.InferenceSession(
            str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # ONNX Runtime raises its own Fail/InvalidGraph/RuntimeError types
        raise AgentError(
            f"The embedded model's ONNX graph in {folder} could not be loaded ({exc}). Delete that folder to "
            f'build it again on the next load, or set local_precision = "mixed".'
        ) from exc
    config = json.loads((converted / "config.json").read_text(encoding="utf-8"))
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    return OnnxRunner(session, config["num_hidden_layers"], config["num_key_value_heads"], head_dim)


def build(converted: Path, folder: Path) -> None:
    """Export ``converted`` to a float32 ONNX graph in ``folder`` (written whole or not at all)."""
    staging = folder.with_name(folder.name + f".tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    raw = staging / "builder"
    command = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-m", str(converted), "-i"]
    command += [str(converted), "-o", str(raw), "-p", "fp32", "-e", "cpu", "-c", str(staging / "cache")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1"}
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise AgentError(
            f"Building the embedded model's ONNX graph took over {BUILD_TIMEOUT_S} s; {HINT}."
        ) from exc
    if done.returncode != 0 or not (raw / "model.onnx").is_file():
        shutil.rmtree(staging, ignore_errors=True)
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-6:])
        raise AgentError(
            f"Building the embedded model's ONNX graph failed (exit {done.returncode}):\n{tail}\n"
            f'Reinstall the [local] extra, or set local_precision = "mixed" to run it on torch.'
        )
    add_inputs(raw / "model.onnx", staging / "model.onnx")
    shutil.rmtree(raw)
    shutil.rmtree(staging / "cache", ignore_errors=True)
    try:
        os.replace(staging, folder)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if not (folder / "model.onnx").is_file():  # else another process built the same graph first
            raise AgentError(f"Could not save the embedded model's ONNX graph in {folder}: {exc}.") from exc


def add_inputs(source: Path, target: Path) -> None:
    """Wire ``position_ids`` and ``attention_bias`` into every attention node, and slice the rows the language
    model head runs to the last ``logits_to_keep``."""
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(str(source))
    graph = model.graph
    graph.input.extend(
        [
            helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info(
                "attention_bias", TensorProto.FLOAT, ["batch", 1, "sequence", "total_sequence"]
            ),
            helper.make_tensor_value_info("logits_to_keep", TensorProto.INT64, [1]),
        ]
    )
    attention = [node for node in graph.node if node.op_type == "GroupQueryAttention"]
    if not attention:
        raise AgentError(f"The built graph {source} has no GroupQueryAttention node; {HINT}.")
    for node in attention:
        inputs = [*node.input, *[""] * (11 - len(node.input))]
        inputs[9], inputs[10] = "position_ids", "attention_bias"  # the operator's optional inputs 9 and 10
        node.ClearField("input")
        node.input.extend(inputs[:11])
    head = next(node for node in graph.node if list(node.output) == ["logits"])
    graph.initializer.extend(
        [
            helper.make_tensor("keep_end", TensorProto.INT64, [1], [2**62]),
            helper.make_tensor("keep_axis", TensorProto.INT64, [1], [1]),
        ]
    )
    at = list(graph.node).index(head)
    graph.node.insert(at, helper.make_node("Neg", ["logits_to_keep"], ["keep_start"]))
    graph.node.insert(
        at + 1, helper.make_node("Slice", [head.input[0], "keep_start", "keep_end", "keep_axis"], ["kept"])
    )
    head.input[0] = "kept"
    onnx.save(model, str(target), save_as_external_data=True, location="model.onnx.data")


class OnnxRunner:
    """Forward passes over a key/value cache, as ``local_torch.TorchRunner`` gives them: ``run`` appends tokens and
    returns the logits of the last ``keep`` of them; ``crop`` and ``reset`` cut the cache back."""

    def __init__(self, session: Any, layers: int, kv_heads: int, head_dim: int) -> None:
        self.session = session
        self.layers = layers
        self._shape = (1, kv_heads, 0, head_dim)
        self._buffers: list[Any] = []  # keys of every layer, then values (OrtValues over ``_arrays``)
        self._arrays: list[Any] = []
        self.length = 0
        self._make_room(CACHE_ROOM)

    def reset(self) -> None:
        self.length = 0

    def crop(self, length: int) -> None:
        self.length = min(self.length, length)

    def decoding(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()  # one float32 graph for every pass

    def run(self, ids: list[int], keep: int, positions: Any = None, mask: Any = None) -> Any:
        """Run ``ids`` after the cache; the logits after each of the last ``keep`` (a float32 torch tensor).
        ``positions`` and ``mask`` (the boolean mask of ``side_by_side``) replace the causal defaults."""
        import numpy as np
        import torch

        if mask is not None and self.length == 0 and len(ids) > 1:
            # With an empty cache the attention operator takes the pass for a first prompt and ignores the positions
            # and the bias (measured: choices after the first scored as if they followed it). So one plain token
            # first, and the rest after it.
            first = self.run(ids[:1], 1)
            rest = self.run(ids[1:], min(keep, len(ids) - 1), positions[..., 1:], mask[..., 1:, :])
            return torch.cat([first, rest]) if keep > len(ids) - 1 else rest
        total = self.length + len(ids)
        if total > self.room:
            self._make_room(max(2 * self.room, total))
        binding = self.session.io_binding()
        binding.bind_output("logits")
        binding.bind_cpu_input("input_ids", np.asarray([ids], dtype=np.int64))
        binding.bind_cpu_input("attention_mask", np.ones((1, total), dtype=np.int64))
        if positions is None:
            positions = np.arange(self.length, total, dtype=np.int64)[None]
        binding.bind_cpu_input("position_ids", np.asarray(positions, dtype=np.int64))
        if mask is None:
            bias = np.zeros((1, 1, len(ids), total), dtype=np.float32)  # causal already: the operator's own
        else:
            bias = np.where(np.asarray(mask), np.float32(0), np.float32(MASKED)).astype(np.float32)
        binding.bind_cpu_input("attention_bias", bias)
        binding.bind_cpu_input("logits_to_keep", np.asarray([keep], dtype=np.int64))
        for layer in range(self.layers):
            for kind, buffer in (
                ("key", self._buffers[layer]),
                ("value", self._buffers[self.layers + layer]),
            ):
                binding.bind_ortvalue_input(f"past_key_values.{layer}.{kind}", buffer)
                binding.bind_ortvalue_output(f"present.{layer}.{kind}", buffer)  # the same buffer: in place
        self.session.run_with_iobinding(binding)
        self.length = total
        return torch.from_numpy(binding.get_outputs()[0].numpy()[0, -keep:])

    @property
    def room(self) -> int:
        return int(self._arrays[0].shape[2]) if self._arrays else 0

    def _make_room(self, room: int) -> None:
        """Buffers for ``room`` tokens, holding what the old ones held."""
        import numpy as np
        import onnxruntime

        shape = (*self._shape[:2], room, self._shape[3])
        arrays = []
        for index in range(2 * self.layers):
            array = np.zeros(shape, dtype=np.float32)
            if self._arrays and self.length:
                array[:, :, : self.length] = self._arrays[index][:, :, : self.length]
            arrays.append(array)
        self._arrays = arrays  # the OrtValues write into these arrays' memory
        self._buffers = [onnxruntime.OrtValue.ortvalue_from_numpy(array) for array in arrays]
