"""What the config file says about one provider (cheap to import: the config reads it before the
chat's first prompt, without the provider table or any SDK)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProviderSettings:
    """Per-provider settings from the config file: a base URL and the *name* of the key's
    environment variable (never a key)."""

    base_url: str | None = None
    api_key_env: str | None = None
    api_key_file: str | None = None
    #: False: every answer is asked for whole (`--no-stream`, or `stream = false`).
    stream: bool = True
    #: False (``images = false``): the models behind it take no images; one is refused in
    #: one line before anything is sent.
    images: bool = True
