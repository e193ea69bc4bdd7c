"""API keys: from an environment variable, else from the OS keyring (service ``conflictbench``, user = profile name).

Keys live only in memory and in the HTTP client's Authorization header: never in run settings, the database, logs or
exports. Store one with ``keyring set conflictbench openai``. ``CONFLICTBENCH_NO_KEYRING=1`` skips the keyring.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from conflictbench_app.errors import SettingsError
from conflictbench_app.redact import remember_secret

KEYRING_SERVICE = "conflictbench"
KEYRING_TIMEOUT_S = 3.0  # a locked desktop keyring may prompt or block: never let a run wait on it


@dataclass(frozen=True)
class KeyLookup:
    """Where a key was found. ``value`` must never be printed, logged or stored."""

    value: str | None
    source: str  # "env:NAME" | "keyring" | "none"
    note: str = ""  # why the keyring was not usable, when it was not

    @property
    def found(self) -> bool:
        return bool(self.value)

    def __repr__(self) -> str:  # keep the value out of tracebacks and debug prints
        return f"KeyLookup(found={self.found}, source={self.source!r}, note={self.note!r})"


def find_key(profile: str, key_env: str) -> KeyLookup:
    """The key for ``profile``: the variable ``key_env`` first, then the keyring."""
    if key_env and os.environ.get(key_env):
        remember_secret(os.environ[key_env])  # redacted from every error stored or printed from now on
        return KeyLookup(os.environ[key_env], f"env:{key_env}")
    if os.environ.get("CONFLICTBENCH_NO_KEYRING"):
        return KeyLookup(None, "none", "keyring disabled by CONFLICTBENCH_NO_KEYRING")
    value, note = keyring_lookup(profile)
    remember_secret(value)
    return KeyLookup(value, "keyring" if value else "none", note)


def keyring_lookup(profile: str, timeout: float = KEYRING_TIMEOUT_S) -> tuple[str | None, str]:
    """(key or None, note). Never raises and never blocks longer than ``timeout``: no keyring is not an error."""
    result: list[tuple[str | None, str]] = []

    def lookup() -> None:
        result.append(_keyring_get(profile))

    worker = threading.Thread(target=lookup, name="keyring-lookup", daemon=True)
    worker.start()
    worker.join(timeout)
    if not result:
        return None, f"the OS keyring did not answer within {timeout:.0f} s"
    return result[0]


def _keyring_get(profile: str) -> tuple[str | None, str]:
    try:
        import keyring
        import keyring.errors
        from keyring.backends import fail
    except ImportError:
        return None, "the keyring package is not installed"
    backend = keyring.get_keyring()
    if isinstance(backend, fail.Keyring):
        return None, "no OS keyring backend is available"
    try:
        return keyring.get_password(KEYRING_SERVICE, profile), ""
    except keyring.errors.KeyringError as exc:
        return None, f"the OS keyring failed ({type(exc).__name__})"


def set_api_key(profile: str, value: str) -> None:
    """Store ``profile``'s key in the OS keyring (an empty value removes it). Never writes it anywhere else."""
    try:
        import keyring
        import keyring.errors
        from keyring.backends import fail
    except ImportError as exc:  # pragma: no cover - keyring is a dependency
        raise SettingsError(
            "The keyring package is not installed; set the provider's key variable instead."
        ) from exc
    if isinstance(keyring.get_keyring(), fail.Keyring):
        raise SettingsError(
            "No OS keyring is available on this system; set the provider's key variable in your environment instead."
        )
    try:
        if value:
            keyring.set_password(KEYRING_SERVICE, profile, value)
        else:
            keyring.delete_password(KEYRING_SERVICE, profile)
    except keyring.errors.KeyringError as exc:
        raise SettingsError(
            f"The OS keyring refused the key ({type(exc).__name__}); try again or use the key variable."
        ) from exc
