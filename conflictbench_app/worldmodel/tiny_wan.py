"""A tiny random-weight Wan 2.2 pipeline, saved to a folder exactly as real weights are laid out.

Tests and the benchmark load it through the same ``from_pretrained`` path as the real Wan2.2 weights, so the whole
backend runs on CPU in seconds. The shape follows diffusers' own Wan fast tests; ``expand_timesteps=True`` makes it a
TI2V-5B-style model (one folder serves text-to-video and image-to-video, and the first latent frame of an
image-to-video clip is the encoded conditioning image). Its pictures are noise: it checks plumbing, not quality.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

_VOCAB_TEXT = (
    "the a an of to and in on with from over next seconds actuators lever valve panel alarm red strobe light steam "
    "camera fixed view control room server rack gauge pressure door lock return rest idle scene motion"
)


TinyKind = Literal["ti2v", "t2v-a14b", "i2v-a14b"]


def build_tiny_wan(folder: Path, *, kind: TinyKind = "ti2v", seed: int = 0) -> Path:
    """Write a tiny random Wan pipeline (``model_index.json`` + components) to ``folder`` and return it.

    ``ti2v``: one transformer, ``expand_timesteps`` (like Wan2.2-TI2V-5B; serves both text- and image-to-video).
    ``t2v-a14b`` / ``i2v-a14b``: two experts and a ``boundary_ratio`` (like Wan2.2-T2V/I2V-A14B; the I2V
    transformer takes the 16 latent + 20 condition channels). Needs the ``wan`` extra (torch, diffusers, transformers).
    """
    import torch
    from diffusers import (
        AutoencoderKLWan,
        FlowMatchEulerDiscreteScheduler,
        WanImageToVideoPipeline,
        WanPipeline,
    )
    from transformers import UMT5Config, UMT5EncoderModel

    torch.manual_seed(seed)
    vae = AutoencoderKLWan(
        base_dim=3, z_dim=16, dim_mult=[1, 1, 1, 1], num_res_blocks=1, temperal_downsample=[False, True, True]
    )
    text_encoder = UMT5EncoderModel(
        UMT5Config(
            vocab_size=256,
            d_model=32,
            d_kv=8,
            d_ff=32,
            num_layers=1,
            num_heads=2,
            relative_attention_num_buckets=8,
        )
    )
    common: dict[str, Any] = {
        "tokenizer": _tiny_tokenizer(),
        "text_encoder": text_encoder,
        "vae": vae,
        "scheduler": FlowMatchEulerDiscreteScheduler(shift=5.0),
    }
    pipe: Any
    if kind == "ti2v":
        pipe = WanImageToVideoPipeline(
            **common,
            image_processor=None,
            image_encoder=None,
            transformer=_tiny_transformer(16),
            expand_timesteps=True,
        )
    elif kind == "t2v-a14b":
        pipe = WanPipeline(
            **common,
            transformer=_tiny_transformer(16),
            transformer_2=_tiny_transformer(16),
            boundary_ratio=0.875,
        )
    elif kind == "i2v-a14b":
        pipe = WanImageToVideoPipeline(
            **common,
            image_processor=None,
            image_encoder=None,
            transformer=_tiny_transformer(36),
            transformer_2=_tiny_transformer(36),
            boundary_ratio=0.9,
        )
    else:
        raise ValueError(f"Unknown tiny Wan kind {kind!r}; use ti2v, t2v-a14b or i2v-a14b.")
    folder.mkdir(parents=True, exist_ok=True)
    pipe.save_pretrained(folder)
    return folder


def _tiny_transformer(in_channels: int) -> Any:
    from diffusers import WanTransformer3DModel

    return WanTransformer3DModel(
        patch_size=(1, 2, 2),
        num_attention_heads=2,
        attention_head_dim=12,
        in_channels=in_channels,
        out_channels=16,
        text_dim=32,
        freq_dim=256,
        ffn_dim=32,
        num_layers=2,
        cross_attn_norm=True,
        qk_norm="rms_norm_across_heads",
        rope_max_seq_len=1024,  # as in the real models: enough for 832x480 clips
    )


def _tiny_tokenizer() -> Any:
    """A word-level tokenizer trained in memory (no hub access), wrapped as a transformers fast tokenizer."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(vocab_size=256, special_tokens=["<pad>", "</s>", "<unk>"])
    tok.train_from_iterator([_VOCAB_TEXT], trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
    )
