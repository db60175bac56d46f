"""The provider keys a person keeps (`butler keys …`): the names, never a value on the way out."""

from __future__ import annotations

from butler_cli.core.errors import UsageError
from butler_cli.store import stored_keys


def check_name(name: str) -> str:
    """``name`` if it may name a key (as its variable would: OPENAI_API_KEY), else a usage
    error — asked before the key is typed, so a typo costs no typing."""
    return stored_keys.check_name(name)


def store_key(name: str, value: str) -> str:
    """Keep ``value`` under ``name``; where it went, for one line of output."""
    return stored_keys.store_key(name, value)


def key_names() -> list[str]:
    """The names of every stored key."""
    return stored_keys.key_names()


def remove_key(name: str) -> None:
    """Forget the stored key ``name``; a usage error when there is none."""
    if not stored_keys.remove_key(name):
        raise UsageError(f"no stored key named {name}")


def key_value(name: str) -> str | None:
    """The secret called ``name``: its environment variable, else the stored key (a
    surface's own credential, like the Matrix channel's access token)."""
    return stored_keys.key_from(name)
