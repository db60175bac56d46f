"""Masking secrets: what a person is shown, and every text the butler stores or prints, never
includes a credential, while the call that runs keeps its exact arguments.

Two mechanisms share this module:

* :func:`redact` masks the *values of secret-looking keys* (headers, fields) for display;
* :func:`mask_text` replaces every *known secret value* — the keys of the providers in use, key
  files' contents, the SMTP password, any environment variable named like a credential — with
  ``****`` wherever it appears, so a key echoed back by a server or a program never reaches
  the screen, a park, the audit log or memory.

:func:`child_env` builds the environment handed to every program the butler starts (commands,
MCP stdio servers): an allowlist, never the butler's own keys.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

SECRET_NAME = re.compile(r"authorization|cookie|token|secret|password|passwd|api[-_]?key", re.I)
MASK = "****"
#: Variables known to hold provider keys, whatever the config says.
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
#: Shorter values are not treated as secrets (masking "abc" everywhere would garble text).
MIN_SECRET_LEN = 6
#: What a child process inherits from the butler's environment (plus LC_* and what the
#: config passes on purpose).
CHILD_ENV_ALLOW = (
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "USER",
    "LOGNAME",
    "SHELL",
    "TMPDIR",
    "COLORTERM",
    "NO_COLOR",
)

_secrets: set[str] = set()


def redact(value: Any) -> Any:
    """A copy with the values of secret-looking keys (at any depth) replaced by ``****``."""
    if isinstance(value, dict):
        return {k: MASK if SECRET_NAME.search(str(k)) else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def remember_secret(value: str | None) -> None:
    """Mask ``value`` from now on, in this process (a key read, a password, a file's key),
    and its common encodings (:func:`encodings`)."""
    if value and len(value.strip()) >= MIN_SECRET_LEN:
        _secrets.update(encodings(value.strip()))


def encodings(secret: str) -> set[str]:
    """``secret`` and the forms it is most often written in elsewhere: base64 (standard and
    URL-safe, padded or not — a file keyring stores it so), URL-encoding, and hex (lower and
    upper case), so an encoded key is masked like the raw one (issue 20). Base64 also as the
    whole groups it makes at each of the three offsets a file can hold it at (`base64 key.txt`
    encodes the key with the line break after it, `base64 .env` with a name before it)."""
    import base64
    from urllib.parse import quote, quote_plus

    raw = secret.encode("utf-8")
    forms = {secret, quote(secret, safe=""), quote_plus(secret), raw.hex(), raw.hex().upper()}
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        text = encode(raw).decode("ascii")
        forms |= {text, text.rstrip("=")}
        for shift in (0, 1, 2):  # the groups made of the secret's bytes only
            shifted = encode(bytes(shift) + raw).decode("ascii")
            forms.add(shifted[4 if shift else 0 : 4 * ((shift + len(raw)) // 3)])
    return {f for f in forms if len(f) >= MIN_SECRET_LEN}


def remember_environment_secrets(
    names: Iterable[str] = (), environ: Mapping[str, str] | None = None
) -> None:
    """Remember the values of the named variables, the known key variables, and every
    variable whose name looks like a credential (``*_TOKEN``, ``*PASSWORD*``…)."""
    env = os.environ if environ is None else environ
    wanted = set(names) | set(KEY_VARIABLES)
    for name, value in env.items():
        if name in wanted or SECRET_NAME.search(name):
            remember_secret(value)


def known_secrets() -> frozenset[str]:
    return frozenset(_secrets)


def mask_text(text: str) -> str:
    """``text`` with every known secret value replaced by ``****`` (longest first, so a key
    that contains another is masked whole)."""
    if not _secrets or not text:
        return text
    ordered = sorted(_secrets, key=len, reverse=True)
    for secret in ordered:
        if secret in text:
            text = text.replace(secret, MASK)
    return _mask_spread(text, ordered)


_WORD = re.compile(r"\S+")
_SPACE = re.compile(r"\s+")


def _mask_spread(text: str, ordered: list[str]) -> str:
    """``text`` with every known secret masked that is written across line breaks or spaces
    (`base64` wraps at 76 columns, `base64 -w 16` at 16, `xxd -p` at 60): the secrets are
    looked for in the text without its white space, and each place found is masked whole,
    the breaks inside it included."""
    compact = _SPACE.sub("", text)
    if len(compact) == len(text) or not any(secret in compact for secret in ordered):
        return text  # almost always: no white space, or no secret across it
    words = [(m.start(), m.group()) for m in _WORD.finditer(text)]
    starts, at = [], 0  # where each word begins in the compact text
    for _, word in words:
        starts.append(at)
        at += len(word)

    def original(index: int) -> int:
        n = bisect.bisect_right(starts, index) - 1
        return words[n][0] + index - starts[n]

    spans: list[tuple[int, int]] = []
    for secret in ordered:
        found = compact.find(secret)
        while found != -1:
            spans.append((original(found), original(found + len(secret) - 1) + 1))
            found = compact.find(secret, found + len(secret))
    if not spans:
        return text
    out, done = [], 0
    for begin, end in sorted(spans):
        if end <= done:
            continue  # inside a span already masked
        out.append(text[done:begin] if begin >= done else "")
        if begin >= done:
            out.append(MASK)
        done = max(done, end)
    out.append(text[done:])
    return "".join(out)


def mask_any(value: Any) -> Any:
    """:func:`mask_text` applied to every string in a JSON-like value."""
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, dict):
        return {mask_any(k): mask_any(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_any(v) for v in value]
    return value


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a program the butler starts: the allowlist (and ``LC_*``) from
    ours, minus any value that is a known secret, plus ``extra`` (what the config passes on
    purpose, e.g. ``[mcp.NAME] env``)."""
    env = {
        name: value
        for name, value in os.environ.items()
        if (name in CHILD_ENV_ALLOW or name.startswith("LC_"))
        and value.strip() not in _secrets
        and not value.startswith("()")  # exported shell functions
    }
    env.update(extra or {})
    return env
