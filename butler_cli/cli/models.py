"""`butler models`: the providers a `--model` can name, their servers and keys, and the
aliases from the config."""

from __future__ import annotations

from typing import Any

from butler_cli.cli.options import Json


def models(json_out: Json = False) -> None:
    """The providers (server, where the key comes from: env, stored or none — never the key)
    and the config's [aliases] (`--model fast` means the spec it names)."""
    import os

    from butler_cli.app.config import load_config
    from butler_cli.cli import render
    from butler_cli.providers import REMOTE
    from butler_cli.providers.options import DEFAULTS, SUPPORTED
    from butler_cli.store.stored_keys import key_names

    config = load_config()
    stored = set(key_names())
    providers: list[dict[str, Any]] = [
        {
            "provider": "scripted",
            "spec": "scripted:PATH",
            "base_url": None,
            "key": "none needed",
            "options": sorted(SUPPORTED["scripted"]),
            "defaults": {},
        }
    ]
    for kind in REMOTE:
        settings = config.providers.get(kind.name)
        env = (settings.api_key_env if settings else None) or kind.key_env
        if not env:
            key = "none needed"
        elif os.environ.get(env):
            key = f"{env} (env)"
        elif env in stored:
            key = f"{env} (stored)"
        else:
            key = f"{env} (not set)"
        providers.append(
            {
                "provider": kind.name,
                "spec": f"{kind.name}:MODEL",
                "base_url": (settings.base_url if settings else None) or kind.base_url,
                "key": key,
                "options": sorted(SUPPORTED[kind.name]),
                "defaults": DEFAULTS.get(kind.name, {}),
            }
        )
    if json_out:
        render.print_json({"providers": providers, "aliases": config.aliases})
        return
    for p in providers:
        sent = "".join(f" · {k} {v} unless -o {k}" for k, v in p["defaults"].items())
        print(f"{p['spec']:<26} server {p['base_url'] or 'default'} · key {p['key']}{sent}")
    if config.aliases:
        print("aliases:")
        for alias, spec in config.aliases.items():
            print(f"  {alias} = {spec}")
