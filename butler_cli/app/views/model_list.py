"""The models a provider offers (its ``/models``), cached briefly in the home
so `butler models openai` twice in a row asks the server once."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from butler_cli.app.config.config import load_config
from butler_cli.core.errors import ButlerError, UsageError
from butler_cli.providers import REMOTE, resolve_model
from butler_cli.store.files import butler_home, write_atomic

CACHE_FILE = "models-cache.json"
#: How long a provider's list is reused, in seconds.
CACHE_SECONDS = 600


@dataclass(frozen=True)
class Offered:
    """A provider's models as specs (``openai:gpt-4o``), and how old the list is."""

    provider: str
    server: str
    specs: list[str]
    age_s: float | None  # None: asked just now


def offered(provider: str, base_url: str | None = None, refresh: bool = False) -> Offered:
    """The models ``provider`` lists, from the cache when it is younger than CACHE_SECONDS."""
    kinds = {k.name: k for k in REMOTE}
    kind = kinds.get(provider)
    if kind is None:
        hint = "scripted models are files (scripted:PATH); " if provider == "scripted" else ""
        raise UsageError(f"{hint}a provider that lists models is one of: {', '.join(kinds)}")
    config = load_config()
    settings = config.providers.get(provider)
    server = base_url or (settings.base_url if settings else None) or kind.base_url or "default"
    key = f"{provider} {server}"
    path = butler_home() / CACHE_FILE
    cache = _read(path)
    entry = cache.get(key)
    now = time.time()
    if not refresh and entry is not None and 0 <= now - entry[0] < CACHE_SECONDS:
        return Offered(provider, server, entry[1], now - entry[0])
    model = resolve_model(f"{provider}:models", base_url, config.providers)
    listing = getattr(model, "offered", None)
    if not callable(listing):
        raise UsageError(f"{provider} does not list its models")
    ids: list[str] = listing()
    specs = [f"{provider}:{i}" for i in ids]
    cache[key] = (now, specs)
    try:
        body = {k: {"at": at, "models": m} for k, (at, m) in cache.items()}
        write_atomic(path, json.dumps(body, indent=1).encode("utf-8"))
    except (OSError, ButlerError):
        pass  # a cache that cannot be written only costs a request next time
    return Offered(provider, server, specs, None)


def _read(path: object) -> dict[str, tuple[float, list[str]]]:
    try:
        with open(str(path), encoding="utf-8") as fh:
            raw = json.load(fh)
    except (OSError, ValueError):
        return {}
    found: dict[str, tuple[float, list[str]]] = {}
    if isinstance(raw, dict):
        for k, v in raw.items():
            if isinstance(v, dict) and isinstance(v.get("at"), int | float):
                models = v.get("models")
                if isinstance(models, list) and all(isinstance(m, str) for m in models):
                    found[str(k)] = (float(v["at"]), models)
    return found
