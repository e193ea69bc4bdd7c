"""The ``wan`` world model: diffusers Wan 2.2 pipelines loaded from a local weights folder.

The base clip comes from ``WanPipeline`` (text-to-video), each step from ``WanImageToVideoPipeline`` conditioned on
the previous clip's lossless last frame. Weights are never downloaded here; lay them out as one of:

- ``DIR/model_index.json``: Wan2.2-TI2V-5B-Diffusers, which serves both pipelines;
- ``DIR/t2v/`` and ``DIR/i2v/``: Wan2.2-T2V-A14B-Diffusers and Wan2.2-I2V-A14B-Diffusers
  (e.g. ``huggingface-cli download Wan-AI/Wan2.2-I2V-A14B-Diffusers --local-dir DIR/i2v`` on a machine online).

Defaults follow the official settings (TOOLCHAIN §4): A14B text-to-video shift 12.0, guidance 4.0/3.0;
image-to-video shift 5.0, guidance 3.5/3.5; TI2V-5B shift 5.0, guidance 5.0; the experts' boundary comes from the
model's own config. Steps follow the paper: 40 for the base clip, 20 per step. On CUDA in bf16 (VAE in fp32), with
optional model or sequential CPU offload. Progress and cancellation go through the pipelines' step callbacks.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from conflictbench_app.scenarios.model import Scenario
from conflictbench_app.worldmodel.base import WorldModel
from conflictbench_app.worldmodel.types import (
    CancelToken,
    Clip,
    ProgressFn,
    RenderCancelled,
    TurnVisual,
    WorldModelError,
)

if TYPE_CHECKING:
    import numpy as np

# Wan's official negative prompt (from its reference code), kept in the original Chinese the model was trained with.
WAN_NEGATIVE_PROMPT = (
    "色调艳丽，过曝，静态，细节模糊不清，字幕，风格，作品，画作，画面，静止，整体发灰，最差质量，低质量，JPEG压缩残留，丑陋的，"
    "残缺的，多余的手指，画得不好的手部，画得不好的脸部，畸形的，毁容的，形态畸形的肢体，手指融合，静止不动的画面，杂乱的背景，"
    "三条腿，背景人很多，倒着走"
)
INSTALL_HINT = (
    "The wan renderer needs the [wan] extra: pip install 'conflictbench-studio[wan]' "
    "(pin torch==2.13.0 for the CPU wheel, or install the CUDA build of torch for a GPU)."
)
Offload = Literal["none", "model", "sequential"]


@dataclass(frozen=True)
class WanOptions:
    """What changes a Wan clip besides the weights. ``None`` means: the official value for the model found."""

    base_steps: int = 40
    step_steps: int = 20
    t2v_guidance: float | None = None
    t2v_guidance_2: float | None = None
    t2v_shift: float | None = None
    i2v_guidance: float | None = None
    i2v_guidance_2: float | None = None
    i2v_shift: float | None = None
    negative_prompt: str = WAN_NEGATIVE_PROMPT
    i2v_seed: int | None = None  # one seed for every step clip (None: a seed derived from each clip's key)


# The paper's Wan server: image-to-video guidance 5.0 on both experts and one fixed image-to-video seed; the
# text-to-video seed of each base clip is derived from its key and recorded with the clip, as for every clip.
PAPER_I2V_SEED = 42
PRESETS: dict[str, WanOptions] = {
    "paper": WanOptions(i2v_guidance=5.0, i2v_guidance_2=5.0, i2v_seed=PAPER_I2V_SEED),
}


def preset_options(name: str, base: WanOptions | None = None) -> WanOptions:
    """The named preset's settings over ``base``'s steps (a preset fixes guidance and seeds, not the step count)."""
    from dataclasses import replace

    preset = PRESETS.get(name)
    if preset is None:
        raise WorldModelError(f"Unknown Wan preset {name!r}; use one of: {', '.join(PRESETS)}.")
    if base is None:
        return preset
    return replace(preset, base_steps=base.base_steps, step_steps=base.step_steps)


@dataclass(frozen=True)
class WanFolders:
    t2v: Path
    i2v: Path

    @property
    def shared(self) -> bool:
        return self.t2v == self.i2v


def resolve_folders(
    model_dir: Path | None, t2v_dir: Path | None = None, i2v_dir: Path | None = None
) -> WanFolders:
    """Where the text-to-video and image-to-video weights are; a clear error when they are not there."""
    if t2v_dir is not None and i2v_dir is not None:
        return WanFolders(_check_folder(Path(t2v_dir)), _check_folder(Path(i2v_dir)))
    if model_dir is None:
        from conflictbench_app.settings import get_settings

        model_dir = get_settings().wan_model_dir
    if model_dir is None:
        raise WorldModelError(
            "No Wan weights are configured: pass --wan-model DIR (or set CONFLICTBENCH_WAN_MODEL_DIR) to a folder "
            "holding Wan2.2-TI2V-5B-Diffusers, or t2v/ and i2v/ subfolders with the A14B models."
        )
    root = Path(model_dir)
    if not root.is_dir():
        raise WorldModelError(
            f"The Wan weights folder {root} does not exist; pass the folder you downloaded them to."
        )
    if (root / "model_index.json").is_file():
        return WanFolders(_check_serves_both(root), root)
    if (root / "t2v" / "model_index.json").is_file() and (root / "i2v" / "model_index.json").is_file():
        return WanFolders(root / "t2v", root / "i2v")
    raise WorldModelError(
        f"No Wan weights in {root}: expected model_index.json (Wan2.2-TI2V-5B-Diffusers) or t2v/ and i2v/ "
        "subfolders (Wan2.2-T2V-A14B-Diffusers, Wan2.2-I2V-A14B-Diffusers) as written by save_pretrained or "
        "huggingface-cli download."
    )


def _check_serves_both(folder: Path) -> Path:
    """A lone model folder must serve both roles (text-to-video for a scenario's first clip, image-to-video for the
    rest), as Wan2.2-TI2V-5B does; one A14B model alone would fail deep inside diffusers with a tensor-shape error."""
    index = _read_json(folder / "model_index.json")
    config = _read_json(folder / "transformer" / "config.json")
    if config.get("in_channels", 0) != config.get("out_channels", 0):
        only, missing = "image-to-video (Wan2.2-I2V-A14B)", "text-to-video"
    elif (index.get("transformer_2") or [None])[0] is not None and not index.get("expand_timesteps"):
        only, missing = "text-to-video (Wan2.2-T2V-A14B)", "image-to-video"
    else:
        return folder
    raise WorldModelError(
        f"{folder} holds a {only} model alone, and the {missing} clips need another: put the A14B models in "
        f"t2v/ and i2v/ subfolders of one folder, or use Wan2.2-TI2V-5B-Diffusers, which serves both."
    )


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise WorldModelError(f"Cannot read {path} ({exc}); is the Wan model folder complete?") from exc
    return data if isinstance(data, dict) else {}


def _check_folder(folder: Path) -> Path:
    if not (folder / "model_index.json").is_file():
        raise WorldModelError(
            f"{folder} holds no model_index.json; point it at a diffusers-format Wan model folder."
        )
    return folder


def weights_revision(folders: WanFolders) -> str:
    """A fingerprint of the weights: every config file's content and every weight file's name and size."""
    digest = hashlib.sha256()
    for folder in dict.fromkeys([folders.t2v, folders.i2v]):
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            rel = path.relative_to(folder).as_posix()
            if any(part.startswith(".") for part in path.relative_to(folder).parts):
                continue  # e.g. .cache/huggingface download metadata, which changes on every download
            digest.update(rel.encode())
            if path.suffix in {".json", ".txt", ".model"}:
                digest.update(path.read_bytes())
            else:
                digest.update(str(path.stat().st_size).encode())
    return digest.hexdigest()[:16]


def require_wan_extra() -> None:
    missing = [
        name
        for name in ("torch", "diffusers", "transformers", "ftfy")
        if importlib.util.find_spec(name) is None
    ]
    if missing:
        raise WorldModelError(f"{INSTALL_HINT} Missing: {', '.join(missing)}.")


class WanWorldModel(WorldModel):
    """Wan 2.2 clips (see the module docstring). Weights load on the first miss, never for a cache hit."""

    name = "wan"

    def __init__(
        self,
        *,
        model_dir: Path | None = None,
        t2v_dir: Path | None = None,
        i2v_dir: Path | None = None,
        device: str | None = None,
        dtype: str | None = None,
        offload: Offload = "none",
        options: WanOptions | None = None,
        preset: str = "",
        **base: Any,
    ) -> None:
        super().__init__(**base)
        require_wan_extra()
        if (self.spec.frames - 1) % 4:
            raise WorldModelError(f"Wan needs 4k+1 frames (49, 81, ...), not {self.spec.frames}.")
        self.folders = resolve_folders(model_dir, t2v_dir, i2v_dir)
        self.options = preset_options(preset, options) if preset else (options or WanOptions())
        self.device, self.dtype, self.offload = device, dtype, offload
        self._revision = weights_revision(self.folders)
        self._pipes: dict[str, Any] = {}

    @property
    def revision(self) -> str:
        return self._revision

    def settings(self) -> dict[str, Any]:
        wan = asdict(self.options)
        if wan["i2v_seed"] is None:
            del wan["i2v_seed"]  # keys of clips rendered before the field existed stay the same
        return {**super().settings(), "wan": wan}

    def step_seed(self, key: str) -> int:
        """The preset's fixed image-to-video seed when it has one (the paper's server), else the key's."""
        return self.options.i2v_seed if self.options.i2v_seed is not None else super().step_seed(key)

    def render_base(
        self,
        scenario: Scenario,
        prompt: str,
        seed: int,
        progress: ProgressFn | None,
        cancel: CancelToken | None,
    ) -> np.ndarray:
        pipe = self._pipe("t2v")
        return self._generate(pipe, "t2v", prompt, seed, self.options.base_steps, progress, cancel)

    def render_step(
        self,
        scenario: Scenario,
        turns: Sequence[TurnVisual],
        previous: Clip,
        prompt: str,
        seed: int,
        progress: ProgressFn | None,
        cancel: CancelToken | None,
    ) -> np.ndarray:
        from PIL import Image

        pipe = self._pipe("i2v")
        with Image.open(
            previous.last_frame
        ) as image:  # the lossless last frame: no loss compounds along a chain
            condition = image.convert("RGB")
        return self._generate(
            pipe, "i2v", prompt, seed, self.options.step_steps, progress, cancel, image=condition
        )

    # Pipelines ------------------------------------------------------------------------------------------------

    def _pipe(self, role: Literal["t2v", "i2v"]) -> Any:
        if role in self._pipes:
            return self._pipes[role]
        import torch
        from diffusers import AutoencoderKLWan, WanImageToVideoPipeline, WanPipeline

        if not self.folders.shared:
            self._release_other(role)
        if self.folders.shared and self._pipes:
            # TI2V-5B: one set of weights serves both roles.
            other = next(iter(self._pipes.values()))
            pipe = (WanPipeline if role == "t2v" else WanImageToVideoPipeline).from_pipe(other)
        else:
            folder = self.folders.t2v if role == "t2v" else self.folders.i2v
            cls = WanPipeline if role == "t2v" else WanImageToVideoPipeline
            dtype = self._torch_dtype()
            try:
                vae = AutoencoderKLWan.from_pretrained(folder, subfolder="vae", dtype=torch.float32)
                pipe = cls.from_pretrained(folder, vae=vae, dtype=dtype)
            except (OSError, ValueError) as exc:
                raise WorldModelError(
                    f"Cannot load the Wan model in {folder} ({exc}); check that the download is complete."
                ) from exc
            self._place(pipe)
        pipe.set_progress_bar_config(disable=True)
        self._set_shift(pipe, role)
        self._pipes[role] = pipe
        return pipe

    def _release_other(self, role: str) -> None:
        """A14B: keep one 14B pipeline resident at a time."""
        for other in [r for r in self._pipes if r != role]:
            del self._pipes[other]
        if importlib.util.find_spec("torch") is not None:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()

    def _device(self) -> str:
        import torch

        return self.device or ("cuda" if torch.cuda.is_available() else "cpu")

    def _torch_dtype(self) -> Any:
        import torch

        name = self.dtype or ("bfloat16" if self._device().startswith("cuda") else "float32")
        return {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[name]

    def _place(self, pipe: Any) -> None:
        device = self._device()
        if self.offload == "model":
            pipe.enable_model_cpu_offload(device=device)
        elif self.offload == "sequential":
            pipe.enable_sequential_cpu_offload(device=device)
        else:
            pipe.to(device)

    def _set_shift(self, pipe: Any, role: str) -> None:
        shift = self._official(pipe, role)["shift"]
        config = dict(pipe.scheduler.config)
        key = "flow_shift" if "flow_shift" in config else "shift"
        pipe.scheduler = type(pipe.scheduler).from_config(config, **{key: shift})

    def _official(self, pipe: Any, role: str) -> dict[str, Any]:
        """The official settings for this model and role, overridden by :class:`WanOptions`."""
        experts = pipe.config.boundary_ratio is not None
        if not experts:  # TI2V-5B
            defaults: dict[str, Any] = {"shift": 5.0, "guidance": 5.0, "guidance_2": None}
        elif role == "t2v":
            defaults = {"shift": 12.0, "guidance": 4.0, "guidance_2": 3.0}
        else:
            defaults = {"shift": 5.0, "guidance": 3.5, "guidance_2": 3.5}
        o = self.options
        chosen = {
            "shift": o.t2v_shift if role == "t2v" else o.i2v_shift,
            "guidance": o.t2v_guidance if role == "t2v" else o.i2v_guidance,
            "guidance_2": o.t2v_guidance_2 if role == "t2v" else o.i2v_guidance_2,
        }
        merged = {k: (v if v is not None else defaults[k]) for k, v in chosen.items()}
        if not experts:
            merged["guidance_2"] = None  # diffusers refuses guidance_scale_2 without two experts
        return merged

    def _generate(
        self,
        pipe: Any,
        role: str,
        prompt: str,
        seed: int,
        steps: int,
        progress: ProgressFn | None,
        cancel: CancelToken | None,
        **inputs: Any,
    ) -> np.ndarray:
        import numpy as np
        import torch

        settings = self._official(pipe, role)
        extra = {"guidance_scale_2": settings["guidance_2"]} if settings["guidance_2"] is not None else {}

        def on_step(_pipe: Any, index: int, _timestep: Any, _tensors: dict[str, Any]) -> dict[str, Any]:
            if progress is not None:
                progress(index + 1, steps)
            if cancel is not None and cancel.is_set():
                # Raising here stops at once; the interrupt flag would still spend a full VAE decode.
                raise _Stop
            return {}

        try:
            output = pipe(
                prompt=prompt,
                negative_prompt=self.options.negative_prompt,
                height=self.spec.height,
                width=self.spec.width,
                num_frames=self.spec.frames,
                num_inference_steps=steps,
                guidance_scale=settings["guidance"],
                generator=torch.Generator("cpu").manual_seed(seed),
                output_type="np",
                callback_on_step_end=on_step,
                **extra,
                **inputs,
            )
        except _Stop:
            raise RenderCancelled("Rendering was cancelled; nothing was saved for this clip.") from None
        frames = np.asarray(output.frames[0])
        return (np.clip(frames, 0.0, 1.0) * 255).round().astype(np.uint8)


class _Stop(Exception):
    """Raised from a step callback to abandon a generation."""
