"""`butler config …`: see and set the defaults in the config file (never a key)."""

from __future__ import annotations

from typing import Annotated

import typer

from butler_cli.app.config.config import config_path, load_config
from butler_cli.app.config.config_edit import edit as edit_file
from butler_cli.app.config.config_edit import get_value, set_value, unset_value
from butler_cli.app.config.settings import KEY_HELP
from butler_cli.app.views.provider_list import providers as listed
from butler_cli.cli import render
from butler_cli.cli.options import Json, MaxRounds, Model, Policy, System

app = typer.Typer(
    name="config",
    help="Defaults kept in the config file: model, policy, max rounds, system prompt, providers.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("path")
def path() -> None:
    """Where the config file is (it may not exist yet)."""
    print(config_path())


@app.command("show")
def show(json_out: Json = False) -> None:
    """The settings in effect from the file, each plug-in section's values (from its
    variable, the file or its default), and for each provider whether its key is set (keys
    themselves are never shown)."""
    config = load_config()
    shown = {"env": "****", "stored": "**** (stored)", "unset": "not set", "none": "none needed"}
    providers = {
        p.name: {"base_url": p.base_url, "api_key_env": p.key_env, "key": shown[p.key_from]}
        for p in listed(config)
    }
    if json_out:
        render.print_json(
            {
                "path": str(config_path()),
                "settings": config.values,
                "providers": providers,
                "aliases": config.aliases,
                "sections": config.sections,
            }
        )
        return
    print(f"# {config_path()}")
    for key, value in config.values.items():
        print(f"{key} = {value!r}")
    for name, p in providers.items():
        url, env = p["base_url"] or "default", p["api_key_env"] or "-"
        print(f"[{name}] base_url={url} key from {env}: {p['key']}")
    for alias, spec in config.aliases.items():
        print(f"alias {alias} = {spec}")
    for section, values in config.sections.items():  # the plug-ins' sections, in effect
        for key, value in values.items():
            print(f"{section}.{key} = {value!r}")


@app.command("set")
def set_(
    key: Annotated[
        str,
        typer.Argument(help=KEY_HELP),
    ],
    value: Annotated[
        str, typer.Argument(help="The value. For a key, give the NAME of its environment variable.")
    ],
) -> None:
    """Set one setting in the config file (its comments are kept). A malformed file is
    refused, never rewritten; a value that would break it is refused too."""
    written = set_value(key, value)
    print(f"{key} set in {written}")


@app.command("unset")
def unset(key: Annotated[str, typer.Argument(help="The setting to remove from the file.")]) -> None:
    """Remove one setting from the config file, so the default (or the environment) applies."""
    written = unset_value(key)
    print(f"{key} removed from {written}")


@app.command("get")
def get(
    key: Annotated[str, typer.Argument(help="The setting, as for `config set`.")],
    model: Model = None,
    policy: Policy = None,
    max_rounds: MaxRounds = None,
    system: System = None,
    json_out: Json = False,
) -> None:
    """The value a command would use for KEY and where it comes from: flag, env (which
    variable), file or default. Give the flags a command would get to see them win."""
    flags = {"model": model, "policy": policy, "max_rounds": max_rounds, "system": system}
    found = get_value(key, flags)
    if json_out:
        render.print_json({"key": found.key, "value": found.value, "source": found.source})
        return
    if found.value is None:
        print(f"{found.key} is not set (no flag, variable, file entry or default)")
    else:
        print(f"{found.key} = {found.value!r}  ({found.source})")


@app.command("edit")
def edit() -> None:
    """Open the config file in $EDITOR, then check it: a broken file is reported (exit 2)
    and left as you wrote it."""
    written = edit_file()
    print(f"{written} is valid")
