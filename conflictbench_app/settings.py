"""One settings model: defaults that work offline, overridden by a TOML file and ``CONFLICTBENCH_*`` variables."""

from __future__ import annotations

import os
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from conflictbench_app.errors import SettingsError

# Seconds a story may take to answer one input before it is taken as hung (the default of settings.engine_timeout).
REPLY_TIMEOUT = 10.0


def user_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "conflictbench"


def user_config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "conflictbench"


def project_root() -> Path | None:
    """The checkout this package runs from, when it runs from one (not from an installed wheel)."""
    root = Path(__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() else None


def default_scenarios_dir() -> Path:
    root = project_root()
    if root is not None:
        return root / "scenarios"
    return Path(__file__).resolve().parent / "resources" / "scenarios"


def user_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "conflictbench"


def default_cache_dir() -> Path:
    """Rendered clips and other regenerable files: the user's cache folder (``$XDG_CACHE_HOME/conflictbench``), never
    the data folder (which holds what cannot be regenerated) nor the checkout. ``CONFLICTBENCH_CACHE_DIR`` moves it."""
    return user_cache_dir()


class ProviderProfile(BaseModel):
    """An OpenAI-compatible endpoint. Keys are never stored here: only the name of the variable that holds one."""

    base_url: str
    key_env: str = ""
    vision: bool = True
    video: bool = False
    # How the endpoint takes a clip natively when `video` is on: "frames" (DashScope) or "video_url" (vLLM).
    video_format: Literal["frames", "video_url"] = "frames"
    # Earlier turns' frames kept in the conversation (0: only the current turn's, to bound tokens).
    history_images: int = Field(default=0, ge=0)
    extra_body: dict[str, Any] = Field(default_factory=dict)
    # Models offered for this profile in the app's pickers and `conflictbench agents` (any other still works).
    models: list[str] = Field(default_factory=list)
    # Per model id: the request options the paper used for it (``reasoning_effort``, ``temperature``,
    # ``extra_body``), recorded with every run of that model.
    model_options: dict[str, dict[str, Any]] = Field(default_factory=dict)


class Settings(BaseSettings):
    """Application settings. File: ``$XDG_CONFIG_HOME/conflictbench/settings.toml`` (or ``CONFLICTBENCH_SETTINGS``)."""

    model_config = SettingsConfigDict(env_prefix="CONFLICTBENCH_", env_nested_delimiter="__", extra="ignore")

    db: Path = Field(default_factory=lambda: user_data_dir() / "conflictbench.db")
    scenarios_dir: Path = Field(default_factory=default_scenarios_dir)
    cache_dir: Path = Field(default_factory=default_cache_dir)
    toolchain_dir: Path = Field(default_factory=lambda: user_data_dir() / "toolchain")
    glulxe: Path | None = None
    inform7_dir: Path | None = None
    engine_timeout: float = REPLY_TIMEOUT
    rng_seed: int = 1
    max_turns_text: int = 14
    max_turns_multimodal: int = 10
    renderer: str = "schematic"
    wan_model_dir: Path | None = None
    annotator: str = ""
    # The agent the app's pickers start on (e.g. "random:1", "openai:gpt-4o"); empty: a keyed model, else the
    # embedded one, else random:1 (see agents.registry.default_agent).
    default_agent: str = ""
    # How the embedded model runs: "onnx" (the GGUF file de-quantized to float32 and run by ONNX Runtime, its graph
    # built once on first use: the fastest on a CPU), "mixed" (float32 on torch for prompts and action scores, plus
    # a bfloat16 copy for the thought's generated tokens), "fp32" (float32 on torch throughout) or "int8" (torch's
    # dynamically quantized linear layers: its activations are quantized per call, so a score depends on what else
    # was in the same forward pass). "onnx" and "fp32" score actions alike (within 1e-3 nats). Each step of a local
    # run records which.
    local_precision: Literal["onnx", "mixed", "fp32", "int8"] = "onnx"
    # Paper folders imported in the app's library, offered again at the next start.
    library_sources: list[Path] = Field(default_factory=list)
    providers: dict[str, ProviderProfile] = Field(default_factory=dict)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _TomlSource(settings_cls))


def settings_file() -> Path:
    return Path(os.environ.get("CONFLICTBENCH_SETTINGS") or user_config_dir() / "settings.toml")


def read_settings_file(path: Path | None = None) -> dict[str, Any]:
    """The settings file's raw contents ({} when there is none)."""
    path = path or settings_file()
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"The settings file {path} is not valid TOML ({exc}); fix or delete it.") from exc


def write_settings(changes: dict[str, Any], path: Path | None = None) -> Path:
    """Merge ``changes`` into the settings file (an empty value removes the key), check the result is valid, write
    it atomically and clear the cached settings. API keys are refused: they belong in the OS keyring."""
    import tomli_w

    path = path or settings_file()
    data = read_settings_file(path)
    for key, value in changes.items():
        if value is None or value == "":
            data.pop(key, None)
        else:
            data[key] = _plain(value)
    if any(k.lower() == "key" or "api_key" in k.lower() for k in _all_keys(data)):
        raise SettingsError("API keys belong in the OS keyring, not in the settings file.")
    try:
        Settings.model_validate(data)
    except ValidationError as exc:
        raise SettingsError(f"These settings are not valid: {_problems(exc)}.") from exc
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(tomli_w.dumps(data), encoding="utf-8")
    tmp.replace(path)
    get_settings.cache_clear()
    return path


def _plain(value: Any) -> Any:
    """Values TOML can hold: paths as text, nested tables and lists converted all the way down."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, BaseModel):
        return _plain(value.model_dump(exclude_defaults=True))
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _all_keys(data: dict[str, Any]) -> list[str]:
    keys = []
    for key, value in data.items():
        keys.append(key)
        if isinstance(value, dict):
            keys += _all_keys(value)
    return keys


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())


class _TomlSource(PydanticBaseSettingsSource):
    def get_field_value(
        self, field: Any, field_name: str
    ) -> tuple[Any, str, bool]:  # pragma: no cover - unused
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return read_settings_file()


def turn_cap(setting: str) -> int:
    """The run-level turn cap of a setting: the paper's 14 text-only and 10 multimodal unless the settings change it."""
    settings = get_settings()
    return settings.max_turns_multimodal if setting == "multimodal" else settings.max_turns_text


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        raise SettingsError(
            f"Invalid settings ({_problems(exc)}). Fix {settings_file()} or the CONFLICTBENCH_* variables."
        ) from exc
