"""`butler models`: the providers a `--model` can name, their servers and keys, and the
aliases from the config."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from butler_cli.app.config.config import load_config
from butler_cli.app.views.model_list import offered
from butler_cli.app.views.provider_list import providers as listed
from butler_cli.cli import render
from butler_cli.cli.options import BaseUrl, Json
from butler_cli.ui.text import visible


def models(
    provider: Annotated[
        str | None,
        typer.Argument(
            metavar="[PROVIDER]",
            help="List the models this provider offers (openai, anthropic, ollama, "
            "openai-compatible with --base-url), from its /models.",
            show_default=False,
        ),
    ] = None,
    base_url: BaseUrl = None,
    refresh: Annotated[
        bool, typer.Option("--refresh", help="Ask the server again, not the 10-minute cache.")
    ] = False,
    json_out: Json = False,
) -> None:
    """The providers (server, where the key comes from: env, stored or none — never the key)
    and the config's [aliases] (`--model fast` means the spec it names).

    With a PROVIDER, the models it offers, as the specs --model takes (its /models, kept
    for 10 minutes in the butler's home)."""
    if provider is not None:
        _offered(provider, base_url, refresh, json_out)
        return

    config = load_config()
    where = {"env": "{} (env)", "stored": "{} (stored)", "unset": "{} (not set)"}
    providers: list[dict[str, Any]] = [
        {
            "provider": p.name,
            "spec": p.spec,
            "base_url": p.base_url,
            "key": where[p.key_from].format(p.key_env) if p.key_env else "none needed",
            "options": p.options,
            "defaults": p.defaults,
        }
        for p in listed(config, scripted=True)
    ]
    if json_out:
        render.print_json({"providers": providers, "aliases": config.aliases})
        return
    for p in providers:
        sent = "".join(f" · {k} {v} unless -o {k}" for k, v in p["defaults"].items())
        print(f"{p['spec']:<26} server {p['base_url'] or 'default'} · key {p['key']}{sent}")
        print(f"{'':<26} options: {', '.join(p['options']) or 'none'}")
    print("`butler models PROVIDER` lists the models a provider offers.")
    if config.aliases:
        print("aliases:")
        for alias, spec in config.aliases.items():
            print(f"  {alias} = {spec}")


def _offered(provider: str, base_url: str | None, refresh: bool, json_out: bool) -> None:
    found = offered(provider, base_url, refresh)
    aliases = {a: s for a, s in load_config().aliases.items() if s.startswith(provider + ":")}
    if json_out:
        render.print_json(
            {
                "provider": found.provider,
                "server": found.server,
                "models": found.specs,
                "cached_s": round(found.age_s, 1) if found.age_s is not None else None,
                "aliases": aliases,
            }
        )
        return
    for spec in found.specs:
        named = [a for a, s in aliases.items() if s == spec]
        print(visible(spec + (f"   (alias: {', '.join(named)})" if named else "")))
    if found.age_s is not None:
        render.warn(f"listed {found.age_s:.0f} s ago by {found.server}; --refresh asks again")
