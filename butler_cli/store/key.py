"""The MAC key that makes park files tamper-evident (spec X3). Created on first use, 0600."""

from __future__ import annotations

from pathlib import Path

from butler_cli.core.errors import UsageError
from butler_cli.store.files import create_exclusive, read_no_follow
from butler_cli.store.ids import token_hex

KEY_FILE = "park.key"
_KEY_HEX_LEN = 64


def load_key(home: Path, *, create: bool) -> bytes | None:
    """The key under ``home``; created when missing and ``create``, else None when missing.

    A present but unreadable or malformed key is reported, never replaced: replacing it would
    silently make every existing park unresumable.
    """
    path = home / KEY_FILE
    if create and not path.exists():
        create_exclusive(path, token_hex(32).encode("ascii") + b"\n")
    try:
        raw = read_no_follow(path).strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"cannot read the park key {path}: {exc.strerror or exc}") from exc
    if len(raw) != _KEY_HEX_LEN or not all(c in b"0123456789abcdef" for c in raw):
        raise UsageError(
            f"the park key {path} is malformed; restore it from a backup "
            "(it was left as it is; parks made with another key cannot be resumed)",
            code="bad_key",
        )
    return bytes.fromhex(raw.decode("ascii"))


def sign(key: bytes, body: bytes) -> str:
    import hashlib
    import hmac

    return hmac.new(key, body, hashlib.sha256).hexdigest()


def verify(key: bytes, body: bytes, mac_hex: str) -> bool:
    import hmac

    return hmac.compare_digest(sign(key, body), mac_hex)
