"""Keys never leak: redaction of errors before they are stored or printed, and credentials refused in run options.

A provider's error can echo the API key (a 401 that quotes the header it got). Every key the process looks up is
remembered here (in memory only) and replaced, with anything shaped like a key, by ``[redacted]`` wherever an error
is stored (the store does it on write) or printed (the CLI does it for every error it shows). Run options and base
URLs are stored with a run, so a credential in them is refused outright (:func:`credential_problem`).
"""

from __future__ import annotations

import re
import threading
from typing import Any
from urllib.parse import parse_qsl, urlparse

REDACTED = "[redacted]"
_KNOWN: set[str] = set()
_LOCK = threading.Lock()
# Shapes of keys and tokens: provider prefixes, bearer headers, and ``key=value`` pairs whose name says credential.
_SHAPES = re.compile(
    r"(?:\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{12,}"  # OpenAI, Anthropic (sk-ant-...), DeepSeek, Stripe-like
    r"|\bAIza[0-9A-Za-z_\-]{20,}"  # Google
    r"|\b(?:ghp|gho|ghs|github_pat|hf|xox[abpr])_[A-Za-z0-9_\-]{12,}"  # GitHub, Hugging Face, Slack
    r"|\bBearer\s+[A-Za-z0-9._~+/=\-]{8,})",
    re.I,
)
CREDENTIAL_NAME = re.compile(
    r"(?:api[_-]?key|apikey|secret|password|passwd|auth|bearer|credential|^token$|_token$|token_|access[_-]?token|"
    r"private[_-]?key|^key$)",
    re.I,
)
_PAIR = re.compile(
    r"""(?P<name>["']?[A-Za-z_][A-Za-z0-9_\-]*["']?\s*[:=]\s*)(?P<q>["']?)(?P<value>[^"'\s,&;}]{8,})""",
)


def remember_secret(value: str | None) -> None:
    """Register a key the process holds, so that it is redacted wherever it shows up in an error."""
    if value and len(value) >= 6 and value != "EMPTY":
        with _LOCK:
            _KNOWN.add(value)


def redact(text: str) -> str:
    """``text`` with every remembered key, anything shaped like a key and every credential ``name=value`` hidden."""
    if not text:
        return text
    text = _SHAPES.sub(REDACTED, redact_known(text))
    return _PAIR.sub(_hide_pair, text)


def redact_known(text: str) -> str:
    """``text`` with every remembered key hidden (cheap enough for every stored text)."""
    with _LOCK:
        known = [s for s in _KNOWN if s in text] if _KNOWN and text else []
    for secret in sorted(known, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def _hide_pair(match: re.Match[str]) -> str:
    name = match.group("name").strip("\"' :=\t")
    if not CREDENTIAL_NAME.search(name) or match.group("value") == REDACTED:
        return match.group(0)
    return f"{match.group('name')}{match.group('q')}{REDACTED}"


def credential_problem(value: Any, where: str = "") -> str | None:
    """Where ``value`` (an option, possibly nested JSON) carries a credential, as ``path``; None when it does not."""
    if isinstance(value, dict):
        for key, inner in value.items():
            path = f"{where}.{key}" if where else str(key)
            if CREDENTIAL_NAME.search(str(key)):
                return path
            found = credential_problem(inner, path)
            if found:
                return found
    elif isinstance(value, list | tuple):
        for i, inner in enumerate(value):
            found = credential_problem(inner, f"{where}[{i}]")
            if found:
                return found
    elif isinstance(value, str):
        if redact(value) != value or (value.startswith(("http://", "https://")) and url_credentials(value)):
            return where or "the value"
    return None


def url_credentials(url: str) -> str | None:
    """What in ``url`` is a credential (a ``user:pass@``, a ``?token=`` or ``#key=`` parameter), or None."""
    parts = urlparse(url)
    if parts.username or parts.password:
        return "a user name or password before the host"
    for name, _value in parse_qsl(parts.query, keep_blank_values=True) + parse_qsl(parts.fragment):
        if CREDENTIAL_NAME.search(name) or name.lower() in ("key", "sig", "signature", "code"):
            return f"the parameter {name!r}"
    if redact(url) != url:
        return "something shaped like a key"
    return None


def refuse_credentials(options: dict[str, Any]) -> None:
    """Raise :class:`AgentError` when a run's agent options (stored with the run) carry a credential."""
    from conflictbench_app.errors import AgentError

    found = credential_problem(options)
    if found:
        raise AgentError(
            f"The agent option {found} looks like a credential; run options are stored with the run, so put keys "
            "in the provider's environment variable or the OS keyring."
        )
