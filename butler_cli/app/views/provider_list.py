"""The providers a ``--model`` can name — each one's server, the options it takes and where
its key would come from — as `butler models` and `butler config show` list them. Names of
variables only: a key's value is looked at (is it set?) and never returned."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

from butler_cli.app.config.config import Config
from butler_cli.providers import REMOTE
from butler_cli.providers.options import DEFAULTS, SUPPORTED, OptionValue
from butler_cli.store.stored_keys import key_names

#: Where a provider's key comes from now: its variable, the stored keys, nowhere yet, or it
#: needs none.
KeyFrom = Literal["env", "stored", "unset", "none"]


@dataclass(frozen=True)
class ProviderRow:
    """One provider as a listing shows it."""

    name: str
    spec: str  # what --model takes: openai:MODEL
    base_url: str | None  # the config's server, else the provider's own; None: its default
    key_env: str | None  # the variable its key is read from; None: it needs no key
    key_from: KeyFrom
    options: list[str]  # the -o options it passes on
    defaults: dict[str, OptionValue] = field(default_factory=dict)  # sent unless -o says else


def providers(config: Config, *, scripted: bool = False) -> list[ProviderRow]:
    """Every remote provider with the config's settings applied (``scripted``: the scripted
    model first), and where each one's key would be found."""
    stored = set(key_names())
    rows = []
    if scripted:
        options = sorted(SUPPORTED["scripted"])
        rows.append(ProviderRow("scripted", "scripted:PATH", None, None, "none", options))
    for kind in REMOTE:
        settings = config.providers.get(kind.name)
        env = (settings.api_key_env if settings else None) or kind.key_env
        key_from: KeyFrom
        if not env:
            key_from = "none"
        elif os.environ.get(env):
            key_from = "env"
        elif env in stored:
            key_from = "stored"
        else:
            key_from = "unset"
        rows.append(
            ProviderRow(
                kind.name,
                f"{kind.name}:MODEL",
                (settings.base_url if settings else None) or kind.base_url,
                env,
                key_from,
                sorted(SUPPORTED[kind.name]),
                dict(DEFAULTS.get(kind.name, {})),
            )
        )
    return rows
