"""`butler config …`: see and set the defaults in the config file (never a key)."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from butler_cli.cli.options import Json

app = typer.Typer(
    name="config",
    help="Defaults kept in the config file: model, policy, max rounds, system prompt, providers.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("path")
def path() -> None:
    """Where the config file is (it may not exist yet)."""
    from butler_cli.app.config import config_path

    print(config_path())


@app.command("show")
def show(json_out: Json = False) -> None:
    """The settings in effect from the file, and for each provider whether its key is set
    (keys themselves are never shown)."""
    from butler_cli.app.config import config_path, load_config
    from butler_cli.cli import render
    from butler_cli.providers import REMOTE

    config = load_config()
    providers = {}
    for kind in REMOTE:
        settings = config.providers.get(kind.name)
        env = (settings.api_key_env if settings else None) or kind.key_env
        url = (settings.base_url if settings else None) or kind.base_url
        state = "****" if env and os.environ.get(env) else "not set"
        providers[kind.name] = {
            "base_url": url,
            "api_key_env": env,
            "key": state if env else "none needed",
        }
    if json_out:
        render.print_json(
            {"path": str(config_path()), "settings": config.values, "providers": providers}
        )
        return
    print(f"# {config_path()}")
    for key, value in config.values.items():
        print(f"{key} = {value!r}")
    for name, p in providers.items():
        url, env = p["base_url"] or "default", p["api_key_env"] or "-"
        print(f"[{name}] base_url={url} key from {env}: {p['key']}")


@app.command("set")
def set_(
    key: Annotated[
        str,
        typer.Argument(
            help="model, policy, max_rounds, system, providers.NAME.base_url "
            "or providers.NAME.api_key_env / api_key_file"
        ),
    ],
    value: Annotated[
        str, typer.Argument(help="The value. For a key, give the NAME of its environment variable.")
    ],
) -> None:
    """Set one setting in the config file. A malformed file is refused, never rewritten."""
    from butler_cli.app.config import set_value

    written = set_value(key, value)
    print(f"{key} set in {written}")
